"""Protocol coverage: the states of Kafka's replication, controller and group protocols a run
reached, from its own events (the cluster's samples every 250 ms, the groups' rebalances and
refused commits, the faults' accounts). A verdict of "0 lost" means more after a run that took a
partition's ISR down to its leader than after one whose faults never moved a leader: the coverage
says which it was, in verdict.json, the terminal and the report, and is what a hunt can steer by.

One function per state, its docstring the definition; each returns the times (ms) the run entered
the state, so the count is how often it did. States are judged from samples, so a state entered and
left between two samples is not seen: coverage is a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from harness.faults import CUTS_ITS_CLIENTS, FAULTS, TAKES_THE_LEADER
from harness.history import RunConfig
from harness.history.events import CommitRefused, Event, Fault, Formation, PartitionSample, Rebalance, State

if TYPE_CHECKING:  # the brokers' lines are read by the judge; the report loads this module's definitions alone
    from harness.checker.replicas_logged import LoggedLeadership, LoggedTruncation


@dataclass(frozen=True)
class Logged:
    """What the run's own logs say that its events do not: the brokers' truncations and new leaders
    (replicas_logged), the clients' producer epoch bumps (clients_logged)."""

    truncations: list[LoggedTruncation] = field(default_factory=list)
    leaderships: list[LoggedLeadership] = field(default_factory=list)
    epoch_bumps: list[int] = field(default_factory=list)
    # the groups' acknowledged commits (offsets.parquet's live rows): (group, partition, when)
    commits: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Sampled:
    """What the states are read from: the cluster's samples in time order, the groups' events, the
    faults, and each partition's min.insync.replicas."""

    states: list[State]
    rebalances: list[Rebalance]
    refused: list[CommitRefused]
    faults: list[Fault]
    min_insync: int
    elections: list[dict]  # the checker's election record (judge.elections' "list")
    formations: list[Formation] = field(default_factory=list)
    logged: Logged = field(default_factory=lambda: Logged())
    shared: bool = False  # share groups read the sampled topic

    @classmethod
    def of(cls, events: list[Event], min_insync: int, elections: list[dict], logged: Logged | None = None,
           shared: bool = False) -> Sampled:
        states = sorted((e for e in events if isinstance(e, State) and e.error is None), key=lambda e: e.ts_ms)
        return cls(states, [e for e in events if isinstance(e, Rebalance)],
                   [e for e in events if isinstance(e, CommitRefused)], [e for e in events if isinstance(e, Fault)],
                   min_insync, elections, [e for e in events if isinstance(e, Formation)], logged or Logged(), shared)

    @cached_property
    def partition_steps(self) -> list[tuple[int, PartitionSample | None, PartitionSample]]:
        """(time, the partition's sample before or None, its sample now) for every partition sample."""
        last: dict[int, PartitionSample] = {}
        out = []
        for s in self.states:
            for p in s.partitions or []:
                out.append((s.ts_ms, last.get(p.partition), p))
                last[p.partition] = p
        return out


def _entered(s: Sampled, now: Callable[[PartitionSample], bool]) -> list[int]:
    """The times a partition's samples went from not ``now`` (or none) to ``now``."""
    return [ts for ts, before, p in s.partition_steps if now(p) and (before is None or not now(before))]


def isr_leader_alone(s: Sampled) -> list[int]:
    """isr_leader_alone: a partition of more than one replica whose ISR is its leader alone: the
    leader acknowledges acks=all writes by itself wherever min.insync.replicas allows it."""
    return _entered(s, lambda p: len(p.replicas) > 1 and p.leader >= 0 and p.isr == [p.leader])


def below_min_insync(s: Sampled) -> list[int]:
    """below_min_insync: a partition's ISR smaller than its min.insync.replicas: acks=all writes are
    refused (NOT_ENOUGH_REPLICAS) until it grows back."""
    return _entered(s, lambda p: p.leader >= 0 and len(p.isr) < s.min_insync)


def partition_offline(s: Sampled) -> list[int]:
    """partition_offline: a partition with no leader: no replica may lead (every ISR member down, or
    eligible leader replicas waiting for the last one)."""
    return _entered(s, lambda p: p.leader < 0)


def leader_change(s: Sampled) -> list[int]:
    """leader_change: a partition led by another broker than at its last led sample (through an
    offline spell or not)."""
    last_leader: dict[int, int] = {}
    out = []
    for ts, _, p in s.partition_steps:
        if p.leader >= 0:
            if p.partition in last_leader and last_leader[p.partition] != p.leader:
                out.append(ts)
            last_leader[p.partition] = p.leader
    return out


