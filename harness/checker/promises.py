"""What each configuration promises, under which faults: the one promise table.

The verdict of a run is "fail" only when an anomaly the configuration promises
never to show was counted. Everything else that is counted is reported as
expected, with the reason (the setting or the fault that permits it). The
README and the HTML report render this same table (``promise_table_markdown``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.faults import BEYOND_KAFKA_FAULTS

ANOMALIES = (
    "lost",
    "divergence",
    "uncommitted_read",
    "duplicate",
    "nonmonotonic_send",
    "nonmonotonic_poll",
    "phantom",
    # v2: transactions, copiers and groups (0 on histories without their files and columns, except
    # poll_skip, which every consumer gets)
    "aborted_read",
    "torn_txn",
    "precommitted_read",
    "poll_skip",
    "group_unseen",
    "offset_regression",
    "eos_duplicate",
    "eos_lost",
)
V1_ANOMALIES = ANOMALIES[:7]
# Anomalies of a group's commits, attributed to the group and judged by its commit mode.
GROUP_ANOMALIES = ("group_unseen", "offset_regression")
# Anomalies attributed to the producer that wrote the value (a copier's to its producer); the others
# belong to the partition.
PRODUCER_ANOMALIES = ("lost", "duplicate", "nonmonotonic_send", "torn_txn", "eos_duplicate", "eos_lost")



@dataclass(frozen=True)
class Config:
    """The settings that decide the promises, for one producer's writes to one topic."""

    acks: str = "all"
    idempotence: bool = False
    min_insync: int = 1
    replication_factor: int = 3
    unclean_election: bool = False
    leader_epochs: bool = True  # inter.broker.protocol.version >= 0.11
    eligible_leader_replicas: bool = False  # KIP-966 (Kafka 4.x with ELR enabled)
    faults: frozenset[str] = field(default_factory=frozenset)  # fault kinds applied in the run
    transactional: bool = False  # writes in transactions (a copier's producer always is)

    def label(self) -> str:
        return (f"acks={self.acks} min.insync={self.min_insync} rf={self.replication_factor} "
                f"unclean={'on' if self.unclean_election else 'off'} "
                f"idempotent={'yes' if self.idempotence else 'no'}"
                + (" txn" if self.transactional else "")
                + ("" if self.leader_epochs else " epochs=off")
                # What changes the promises must change the label, or a summary mixes their rows.
                + (" elr=on" if self.eligible_leader_replicas else "")
                + (" +" + ",".join(sorted(self.faults & BEYOND_KAFKA_FAULTS)) if self.faults & BEYOND_KAFKA_FAULTS
                   else ""))


@dataclass(frozen=True)
class Promise:
    anomaly: str
    promised: bool  # True: the count must be 0
    why: str  # for promised: what guarantees it; otherwise what permits the anomaly


def _excuse_partition_level(c: Config) -> str | None:
    """Why replicas may disagree or uncommitted data may be read, or None if they may not."""
    if c.unclean_election:
        return "unclean.leader.election.enable=true: an out-of-sync replica may become leader"
    if not c.leader_epochs:
        return "leader epochs off (inter.broker.protocol.version < 0.11): followers truncate to their HW"
    if "power_loss" in c.faults and not c.eligible_leader_replicas:
        return "power loss drops unflushed data; before eligible leader replicas (KIP-966) the last ISR member may lead"
    return None


def _excuse_loss(c: Config) -> str | None:
    if c.acks == "0":
        return "acks=0: nothing is acknowledged by the broker"
    if c.acks == "1":
        return "acks=1: the leader acknowledges before any follower has the record"
    if c.min_insync < 2:
        return f"min.insync.replicas={c.min_insync}: the ISR may shrink to the leader alone, which then acknowledges"
    return _excuse_partition_level(c)


def promises(c: Config) -> dict[str, Promise]:
    """The promise table, one rule per anomaly."""
    loss = _excuse_loss(c)
    part = _excuse_partition_level(c)
    out = {
        "lost": Promise("lost", loss is None, loss or "acks=all, min.insync>=2, unclean off, leader epochs on"),
        "divergence": Promise("divergence", part is None, part or "unclean off and leader epochs on"),
        "uncommitted_read": Promise("uncommitted_read", part is None,
                                    part or "consumers only see records below the HW, which every ISR member has"),
        "nonmonotonic_poll": Promise("nonmonotonic_poll", part is None,
                                     part or "a consumer's position moves back only if committed data vanished"),
        "phantom": Promise("phantom", True, "no configuration may invent a record"),
    }
    if not c.idempotence:
        out["duplicate"] = Promise("duplicate", False, "not idempotent: a retried send can be written twice")
        out["nonmonotonic_send"] = Promise("nonmonotonic_send", False,
                                           "not idempotent: retries with several requests in flight can reorder")
    elif loss is not None:
        out["duplicate"] = Promise("duplicate", part is None,
                                   part or "idempotent producer: the broker drops retried batches")
        out["nonmonotonic_send"] = Promise("nonmonotonic_send", False,
                                           f"a lost acknowledged write frees its offset for later sends ({loss})")
    else:
        out["duplicate"] = Promise("duplicate", True, "idempotent producer: the broker drops retried batches")
        out["nonmonotonic_send"] = Promise("nonmonotonic_send", True,
                                           "idempotent producer: sequence numbers keep order within a partition")
    out |= _v2_promises(loss, part)
    return {a: out[a] for a in ANOMALIES}


