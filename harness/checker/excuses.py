"""The settings that decide what a configuration promises, and the excuses they give: why a setting
or a fault lets acknowledged writes vanish, or lets a partition's replicas disagree. Each anomaly
class's ``promise`` (harness/checker/anomaly/) reads these."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness.clients.registry import canonical
from harness.faults import BEYOND_KAFKA_FAULTS, FAULTS
from harness.history import ClientLibrary, RunConfig
from harness.history.events import Event, Fault

RENUMBERED = ("the topic was deleted and created again under its name (recreate_topic): the new topic's offsets "
              "start again at 0, so offsets across the two go back")
SAFE = "acks=all, min.insync>=2, unclean off, leader epochs on"  # what every durability promise rests on


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
    # the kinds of ``faults`` that hit two or more brokers (a power loss of several brokers is not
    # what eligible leader replicas cover: see partition_excuse)
    on_several: frozenset[str] = field(default_factory=frozenset)
    # how many distinct brokers shut down uncleanly (kill -9, power loss) over the run: beside a power
    # loss, another's takes that replica out of the eligible leader replicas (see elr_covers)
    unclean_shutdowns: int = 0
    transactional: bool = False  # writes in transactions (a copier's producer always is)
    client: str = ""  # the client library and its version (client_label), "" where run.json names none
    # a group's: where an operator's reset moved its committed offsets during the run ("earliest",
    # "latest", "delete"), as the reset fault's events say Kafka did
    offsets_moved: frozenset[str] = field(default_factory=frozenset)
    # a transactional producer's: an operator aborted a transaction still open on its topic
    # (abort_transaction), as the fault's events say Kafka did
    txn_aborted_by_hand: bool = False
    # a topic's: an operator deleted it and created it again under its name (recreate_topic), as the
    # fault's events say Kafka did; its offsets started again at 0
    topic_recreated: bool = False

    def label(self) -> str:
        client = f"{self.client} " if self.client else ""
        return client + (f"acks={self.acks} min.insync={self.min_insync} rf={self.replication_factor} "
                f"unclean={'on' if self.unclean_election else 'off'} "
                f"idempotent={'yes' if self.idempotence else 'no'}"
                + (" txn" if self.transactional else "")
                + ("" if self.leader_epochs else " epochs=off")
                # What changes the promises must change the label, or a summary mixes their rows.
                + (" elr=on" if self.eligible_leader_replicas else "")
                + (" txn-aborted-by-hand" if self.txn_aborted_by_hand else "")
                + (" topic-recreated" if self.topic_recreated else "")
                + (" +" + ",".join(k + self._reach(k) for k in sorted(self.faults & BEYOND_KAFKA_FAULTS))
                   if self.faults & BEYOND_KAFKA_FAULTS else ""))


    def _reach(self, kind: str) -> str:
        """What the label says of a kind's reach, where the reach changes what eligible leader replicas cover."""
        if kind in self.on_several:
            return "(several brokers)"
        if self.eligible_leader_replicas and FAULTS[kind].elr_covers and self.unclean_shutdowns > 1:
            return "(beside another unclean shutdown)"
        return ""


def client_label(client: ClientLibrary | dict | None) -> str:
    """A client library and its version as a label names them: ``librdkafka 2.12.1``, ``java 3.9.1``;
    "" for none. Promises differ by client where the clients' contracts do (known_issues)."""
    if not client:
        return ""
    if isinstance(client, ClientLibrary):
        client = client.model_dump()
    name = canonical(str(client.get("name")))
    return f"{name} {str(client.get('version', '')).split(' ')[-1]}".strip()


@dataclass(frozen=True)
class Promise:
    anomaly: str
    promised: bool  # True: the count must be 0
    why: str  # for promised: what guarantees it; otherwise what permits the anomaly


def partition_excuse(c: Config) -> str | None:
    """Why replicas may disagree or uncommitted data may be read, or None if they may not."""
    if c.unclean_election:
        return "unclean.leader.election.enable=true: an out-of-sync replica may become leader"
    if not c.leader_epochs:
        return "leader epochs off (inter.broker.protocol.version < 0.11): followers truncate to their HW"
    for kind in sorted(c.faults & BEYOND_KAFKA_FAULTS):  # the fault kind's own excuse (harness/faults/registry.py)
        if not elr_covers(kind, c):
            return FAULTS[kind].excuse
    return None


def elr_covers(kind: str, c: Config) -> bool:
    """Whether eligible leader replicas (KIP-966) keep ``kind`` from losing or diverging what the
    ISR acknowledged: only where the kind hit one broker and no other broker shut down uncleanly.
    KIP-966 keeps a replica that lost data in an unclean shutdown from being elected over one that
    kept it; when several brokers lose power, a record every holder of which lost power before
    another replica copied it is on no disk at all (Kafka acknowledges before any fsync), which no
    election can bring back. And a replica killed with its data intact shut down uncleanly too:
    the controllers take it out of the eligible replicas when it registers again, and once none is
    left they elect the last known leader, whatever it lost (PartitionChangeBuilder's
    canElectLastKnownLeader, logged as an unclean election; Kafka's operations guide: "similar
    behavior prior to the 4.0 when all the replicas are offline")."""
    return (FAULTS[kind].elr_covers and c.eligible_leader_replicas and kind not in c.on_several
            and c.unclean_shutdowns <= 1)