def share_partition_leader_change(s: Sampled) -> list[int]:
    """share_partition_leader_change: a leader change of a partition a share group reads: its
    share-partition (KIP-932), the records it has handed out and their acquisition locks, moves to
    the new leader, which rebuilds them from the share-state coordinator's record."""
    return leader_change(s) if s.shared else []


def unclean_election(s: Sampled) -> list[int]:
    """unclean_election: a leader elected from outside the ISR, as the checker's election record
    tells elections apart (verdict.json's ``elections``: the ISR before, the replicas alive, the
    assignment's order, and where the controllers' logs name the topic, Kafka's own word: an
    election it logged as unclean, KIP-966's last known leader elected back among them)."""
    return [e["ts_ms"] for e in s.elections if e.get("kind") == "unclean"]


def elr_election(s: Sampled) -> list[int]:
    """elr_election: a leader elected from the eligible leader replicas (KIP-966) when no ISR member
    could lead, as the controller logged it (the samples do not show the ELR)."""
    return [e["ts_ms"] for e in s.elections if e.get("kind") == "elr"]


def controller_failover(s: Sampled) -> list[int]:
    """controller_failover: the cluster's controller (ZooKeeper mode: the broker that is; KRaft: the
    active controller) another node than at the last sample that named one."""
    last: int | None = None
    out = []
    for e in s.states:
        if e.controller is not None and e.controller >= 0:
            if last is not None and e.controller != last:
                out.append(e.ts_ms)
            last = e.controller
    return out


QUORUM_LOSS_MIN_MS = 1000  # a quorum without a majority for less than this is a probe that timed out


def quorum_no_majority(s: Sampled) -> list[int]:
    """quorum_no_majority: the coordination quorum (KRaft controllers, ZooKeeper servers) without a
    majority of its voters in touch, in two samples or more in a row spanning at least a second (to
    the next sample with a majority, or the last): metadata cannot change. Shorter is a probe that
    timed out on a loaded machine (the leader not answering within 0.5 s twice, under disk faults on
    the brokers, none on the quorum) as often as a quorum that failed."""
    out: list[int] = []
    run: list[int] = []
    for e in [x for x in s.states if x.quorum is not None] + [None]:
        if e is not None and not e.quorum.majority:
            run.append(e.ts_ms)
            continue
        until = e.ts_ms if e is not None else (run[-1] if run else 0)
        if len(run) >= 2 and until - run[0] >= QUORUM_LOSS_MIN_MS:
            out.append(run[0])
        run = []
    return out


def group_rebalance(s: Sampled) -> list[int]:
    """group_rebalance: a group's generation its members were first assigned partitions in."""
    first: dict[tuple[str, int], int] = {}
    for e in s.rebalances:
        if e.kind == "assign":
            first[(e.group, e.generation)] = min(e.ts_ms, first.get((e.group, e.generation), e.ts_ms))
    return sorted(first.values())


def partitions_lost(s: Sampled) -> list[int]:
    """partitions_lost: a member told its partitions were lost, not revoked (its session expired or
    it was fenced): its commits in flight are refused."""
    return [e.ts_ms for e in s.rebalances if e.kind == "lost"]


def commit_across_rebalance(s: Sampled) -> list[int]:
    """commit_across_rebalance: a group's commit of a partition acknowledged after a member gave the
    partition up (revoked or lost) and before any member was assigned it again: a commit in flight
    across the rebalance, which a coordinator takes or refuses by the generation it carries, and
    which an asynchronous commit retried behind newer ones can move backwards."""
    changes = sorted((e.ts_ms, e.group, p, e.kind) for e in s.rebalances for p in e.partitions)
    out = []
    for group, partition, ts in s.logged.commits:
        given_up = None  # whether, at ``ts``, the partition's last change was a member giving it up
        for at, g, p, kind in changes:
            if at > ts:
                break
            if g == group and p == partition:
                given_up = kind != "assign"
        if given_up:
            out.append(ts)
    return out


def commit_refused(s: Sampled) -> list[int]:
    """commit_refused: a member's commit the coordinator refused (a stale generation or member epoch,
    a coordinator moving): what keeps a zombie's offsets out."""
    return [e.ts_ms for e in s.refused]


