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
)
# Anomalies attributed to the producer that wrote the value; the others belong to the partition.
PRODUCER_ANOMALIES = ("lost", "duplicate", "nonmonotonic_send")



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

    def label(self) -> str:
        return (f"acks={self.acks} min.insync={self.min_insync} rf={self.replication_factor} "
                f"unclean={'on' if self.unclean_election else 'off'} "
                f"idempotent={'yes' if self.idempotence else 'no'}"
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
    return {a: out[a] for a in ANOMALIES}


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


def promise_table_markdown() -> str:
    """The table the README and the report show: 'never' = promised absent, 'may' = expected."""
    head = "| configuration (crashes, pauses, network faults) | " + " | ".join(ANOMALIES) + " |"
    sep = "|---|" + "---|" * len(ANOMALIES)
    rows = [head, sep]
    for name, cfg in DOC_CASES:
        p = promises(cfg)
        rows.append(f"| {name} | " + " | ".join("never" if p[a].promised else "may" for a in ANOMALIES) + " |")
    return "\n".join(rows)