def loss_excuse(c: Config) -> str | None:
    """Why an acknowledged write may vanish, or None if it may not."""
    if c.acks == "0":
        return "acks=0: nothing is acknowledged by the broker"
    if c.acks == "1":
        return "acks=1: the leader acknowledges before any follower has the record"
    if c.min_insync < 2:
        return f"min.insync.replicas={c.min_insync}: the ISR may shrink to the leader alone, which then acknowledges"
    if c.transactional and c.txn_aborted_by_hand:
        return ("an operator aborted an open transaction (kafka-transactions abort): its records on that partition "
                "are aborted whatever its producer then commits, which Kafka documents for an abort of a "
                "transaction that is not hanging")
    return partition_excuse(c)


@dataclass(frozen=True)
class Excuses:
    """A configuration and what it excuses: ``loss`` (acknowledged writes may vanish), ``part`` (a
    partition's replicas may disagree), ``either``, and ``order`` (a partition's offsets may go back:
    ``part``, or the topic recreated under its name). A transaction, a group's commits and a copy are
    only as durable as the writes under them, so the loss and partition excuses excuse them too."""

    config: Config
    loss: str | None
    part: str | None

    @classmethod
    def of(cls, c: Config) -> Excuses:
        return cls(c, loss_excuse(c), partition_excuse(c))

    @property
    def either(self) -> str | None:
        return self.loss or self.part

    @property
    def order(self) -> str | None:
        return self.part or (RENUMBERED if self.config.topic_recreated else None)


def weakest_during(run: RunConfig, c: Config, topic: str | None = None) -> Config:
    """A topic's Config with what an operator's config changes (``alter_config``) set during the run folded in:
    the lowest ``min.insync.replicas`` it had and unclean election if it was ever on. A write is
    judged by what the topic promised while it was made, and run.json does not say which writes
    fell in the window, so the run is judged by its weakest setting, as if the topic had it throughout."""
    for f in run.faults:
        sets = f.kind in FAULTS and FAULTS[f.kind].sets_topic_config
        if not sets or f.value is None or (f.topic is not None and f.topic != topic):
            continue
        if f.config == "min.insync.replicas" and f.value.isdigit():
            c = replace(c, min_insync=min(c.min_insync, int(f.value)))
        elif f.config == "unclean.leader.election.enable" and f.value.strip().lower() == "true":
            c = replace(c, unclean_election=True)
    return c


def offsets_reset_by_hand(events: list[Event]) -> dict[str, frozenset[str]]:
    """Per group, where an operator's resets moved its committed offsets: only the resets the fault's
    events say Kafka carried out (a group with members refuses one, and then nothing moved)."""
    moved: dict[str, set[str]] = {}
    for e in events:
        if isinstance(e, Fault) and e.kind in FAULTS and FAULTS[e.kind].moves_offsets and \
                e.offsets_reset == "reset" and e.group:
            moved.setdefault(e.group, set()).add(e.offsets or "earliest")
    return {g: frozenset(v) for g, v in moved.items()}


def transactions_aborted_by_hand(events: list[Event]) -> bool:
    """Whether an operator's abort_transaction aborted a transaction in the run: only an abort the
    fault's events say Kafka carried out (with none open, or refused, nothing was aborted)."""
    return any(isinstance(e, Fault) and e.kind in FAULTS and FAULTS[e.kind].aborts_transactions and
               e.transaction_aborted == "aborted" for e in events)


@dataclass(frozen=True)
class Recreation:
    """A topic an operator deleted and created again (recreate_topic): when the deletion was asked
    and when the new topic served; ``created_ms`` None when Kafka refused or had not finished."""

    deleted_ms: int
    created_ms: int | None


def topics_recreated(events: list[Event]) -> dict[str, list[Recreation]]:
    """Per topic, its recreations in the run, in time order: every recreate_topic whose deletion was
    asked (a refused one may have deleted the topic all the same: ZooKeeper mode finishes a deletion
    once every replica's broker is back)."""
    out: dict[str, list[Recreation]] = {}
    for e in events:
        if isinstance(e, Fault) and e.kind in FAULTS and FAULTS[e.kind].recreates_topic and e.topic and \
                e.deleted_ms is not None:
            out.setdefault(e.topic, []).append(
                Recreation(e.deleted_ms, e.created_ms if e.recreated == "recreated" else None))
    return {t: sorted(rs, key=lambda r: r.deleted_ms) for t, rs in out.items()}