def operator_action(s: Sampled) -> list[int]:
    """operator_action: an operator's action (an election, a reassignment, a config change, added
    partitions, an offsets reset, a decommission) carried out while the cluster served."""
    return [e.start_ms for e in s.faults if e.kind in FAULTS and FAULTS[e.kind].operation]


def coordinator_lost(s: Sampled) -> list[int]:
    """coordinator_lost: a group's, a transaction's or a share group's coordinator stopped serving its
    clients by a fault on its broker that takes its leadership away (killed, restarted, frozen,
    isolated, cut from the quorum) or cuts its clients' connections to it: its group or transactions
    move to another coordinator or wait for it, and what its clients had in flight to it (commits
    among them) ends with the connection and is sent again."""
    return [e.start_ms for e in s.faults if loses_a_coordinator(e.kind, e.target)]


def loses_a_coordinator(kind: str, target: str) -> bool:
    """Whether a fault of ``kind`` aimed at ``target`` takes a coordinator from its clients."""
    coordinators = ("group_coordinator", "txn_coordinator", "share_coordinator")
    return (target.startswith(coordinators) and kind in FAULTS
            and bool(FAULTS[kind].effects & {TAKES_THE_LEADER, CUTS_ITS_CLIENTS}))


def unflushed_data_lost(s: Sampled) -> list[int]:
    """unflushed_data_lost: a node lost power and with it what its files held past what was synced
    (a power loss that cut or removed at least one file): a replica returns with less than it
    acknowledged, as after an unclean shutdown."""
    return [e.start_ms for e in s.faults if any((e.power_loss or {}).values())]


def disk_failing(s: Sampled) -> list[int]:
    """disk_failing: a node's log directory failed, erred, filled up or slowed down under a fault
    (its replicas there go offline, or their writes stall)."""
    return [e.start_ms for e in s.faults if e.kind in FAULTS and FAULTS[e.kind].disk]


def topic_recreated(s: Sampled) -> list[int]:
    """topic_recreated: an operator deleted the run's topic and created it again under its name (as
    the fault's account says Kafka did): a new topic, offsets from 0, every old replica to be deleted."""
    return [e.start_ms for e in s.faults if e.kind in FAULTS and FAULTS[e.kind].recreates_topic
            and e.recreated == "recreated"]


def answer_lost(s: Sampled) -> list[int]:
    """answer_lost: a request reached the side it was for and was handled, and its answer was lost with
    its connection (a lose_answers fault that lost at least one): the asker retries what already
    happened (a marker written twice, a commit or an append it was not told of)."""
    return [e.start_ms for e in s.faults if (e.answers_lost or 0) > 0]


def formation_leader_lost(s: Sampled) -> list[int]:
    """formation_leader_lost: the coordination quorum's first leader killed, stopped or frozen while the
    cluster formed (its brokers registering, its first metadata written), and the cluster formed
    with every broker registered all the same (the run's ``formation`` event)."""
    return [e.ts_ms for e in s.formations]


def replica_truncated(s: Sampled) -> list[int]:
    """replica_truncated: a replica removed records from its log (its broker's own `Truncating to
    offset N` line for the run's topic): a follower dropped what its new leader did not have, records
    its old leader had acknowledged alone among them, or a replica went back to the high watermark it
    had checkpointed."""
    return [t.truncation.ts_ms for t in s.logged.truncations]


def truncated_below_hw(s: Sampled) -> list[int]:
    """truncated_below_hw: a replica truncated below the highest high watermark a live reader had seen
    on that partition before: committed records removed from a replica, which its election would
    lose (with leader epochs off, a restarted follower back at its checkpointed high watermark:
    KIP-101's case). Not judged where a fault moved the brokers' clocks."""
    return [t.truncation.ts_ms for t in s.logged.truncations if t.below_hw]


def producer_epoch_bumped(s: Sampled) -> list[int]:
    """producer_epoch_bumped: a producer took a new epoch of its producer id, as its library's own
    log says (harness/clients/registry.py, ``epoch_bumped``: librdkafka and the Java client): an
    idempotent producer's bump after a failure, its sequence numbers started again, or a
    transactional producer's new instance fencing the old."""
    return list(s.logged.epoch_bumps)