def _v2_promises(loss: str | None, part: str | None) -> dict[str, Promise]:
    """Transactions (KIP-98), the exactly-once copier and group commits: Kafka promises each of these
    wherever it keeps what it acknowledged. A transaction is only as durable as its writes, so the
    excuses for loss and for a partition's replicas disagreeing excuse these too."""
    either = loss or part
    safe = "acks=all, min.insync>=2, unclean off, leader epochs on"
    return {
        "aborted_read": Promise("aborted_read", part is None,
                                part or "read_committed readers stop at the LSO and drop aborted transactions"),
        "torn_txn": Promise("torn_txn", either is None,
                            either or f"{safe}: the markers commit every partition of a transaction together"),
        "precommitted_read": Promise("precommitted_read", part is None,
                                     part or "the LSO passes a transaction only after its commit marker"),
        "poll_skip": Promise("poll_skip", part is None,
                             part or "a consumer's position only passes records it returned"),
        "group_unseen": Promise("group_unseen", either is None,
                                either or f"{safe}: a group commits only what its members returned"),
        "offset_regression": Promise("offset_regression", part is None,
                                     part or "a group's committed offsets only move forward"),
        "eos_duplicate": Promise("eos_duplicate", either is None,
                                 either or f"{safe}: a copy and its input offsets commit in one transaction"),
        "eos_lost": Promise("eos_lost", either is None,
                            either or f"{safe}: a copy and its input offsets commit in one transaction"),
    }


def group_promises(topic: Config, commit: str) -> dict[str, Promise]:
    """What a group may show, by how it commits: after processing (sync, async, or in a copier's
    transaction) Kafka's generation and member-epoch fencing keep a commit to what its member
    returned; auto-commit commits what poll returned whether or not it was processed. The topic's
    excuses for loss excuse the group's unseen records too (a record can vanish below a commit)."""
    either = _excuse_loss(topic) or _excuse_partition_level(topic)
    part = _excuse_partition_level(topic)
    if commit == "auto":
        unseen = Promise("group_unseen", False, "auto-commit commits what poll returned, processed or not: a "
                         "member that dies between a poll and its processing loses those records for the group")
    else:
        unseen = Promise("group_unseen", either is None, either or f"commit={commit} after processing: a group "
                         "commits only what its members returned, and a stale member's commit is refused")
    return {"group_unseen": unseen,
            "offset_regression": Promise("offset_regression", part is None, part or "the coordinator refuses "
                                         "commits from a stale generation or member epoch, so offsets only move "
                                         "forward")}


GROUP_DOC_CASES = [("manual commits after processing (sync or async), classic or consumer protocol", "sync"),
                   ("auto-commit, classic or consumer protocol", "auto")]


def group_table_markdown() -> str:
    """The group rows for a safe topic (acks=all, min.insync>=2, unclean off)."""
    rows = ["| group (safe topic; crashes, pauses, network faults, member churn) | " + " | ".join(GROUP_ANOMALIES)
            + " |", "|---|" + "---|" * len(GROUP_ANOMALIES)]
    for name, commit in GROUP_DOC_CASES:
        p = group_promises(Config("all", True, 2), commit)
        rows.append(f"| {name} | " + " | ".join("never" if p[a].promised else "may" for a in GROUP_ANOMALIES) + " |")
    return "\n".join(rows)


# Rows of the table as documented: (configuration, faults) -> anomalies promised absent.
DOC_CASES: list[tuple[str, Config]] = [
    ("acks=all, min.insync>=2, unclean off, idempotent", Config("all", True, 2)),
    ("acks=all, min.insync>=2, unclean off", Config("all", False, 2)),
    ("acks=all, min.insync=1", Config("all", False, 1)),
    ("acks=1", Config("1", False, 2)),
    ("acks=0", Config("0", False, 2)),
    ("unclean election on", Config("all", True, 2, unclean_election=True)),
    ("leader epochs off (old IBP)", Config("all", False, 1, leader_epochs=False)),
    ("acks=all, min.insync>=2 + power loss, no ELR", Config("all", True, 2, faults=frozenset({"power_loss"}))),
    ("acks=all, min.insync>=2 + power loss, ELR on",
     Config("all", True, 2, eligible_leader_replicas=True, faults=frozenset({"power_loss"}))),
]


# The transactional rows, for the v2 anomalies (a transactional producer is idempotent with acks=all).
DOC_CASES_V2: list[tuple[str, Config]] = [
    ("transactional, min.insync>=2, unclean off (and the copier)", Config("all", True, 2, transactional=True)),
    ("transactional, min.insync=1", Config("all", True, 1, transactional=True)),
    ("transactional, unclean election on", Config("all", True, 2, unclean_election=True, transactional=True)),
    ("transactional + power loss, no ELR",
     Config("all", True, 2, faults=frozenset({"power_loss"}), transactional=True)),
]


def _table(cases: list[tuple[str, Config]], anomalies: tuple[str, ...]) -> list[str]:
    rows = ["| configuration (crashes, pauses, network faults) | " + " | ".join(anomalies) + " |",
            "|---|" + "---|" * len(anomalies)]
    for name, cfg in cases:
        p = promises(cfg)
        rows.append(f"| {name} | " + " | ".join("never" if p[a].promised else "may" for a in anomalies) + " |")
    return rows


def promise_table_markdown() -> str:
    """The tables the README and the report show: 'never' = promised absent, 'may' = expected. The
    replication anomalies for every configuration, then the v2 ones for transactional writers."""
    v2 = tuple(a for a in ANOMALIES if a not in V1_ANOMALIES)
    return "\n".join([*_table(DOC_CASES, V1_ANOMALIES), "", *_table(DOC_CASES_V2, v2), "", group_table_markdown()])