def leader_epoch_bumped(s: Sampled) -> list[int]:
    """leader_epoch_bumped: a replica started leading its partition at a leader epoch above the
    first (its broker's own `starts at leader epoch` line): every election, clean or not, the same
    leader elected again after losing the lead among them, which samples 250 ms apart can miss, and
    in ZooKeeper mode a change the controller made to the ISR under the same leader (a broker's
    shutdown or death taking it out of the ISR), for which the controller bumps the leader epoch too."""
    seen: set[tuple[str, int, int]] = set()
    out = []
    for lead in s.logged.leaderships:
        if lead.epoch > 0 and (lead.topic, lead.partition, lead.epoch) not in seen:
            seen.add((lead.topic, lead.partition, lead.epoch))
            out.append(lead.ts_ms)
    return out


def successor_lagging(s: Sampled) -> list[int]:
    """successor_lagging: a replica started leading without records a producer had already been
    acknowledged for on its partition (its log ended at or below the highest acknowledged offset):
    what acks=1 acknowledged on the old leader alone, or an unclean election's loss. Not judged
    where a fault moved the brokers' clocks."""
    return [lead.ts_ms for lead in s.logged.leaderships if lead.lagging]


STATES: tuple[Callable[[Sampled], list[int]], ...] = (
    isr_leader_alone, below_min_insync, partition_offline, leader_change, share_partition_leader_change,
    unclean_election, elr_election, controller_failover, quorum_no_majority, group_rebalance, partitions_lost,
    commit_across_rebalance, commit_refused, operator_action, coordinator_lost, unflushed_data_lost, disk_failing,
    topic_recreated, answer_lost, formation_leader_lost, replica_truncated, truncated_below_hw, producer_epoch_bumped,
    leader_epoch_bumped, successor_lagging,
)
DEFINITIONS: dict[str, str] = {f.__name__: " ".join((f.__doc__ or "").split()) for f in STATES}


def _takes_the_leader_of(role: str, by_operation: bool) -> Callable[[str, str], bool]:
    """A fault on ``role`` that takes its broker's leadership away (an operator's election too,
    where ``by_operation``: it moves a partition's leader, not a controller)."""
    return lambda kind, target: (target == role and kind in FAULTS and TAKES_THE_LEADER in FAULTS[kind].effects
                                 and (by_operation or not FAULTS[kind].operation))


def _kind_is(flag: str) -> Callable[[str, str], bool]:
    return lambda kind, target: kind in FAULTS and bool(getattr(FAULTS[kind], flag))


# The faults meant to take a run into a state, by kind and target: for the states whose definition
# counts faults, the faults it counts (an answer-losing fault still has to lose one, a recreation
# to be carried out); for a leader change and a controller failover, a fault that takes its
# broker's leadership away aimed at the partition's leader or at the controller. A hunt aims a share
# of its fresh draws at the states on its goal's way (harness/hunt/coverage_guide.py); the other
# states are reached only as the cluster answers a schedule (an ISR shrinking, a replica truncating).
# The states a fault aimed at them enters only by taking its broker's leadership away: a silence
# aimed at one lasts the broker's session (harness/hunt/space.py, ``takes_the_leader``).
ENTERED_BY_A_LEADER_TAKEN = frozenset({"leader_change", "controller_failover"})
AIMED_BY: dict[str, Callable[[str, str], bool]] = {
    "leader_change": _takes_the_leader_of("leader", by_operation=True),
    "controller_failover": _takes_the_leader_of("controller", by_operation=False),
    "coordinator_lost": loses_a_coordinator,
    "operator_action": _kind_is("operation"),
    "disk_failing": _kind_is("disk"),
    "topic_recreated": _kind_is("recreates_topic"),
    "answer_lost": _kind_is("loses_answers"),
}


def run_min_insync(run: RunConfig) -> int:
    """The run's topic's min.insync.replicas (its own config, else the brokers', else Kafka's 1)."""
    topics = run.topic_list()
    own = topics[0].config.get("min.insync.replicas") if topics else None
    value = own if own is not None else run.broker_config.get("min.insync.replicas", 1)
    return int(value)


def coverage(run: RunConfig, events: list[Event], elections: list[dict],
             logged: Logged | None = None) -> dict[str, int]:
    """How often the run entered each protocol state (STATES' order; 0: never), given the checker's
    election record of the same events and what the run's own logs say (``logged``)."""
    s = Sampled.of(events, run_min_insync(run), elections, logged, shared=bool(run.share_groups))
    return {f.__name__: len(f(s)) for f in STATES}
