"""Every fault kind in one place: its links, how it is applied and healed, whether Kafka promises to
survive it, and its colour in the report; and targets, parsed once into a typed value.

Scenario validation, the schedule, the nemesis, the promise table and the report all read this
registry, so a new fault kind is one entry in FAULTS (with its apply function) and nothing else.
Apply and heal act on one broker of a fault; a network fault's heal is always the same (its own
toxics come off its links), so only process faults name a heal.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Protocol

from pydantic import BeforeValidator, ConfigDict, model_validator

from harness import mechanisms
from harness.faults.settings import SETTINGS, FaultSettings
from harness.faults.triggers import Trigger
from harness.mechanisms import BANDWIDTH_TOXIC, CUT_TOXIC, HOLD_TOXIC, KAFKA_APIS, LATENCY_TOXIC
from harness.versions import KAFKA_VERSIONS

if TYPE_CHECKING:
    from harness.cluster import KafkaCluster


TARGET_HELP = ("leader | follower | follower:K | followers | controller | controller:K | zookeeper | "
               "zookeeper:K | controller_zookeeper | quorum_majority | random | broker:N | rack:NAME | "
               "txn_coordinator | txn_coordinator:CLIENT | group_coordinator | group_coordinator:GROUP | "
               "share_coordinator | share_coordinator:GROUP | client:CLIENT")
COORDINATOR_ROLES = ("txn_coordinator", "group_coordinator", "share_coordinator")
PARTITION_ROLES = ("leader", "follower", "followers")
# Roles that name coordination nodes: "controller" alone is Kafka's controller (in ZooKeeper mode a
# broker), "controller:K" a KRaft controller, "zookeeper" the ensemble's leader or server K.
QUORUM_ROLES = ("controller", "zookeeper", "controller_zookeeper", "quorum_majority")
# What each spelling of TARGET_HELP means, for the fault reference (docs/faults.md).
TARGET_DOCS = (
    ("leader", "the partition's leader"),
    ("follower, follower:K", "the partition's K-th follower (alone: the first) in AR order, ISR members first"),
    ("followers", "every follower of the partition"),
    ("controller", "ZooKeeper mode: the broker that is Kafka's controller; KRaft: the active controller"),
    ("controller:K", "KRaft controller K; past `controllers`, a spare that add_controller adds"),
    ("zookeeper", "the ZooKeeper ensemble's leader"),
    ("zookeeper:K", "ZooKeeper server K"),
    ("controller_zookeeper", "ZooKeeper mode: the ZooKeeper server the controller's session is connected to (read "
     "from the controller's own connections when the fault fires)"),
    ("quorum_majority", "enough voters to lose the majority, followers first (the leader is left without one)"),
    ("random", "a broker drawn at plan time from the seed"),
    ("broker:N", "broker N"),
    ("rack:NAME", "every broker of rack NAME"),
    ("txn_coordinator, txn_coordinator:CLIENT", "the leader of the `__transaction_state` partition that client's "
     "`transactional.id` maps to (alone: the first transactional client's)"),
    ("group_coordinator, group_coordinator:GROUP", "the leader of the `__consumer_offsets` partition the group maps "
     "to (alone: the first group's)"),
    ("share_coordinator, share_coordinator:GROUP", "the leader of the `__share_group_state` partition the share "
     "group's share-partition of the fault's partition maps to (alone: the first share group's)"),
    ("client:CLIENT", "a producer instance, the copier or a group member, by the name the run gives it: client "
     "faults take this target and no other, and no other fault takes it"),
)
TARGET_NOTE = ("A role is looked up when the fault fires, not when it is planned (only `random` is drawn at plan "
               "time), and the nodes it named are logged with the fault (`fault_start` in events.jsonl). `partition` "
               "says whose leader and followers the partition roles mean.")
# What `stream` does, for the fault reference (docs/faults.md).
STREAM_HELP = ("one direction only: `upstream` is what the connecting side sends (a follower's fetch requests), "
               "`downstream` what it receives (the leader's fetch responses, which carry the high watermark); "
               "default both")


@dataclass(frozen=True)
class Target:
    """Where a fault is aimed: a role resolved when it fires (leader, follower K of the partition,
    every follower, the controller), a broker chosen at plan time (random), a broker, or a rack."""

    # leader | follower | followers | controller | zookeeper | quorum_majority | random | broker | rack |
    # *_coordinator | client
    role: str
    number: int = 0  # follower K (1 = the first), broker N, KRaft controller K or ZooKeeper server K (0: the leader)
    rack: str = ""
    client: str = ""  # txn_coordinator's client, group_coordinator's or share_coordinator's group ("" = the first)

    @classmethod
    def parse(cls, text: str) -> Target:
        """The target a scenario spells, or ValueError naming what is allowed."""
        head, _, tail = text.partition(":")
        if not tail and head in ("leader", "follower", "followers", "controller", "zookeeper", "controller_zookeeper",
                                 "quorum_majority", "random", *COORDINATOR_ROLES):
            return cls(head, 1 if head == "follower" else 0)
        if head in ("follower", "broker", "controller", "zookeeper") and tail.isdigit() and int(tail) >= 1:
            return cls(head, int(tail))
        if head == "rack" and tail:
            return cls("rack", rack=tail)
        if head in (*COORDINATOR_ROLES, "client") and tail:
            return cls(head, client=tail)
        raise ValueError(f"target {text!r} is not a target (allowed: {TARGET_HELP})")

    def __str__(self) -> str:
        if self.role == "rack":
            return f"rack:{self.rack}"
        if self.client:
            return f"{self.role}:{self.client}"
        if self.role == "broker" or (self.role == "follower" and self.number != 1) or \
                (self.role in QUORUM_ROLES and self.number):
            return f"{self.role}:{self.number}"
        return self.role

    @property
    def of_quorum(self) -> bool:
        """Whether the target is resolved against the coordination layer (it may name a broker: the
        ZooKeeper-mode controller)."""
        return self.role in QUORUM_ROLES

    def on_coordination(self, mode: str) -> bool:
        """Whether the target names coordination nodes (KRaft controllers, ZooKeeper servers) in ``mode``."""
        return self.role in ("zookeeper", "controller_zookeeper", "quorum_majority") or (
            self.role == "controller" and (self.number > 0 or mode == "kraft"))

    @property
    def of_partition(self) -> bool:
        """Whether the target is a role in one partition (leader or follower), named in reports."""
        return self.role in PARTITION_ROLES


TAKES_THE_LEADER = "takes the leader"  # a fault effect: its broker stops leading
# A fault effect: its broker answers nothing but runs on, so it leads until its session ends (ZooKeeper's,
# or its heartbeats' with the KRaft controllers): shorter, or silent only towards it, it keeps leading.
SILENCES_ITS_BROKER = "silences its broker"
HOLDS_FETCHES = "holds fetches"  # a fault effect: a follower falls behind
CUTS_ITS_CLIENTS = "cuts its clients"  # a fault effect: clients' connections to its broker break


class DrawBounds(Protocol):
    """What a hunt's bounds give a kind's ``draw`` (the scenario's ``[hunt]`` table)."""

    latency_ms: tuple[int, int]


class GeneratorBounds(Protocol):
    """What a scenario's ``[generator]`` gives a kind's ``generate``."""

    offset_s: float


def _draw_offset(rng: random.Random, bounds: DrawBounds) -> dict:
    """10 s to 9 days, forward or back: timeouts first, then retention (7 days)."""
    return {"offset_s": round(rng.choice([-1, 1]) * 10 ** rng.uniform(1, 5.9))}


def _draw_op(rng: random.Random, bounds: DrawBounds) -> dict:
    return {"op": rng.choice(mechanisms.DISK_OPS)}


def _draw_latency(rng: random.Random, bounds: DrawBounds) -> dict:
    latency = rng.randint(*bounds.latency_ms)
    return {"latency_ms": latency, "jitter_ms": rng.randint(0, latency // 4)}


# The request types a hunt loses answers to: those whose retry after a lost answer is a protocol's
# own recovery path (a marker written twice, a commit or an append that landed but was not heard of).
DRAWN_APIS = ("write_txn_markers", "end_txn", "txn_offset_commit", "add_partitions_to_txn", "add_offsets_to_txn",
              "offset_commit", "produce", "init_producer_id", "alter_partition")


def _draw_api(rng: random.Random, bounds: DrawBounds) -> dict:
    return {"api": rng.choice(DRAWN_APIS)}


def _draw_rate(rng: random.Random, bounds: DrawBounds) -> dict:
    return {"rate_kbps": rng.choice([16, 64, 256])}


def _target(v: object) -> object:
    return Target.parse(v) if isinstance(v, str) else v


class PlannedFault(FaultSettings):
    """One fault of a schedule: when, what, where, and (triggered) on which event, with the settings
    of its kind (FaultSettings; those its kind does not take at their defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    at_s: float
    duration_s: float
    kind: str
    target: Annotated[Target, BeforeValidator(_target)]  # a string is parsed (Target.parse)
    partition: int = 0
    on: Trigger | None = None  # fire on this event after at_s (at at_s when None)
    number: int = -1  # its place in the scenario's faults (what fault_start/fault_end name); -1: generated

    @model_validator(mode="before")
    @classmethod
    def _kind_defaults(cls, data: object) -> object:
        """A setting its kind fills in when the fault leaves it out (``FaultKind.defaults``), so the
        plan says what the nemesis does."""
        if isinstance(data, dict) and (kind := FAULTS.get(data.get("kind", ""))) is not None:
            return {**data, **{k: v for k, v in kind.defaults.items() if data.get(k) is None}}
        return data

    @property
    def end_s(self) -> float:
        return self.at_s + self.duration_s

    def to_dict(self) -> dict:
        """As run.json's ``faults`` lists it: when, what and where, the target as written, and the
        settings its kind takes."""
        takes = FAULTS[self.kind].takes if self.kind in FAULTS else SETTINGS
        return {"at_s": self.at_s, "duration_s": self.duration_s, "kind": self.kind, "target": str(self.target),
                "partition": self.partition, "on": self.on.to_dict() if self.on else None, "number": self.number,
                **{k: getattr(self, k) for k in takes}}


@dataclass
class Applied:
    """One fault as applied: the brokers it hit, the links it put toxics on, what it found."""

    fault: PlannedFault
    brokers: list[int]
    links: list[str] = field(default_factory=list)
    start_ms: int = 0
    detail: dict = field(default_factory=dict)
    tag: str = ""  # names this fault's toxics apart from an overlapping fault's on the same link
    member: object | None = None  # the group member a member fault acts on (groups.Member)
    topic: str = ""  # the run's topic, whose ``fault.partition`` an admin operation acts on
    background: threading.Thread | None = None  # work the fault goes on with while the schedule runs (a roll)
    answers_lost_before: dict[str, int] = field(default_factory=dict)  # lose_answers: each link's count when armed


@dataclass(frozen=True)
class ClusterShape:
    """What a scenario says of its cluster that decides whether an operation can run on it."""

    brokers: int
    replication_factor: int
    mode: str
    kafka_version: str = ""
    transactional: tuple[str, ...] = ()  # the scenario's transactional producers and copier, by name


Action = Callable[["KafkaCluster", Applied, int], None]
ClientAction = Callable[[object], None]  # acts on a client (recording.Recording.client) or a group member
StepAction = Callable[[object, "PlannedFault"], None]  # a workload step on a client, given its planned fault


# The clients a client fault can act on, by role: every client of the scenario, a group member (its
# process), a transactional producer or the copier (a new instance fences it), a quiet producer, a
# plain (not transactional) producer.
CLIENT_ROLES = ("any", "member", "transactional", "quiet", "producer")
CLIENT_ROLE_HELP = {"any": "any client", "member": "a group member", "transactional": "a transactional producer or "
                    "the copier", "quiet": "a quiet producer", "producer": "a plain producer"}


@dataclass(frozen=True)
class FaultKind:
    """One fault kind: what it does (apply, heal), what it may be aimed at, which scenario settings it
    takes, what it excuses in the promise table, and its colour in the report."""

    name: str
    help: str
    colour: str
    apply: Action
    heal: Action | None = None  # process faults; a network fault's heal takes its toxics off
    toxic: str | None = None  # the toxics a network fault adds
    directional: bool = False  # takes stream = upstream | downstream (a cut or a delay of one direction)
    # Why Kafka does not promise to survive it (the promise table excuses lost and diverging data
    # while it is in a run), and whether eligible leader replicas (KIP-966) take that excuse away.
    excuse: str = ""
    elr_covers: bool = False
    # The broker's process ends without Kafka's clean-shutdown marker (kill -9, a power loss): when it
    # registers again, the KRaft controllers take it out of the eligible leader replicas (KIP-966).
    unclean_shutdown: bool = False
    on_client: ClientAction | StepAction | None = None  # a fault on a client (target client:NAME), not on brokers
    off_client: StepAction | None = None  # its heal on the client, where the client itself must undo it
    client_links: bool = False  # a network fault on one client's own links (target client:NAME)
    clients: frozenset[str] = frozenset()  # CLIENT_ROLES a client fault acts on
    on_member: tuple[str, str] | None = None  # a group member's process: (its method to apply, to heal)
    on_nodes: bool = True  # acts on a coordination node too (a KRaft controller, a ZooKeeper server)
    quorum_change: bool = False  # changes the KRaft voter set (KIP-853): controllers only, dynamic quorum
    lasting: bool = False  # the heal does not undo it: the cluster runs another version or feature level after
    disk: bool = False  # acts on a node's log directory (a broker's or KRaft controller's; ZooKeeper's is not served)
    # For the fault reference (docs/faults.md, harness/faults/reference.py): a one-line summary (help
    # when empty), what it adds to help, and the docs/ page with the mechanism.
    summary: str = ""
    details: str = ""
    guide: str = ""
    # The settings (harness/faults/settings.py) it takes, and of those, each it cannot go without,
    # with why. A delay's latency and jitter, a throttle's rate and a directional kind's stream come
    # with its toxic and need not be listed (__post_init__ adds them).
    takes: tuple[str, ...] = ()
    requires: tuple[tuple[str, str], ...] = ()
    defaults: dict = field(default_factory=dict)  # what it does when a setting it takes is left out
    # How a hunt or a generator gets this kind: ``not_drawn`` says why neither draws it (a workload
    # step, a change only its user can choose); ``draw`` draws the settings of a hunt's fault of this
    # kind beyond its direction (drawn for every directional kind); ``generate`` a
    # generator's; ``probe`` is what it cannot be tried without when a hunt lists the faults a
    # scenario takes.
    not_drawn: str = ""
    draw: Callable[[random.Random, DrawBounds], dict] | None = None
    generate: Callable[[random.Random, GeneratorBounds, int], dict] | None = None
    probe: dict = field(default_factory=dict)
    # What it does to a partition, for the hunt's guided moves: "takes the leader" (its broker stops
    # leading), "holds fetches" (a follower falls behind).
    effects: frozenset[str] = frozenset()
    clock: bool = False  # moves a wall clock: a node's (its JVM needs libfaketime: skewable_clocks) or a client's
    # What a lasting kind changes: "version" (the nodes run another Kafka) or "feature" (a finalized level).
    changes: str = ""
    log_dirs_needed: int = 1  # the log directories each broker must have (one failing while the others serve)
    adds_voter: bool = False  # a spare controller (controller:K past the voters) joins the KRaft quorum
    operation: bool = False  # an operator's action through the Admin API on the fault's partition, not a failure
    # Its heal is an operator's undo through the Admin API, asked again until it is answered (another
    # fault may hold the answer back), on a thread of its own so the other faults' heals go on.
    heal_retried: bool = False
    # Why a fault of this kind cannot run on the scenario's cluster ("KEY: why (allowed: ...)"), or
    # None: what a scenario's validation asks of the kind beyond its settings.
    refuses: Callable[[FaultSettings, ClusterShape], str | None] | None = None
    # Sets the run's topic config ``config`` to ``value`` until the heal: the promise table judges the
    # topic by the weakest setting it had (harness/checker/excuses.py, weakest_during).
    sets_topic_config: bool = False
    # Resets a group's committed offsets: the judge excuses the group's commit anomalies the reset
    # explains, where the fault's events say Kafka did reset them (harness/checker/excuses.py,
    # offsets_reset_by_hand).
    moves_offsets: bool = False
    # Aborts a transaction a producer still has open: the judge excuses the transactional writers of the
    # topic what the abort explains, where the fault's events say Kafka aborted one
    # (harness/checker/excuses.py, transactions_aborted_by_hand).
    aborts_transactions: bool = False
    # Deletes the run's topic and creates it again: the judge tells the two topics apart by the times
    # the fault's events give (harness/checker/excuses.py, topics_recreated).
    recreates_topic: bool = False
    # Reads Kafka's protocol on the node's links: its cluster starts with the Kafka toxics on every
    # link that carries it (ClusterSettings.losable_answers).
    loses_answers: bool = False

    def __post_init__(self) -> None:
        implied = {LATENCY_TOXIC: ("latency_ms", "jitter_ms"), BANDWIDTH_TOXIC: ("rate_kbps",)}.get(self.toxic, ())
        takes = {*self.takes, *implied, *(("stream",) if self.directional else ())}
        unknown = takes - set(SETTINGS)
        assert not unknown, f"{self.name} takes {sorted(unknown)}, which are not fault settings ({SETTINGS})"
        object.__setattr__(self, "takes", tuple(k for k in SETTINGS if k in takes))

    def refused(self, fault: FaultSettings) -> str | None:
        """Why ``fault``'s settings do not fit this kind: a setting it does not take given a value, or
        one it cannot go without missing; None when they fit."""
        for key in fault.not_taken(self.takes):
            kinds = [k.name for k in FAULTS.values() if key in k.takes]
            named = " and ".join(kinds) if len(kinds) <= 2 else ", ".join(kinds)
            return f"{key}: only {named} take{'s' if len(kinds) == 1 else ''} {key}, not {self.name}"
        for key, why in self.requires:
            if getattr(fault, key) is None or getattr(fault, key) == 0:
                return f"{key}: {why}"
        return None

    @property
    def drawn(self) -> bool:
        return not self.not_drawn

    @property
    def beyond_kafka(self) -> bool:
        return bool(self.excuse)

    @property
    def on_clients(self) -> bool:
        """Aimed at a client (target client:NAME), not at brokers or nodes."""
        return bool(self.clients)


# ---------------------------------------------------------------- process faults

def _kill(c: KafkaCluster, a: Applied, b: int) -> None:
    c.kill(b)


def _power_loss(c: KafkaCluster, a: Applied, b: int) -> None:
    cuts = c.power_loss(b)
    a.detail.setdefault("power_loss", {})[str(b)] = [
        {"file": x.path.rsplit("/", 2)[-2] + "/" + x.path.rsplit("/", 1)[-1], "kept_until": x.kept_until,
         "removed": x.size < 0} for x in cuts]


def _stop(c: KafkaCluster, a: Applied, b: int) -> None:
    c.stop_broker(b)


def _start(c: KafkaCluster, a: Applied, b: int) -> None:
    waited = c.start_broker(b)
    if waited >= 0.5:
        a.detail.setdefault("restart_waited_s", {})[str(b)] = round(waited, 2)


def _pause(c: KafkaCluster, a: Applied, b: int) -> None:
    c.pause(b)


def _resume(c: KafkaCluster, a: Applied, b: int) -> None:
    c.resume(b)


# ---------------------------------------------------------------- network faults

def _claim(a: Applied, links: list[str]) -> list[str]:
    """The links of ``links`` this fault has not put its toxics on yet, now recorded as its own
    (before the toxics go on, so a failure halfway takes them back). A fault on several nodes meets
    the link between two of them twice (``followers``' replication link to each other, a quorum
    majority's links among its members): it is cut once."""
    new = [link for link in dict.fromkeys(links) if link not in a.links]
    a.links += new
    return new


def _cut(links: Callable[[KafkaCluster, Applied, int], list[str]]) -> Action:
    def apply(c: KafkaCluster, a: Applied, b: int) -> None:
        c.cut(_claim(a, links(c, a, b)), stream=a.fault.stream, tag=a.tag)
    return apply


def _slow(links: Callable[[KafkaCluster, Applied, int], list[str]]) -> Action:
    def apply(c: KafkaCluster, a: Applied, b: int) -> None:
        c.latency(_claim(a, links(c, a, b)), a.fault.latency_ms, a.fault.jitter_ms, stream=a.fault.stream, tag=a.tag)
    return apply


def _throttle(c: KafkaCluster, a: Applied, b: int) -> None:
    c.bandwidth(_claim(a, c.topo.isolation_links(b)), a.fault.rate_kbps, tag=a.tag)


def _one_way(c: KafkaCluster, a: Applied, b: int) -> None:
    for other in c.topo.peers_of(b):
        a.links += [link for link, _ in c.topo.one_way(b, other)]
        c.cut_one_way(b, other, tag=a.tag)


def _answer_links(c: KafkaCluster, b: int) -> list[str]:
    """The node's links that carry Kafka's protocol: to its clients, the other brokers and the controllers."""
    return [link for link in c.topo.isolation_links(b) if c.topo.speaks_kafka(link)]


def _lose_answers(c: KafkaCluster, a: Applied, b: int) -> None:
    """Arm the Kafka toxics of the node's links. Its links stay out of ``a.links``: those are the ones
    whose toxics the heal takes off, and these toxics stay on, disarmed (_keep_answers)."""
    links = [link for link in _answer_links(c, b) if link not in a.answers_lost_before]
    a.answers_lost_before.update(c.lose_answers(links, KAFKA_APIS[a.fault.api]))
    a.detail["answers_to"] = a.fault.api
    a.detail["answer_links"] = sorted(a.answers_lost_before)


def _keep_answers(c: KafkaCluster, a: Applied, b: int) -> None:
    counts = c.keep_answers([link for link in _answer_links(c, b) if link in a.answers_lost_before])
    lost = sum(n - a.answers_lost_before[link] for link, (_, n) in counts.items())
    a.detail["answers_lost"] = a.detail.get("answers_lost", 0) + lost


def _to_leader(c: KafkaCluster, a: Applied, b: int) -> list[str]:
    """The broker's fetch link to the partition's leader (as it was when the fault fired)."""
    leader = a.detail["leader_before"]
    return [c.topo.repl(b, leader)] if leader > 0 and leader != b else []


def _every_link(c: KafkaCluster, a: Applied, b: int) -> list[str]:
    return c.topo.isolation_links(b)


def _own_links(c: KafkaCluster, a: Applied, b: int) -> list[str]:
    """The target client's own link to broker b (its listener's proxy)."""
    name = a.fault.target.client
    if name not in c.topo.private_clients:
        raise ValueError(f"client {name!r} has no links of its own (allowed: one of the cluster's private_clients: "
                         f"{', '.join(c.topo.private_clients) or 'none'})")
    return [c.topo.private_client(b, name)]


def _hold(c: KafkaCluster, a: Applied, b: int) -> None:
    chosen = _own_links(c, a, b)
    a.links += chosen
    c.hold(chosen, tag=a.tag)


# ---------------------------------------------------------------- quorum changes (KIP-853)

def _remove_controller(c: KafkaCluster, a: Applied, b: int) -> None:
    c.remove_controller(b)


def _add_controller(c: KafkaCluster, a: Applied, b: int) -> None:
    c.add_controller(b)


# ---------------------------------------------------------------- upgrades under load

def _roll(c: KafkaCluster, a: Applied, b: int) -> None:
    """Start the roll at node b; it goes on beside the schedule, one node at a time, and its heal
    waits for it. Each step lands in the fault's detail as it begins."""
    steps: list[dict] = []
    a.detail["upgrade"] = steps

    def go() -> None:
        try:
            c.roll(b, a.fault.to, steps)
        except Exception as e:  # a node that did not come back: the run records where the roll stopped
            a.detail["upgrade_error"] = str(e)[:500]

    a.background = threading.Thread(target=go, name=f"rolling-upgrade-{a.tag}", daemon=True)
    a.background.start()


def _await_roll(c: KafkaCluster, a: Applied, b: int) -> None:
    if a.background is not None:
        a.background.join()


def _feature_upgrade(c: KafkaCluster, a: Applied, b: int) -> None:
    a.detail["feature_change"] = c.upgrade_feature(a.fault.feature, a.fault.level)


# ---------------------------------------------------------------- admin operations

def _elect(election: str) -> Action:
    """A leader election by hand of the fault's partition (once, whatever broker the target names)."""
    def act(c: KafkaCluster, a: Applied, b: int) -> None:
        if "election" not in a.detail:
            a.detail.update(c.elect_leader(a.topic, a.fault.partition, election))
    return act


def _reassign(c: KafkaCluster, a: Applied, b: int) -> None:
    """The fault's partition reassigned by hand (once: the first broker the target names is the one
    whose replica moves or goes). The tool runs beside the schedule, as a roll does: it waits on
    every broker it asks, dead ones too, and no other fault waits for it."""
    if a.background is not None:
        return
    f = a.fault

    def go() -> None:
        try:
            a.detail.update(c.reassign(a.topic, f.partition, f.change or "move", b, f.to_broker,
                                       f.throttle_kbps * 1024 if f.throttle_kbps else None))
        except Exception as e:  # the tool refused (a broker of the new assignment is down): the account says so
            a.detail["reassignment"] = f"not started: {str(e)[:300]}"

    a.background = threading.Thread(target=go, name=f"reassign-{a.tag}", daemon=True)
    a.background.start()


def _reassign_refused(f: FaultSettings, cluster: ClusterShape) -> str | None:
    """A reassignment names a broker that exists, and the cluster has a broker to take a moved or
    added replica, or a replica to spare for a removed one."""
    brokers, rf = cluster.brokers, cluster.replication_factor
    if f.to_broker is not None and f.to_broker > brokers:
        return f"to_broker: broker {f.to_broker} does not exist (allowed: 1..{brokers})"
    change = f.change or "move"
    if change in ("move", "add") and brokers <= rf:
        return (f"change: a {change} needs a broker outside the partition's replicas, and brokers = {brokers} = "
                f"topic.replication_factor (allowed: brokers >= {rf + 1}, or change = \"remove\")")
    if change == "remove" and rf < 2:
        return "change: remove needs a replica to spare, and topic.replication_factor = 1 (allowed: move, add)"
    return None


def _draw_reassignment(rng: random.Random, bounds: DrawBounds) -> dict:
    """A move (always possible with a broker to spare, where adds and removes run out), throttled or not."""
    return {"change": "move", "throttle_kbps": rng.choice([None, 256, 4096])}


def _finish_reassignment(c: KafkaCluster, a: Applied, b: int) -> None:
    if a.background is not None:
        a.background.join()
    if "replicas_after" in a.detail and "reassignment" not in a.detail:
        a.detail["reassignment"] = c.finish_reassignment(a.topic, a.fault.partition, a.detail["replicas_after"])


def _decommission(c: KafkaCluster, a: Applied, b: int) -> None:
    """The broker shut down cleanly, then unregistered from the controllers, as an operator retires it."""
    c.stop_broker(b)
    a.detail.setdefault("unregistered", {})[str(b)] = c.unregister_broker(b)


def _kraft_only(f: FaultSettings, cluster: ClusterShape) -> str | None:
    if cluster.mode != "kraft":
        return ("kind: decommission unregisters a broker from the KRaft controllers; in ZooKeeper mode a broker "
                "leaves by its controlled shutdown (allowed: restart, or mode = \"kraft\")")
    return None


def _reset_offsets(c: KafkaCluster, a: Applied, b: int) -> None:
    """The group's committed offsets of the run's topic reset by hand (once, whatever broker its
    coordinator is), as an operator does while its members run."""
    if "offsets_reset" not in a.detail:
        if not a.detail.get("group"):
            raise ValueError(f"reset_offsets needs a group: target group_coordinator[:GROUP], not {a.fault.target}")
        offsets = a.fault.offsets or "earliest"
        group_id = a.detail.get("group_id", a.detail["group"])  # its id on the cluster, where not its name
        a.detail.update(offsets=offsets, offsets_reset=c.reset_group_offsets(group_id, a.topic, offsets))


def _group_target(f: FaultSettings, cluster: ClusterShape) -> str | None:
    target = getattr(f, "target", None)
    if target is not None and target.role != "group_coordinator":
        return (f"target: reset_offsets acts on a group, named by its coordinator, not on {target} (allowed: "
                "group_coordinator, group_coordinator:GROUP)")
    return None


def _abort_transaction(c: KafkaCluster, a: Applied, b: int) -> None:
    """The oldest transaction open on the fault's partition aborted by hand (once, whatever broker
    leads it), as an operator aborts one they take for hanging."""
    if "transaction_aborted" not in a.detail:
        a.detail.update(c.abort_transaction(a.topic, a.fault.partition))


def _abort_refused(f: FaultSettings, cluster: ClusterShape) -> str | None:
    """kafka-transactions ships with the release, and the scenario has a transaction to abort."""
    from harness.cluster.kafka_tools import TOOLS

    tool = TOOLS["kafka-transactions"]
    if cluster.kafka_version and not tool.shipped_by(cluster.kafka_version):
        return (f"kind: abort_transaction runs kafka-transactions, which Kafka {cluster.kafka_version} does not ship "
                f"(allowed: kafka_version {tool.since} or later)")
    if not cluster.transactional:
        return ("kind: abort_transaction aborts a producer's open transaction, and this scenario has no transactional "
                "writer (allowed: a producer with transactional = true, or a [copier])")
    return None


def _recreate_topic(c: KafkaCluster, a: Applied, b: int) -> None:
    """The run's topic deleted and created again under its name (once, whatever broker the target is),
    as an operator starts a topic afresh while its clients run. Beside the schedule, as a reassignment
    runs: in ZooKeeper mode the deletion waits for every replica's broker, which a fault of the same
    schedule may be holding down until its heal. Its account fills in as it goes (what was done is in
    it whatever fails after), in a dict of its own until the heal: the fault's start is written while
    it runs."""
    if a.background is not None:
        return
    account: dict = {}
    a.background = threading.Thread(target=c.recreate_topic, args=(a.topic, account), name=f"recreate-{a.tag}",
                                    daemon=True)
    a.background.account = account  # type: ignore[attr-defined]
    a.background.start()


def _finish_recreation(c: KafkaCluster, a: Applied, b: int) -> None:
    if a.background is not None:
        a.background.join()
        a.detail.update(getattr(a.background, "account", {}))


def _add_partitions(c: KafkaCluster, a: Applied, b: int) -> None:
    if "partitions_after" not in a.detail:
        a.detail.update(c.add_partitions(a.topic, a.fault.new_partitions or 1))


def _alter_config(c: KafkaCluster, a: Applied, b: int) -> None:
    if "config" not in a.detail:
        before = c.topic_config(a.topic, a.fault.config)
        c.alter_topic_config(a.topic, a.fault.config, a.fault.value)
        a.detail.update(config=a.fault.config, value_before=before, value=a.fault.value)


def _restore_config(c: KafkaCluster, a: Applied, b: int) -> None:
    """The topic's own value back (none: its default again); setting it twice changes nothing."""
    if "config" in a.detail:
        c.alter_topic_config(a.topic, a.fault.config, a.detail["value_before"])


# What a drawn alter_config does: each a change an operator makes for a reason of the day, and each
# weakens or shortens what the topic keeps.
DRAWN_CONFIGS = (("min.insync.replicas", "1"), ("unclean.leader.election.enable", "true"), ("retention.ms", "10000"))


def _draw_config(rng: random.Random, bounds: object = None, log_dirs: int = 1) -> dict:
    config, value = rng.choice(DRAWN_CONFIGS)
    return {"config": config, "value": value}


# ---------------------------------------------------------------- clocks

def _skew(c: KafkaCluster, a: Applied, b: int) -> None:
    c.skew_clock(b, a.fault.offset_s)


def _unskew(c: KafkaCluster, a: Applied, b: int) -> None:
    c.skew_clock(b, 0)


# ---------------------------------------------------------------- disks

def _dirs(c: KafkaCluster, a: Applied, b: int) -> list[int]:
    """The log directories a disk fault acts on: the one it names, else every one the node has (a
    KRaft controller has one)."""
    if a.fault.dir:
        return [a.fault.dir]
    return list(range(1, (c.settings.log_dirs if b in c.settings.broker_ids else 1) + 1))


def _fill(c: KafkaCluster, a: Applied, b: int) -> None:
    c.fail_disk(b, mechanisms.full(), _noted_dirs(a, _dirs(c, a, b)))


def _break(c: KafkaCluster, a: Applied, b: int) -> None:
    c.fail_disk(b, mechanisms.failing(a.fault.op), _noted_dirs(a, _dirs(c, a, b)))


def _slow_down(c: KafkaCluster, a: Applied, b: int) -> None:
    c.fail_disk(b, mechanisms.slow(a.fault.latency_ms, a.fault.jitter_ms), _noted_dirs(a, _dirs(c, a, b)))


def _lose_dir(c: KafkaCluster, a: Applied, b: int) -> None:
    c.fail_disk(b, mechanisms.broken(), _noted_dirs(a, [a.fault.dir]))


def _noted_dirs(a: Applied, dirs: list[int]) -> list[int]:
    """``dirs``, noted in the fault's event (the report's timeline says which directory failed)."""
    a.detail["dirs"] = dirs
    return dirs


def _mend(c: KafkaCluster, a: Applied, b: int) -> None:
    """Give the disk back; a broker Kafka halted (its every log directory failed) is started, one
    that carries on without a failed directory is restarted (Kafka serves a directory again only
    from a start): always after a failed or full directory of several, since the directory may have
    failed without the broker's log saying so yet."""
    carries_on = a.fault.kind != "slow_disk" and b in c.settings.broker_ids and c.settings.log_dirs > 1
    if c.heal_disk(b, a.detail.get("dirs") or _dirs(c, a, b), a.start_ms, restart=carries_on):
        a.detail.setdefault("restarted", []).append(b)


# ---------------------------------------------------------------- client faults

def _no_broker(c: KafkaCluster, a: Applied, b: int) -> None:
    """Client faults touch no broker."""


def _kill_client(client: object, f: PlannedFault) -> None:
    client.kill()  # type: ignore[attr-defined]


def _send_one(client: object, f: PlannedFault) -> None:
    client.send_one(f.partition)  # type: ignore[attr-defined]


def _skew_client(client: object, f: PlannedFault) -> None:
    client.skew_clock(f.offset_s)  # type: ignore[attr-defined]


def _unskew_client(client: object, f: PlannedFault) -> None:
    client.skew_clock(0)  # type: ignore[attr-defined]



FAULTS: dict[str, FaultKind] = {f.name: f for f in (
    FaultKind("kill", "kill -9, restart after duration_s", "#d62728", _kill, _start, unclean_shutdown=True,
              summary="kill -9, started again after duration_s",
              effects=frozenset({TAKES_THE_LEADER})),
    FaultKind("power_loss", "kill -9 and lose everything past each partition's recovery point, restart after "
              "duration_s", "#7f0000", _power_loss, _start,
              excuse="power loss drops unflushed data; before eligible leader replicas (KIP-966) the last ISR member "
                     "may lead, and with them a record is gone once every broker that held it lost power (several "
                     "brokers' power losses, or one broker's beside another's unclean shutdown: the controllers take a "
                     "replica that shut down uncleanly out of the eligible ones, and elect the last known leader "
                     "once none is left)", elr_covers=True, unclean_shutdown=True,
              summary="kill -9 losing what was not flushed, started again after duration_s",
              details="The recovery point is the one each partition last checkpointed "
                      "(`recovery-point-offset-checkpoint`)."),
    FaultKind("pause", "freeze the JVM, resume after duration_s", "#9467bd", _pause, _resume,
              summary="JVM frozen, resumed after duration_s",
              effects=frozenset({TAKES_THE_LEADER, SILENCES_ITS_BROKER})),
    FaultKind("restart", "clean shutdown, start again after duration_s", "#8c564b", _stop, _start,
              summary="clean shutdown, started again after duration_s",
              effects=frozenset({TAKES_THE_LEADER})),
    FaultKind("isolate", "every link of the node black-holed", "#e377c2", _cut(_every_link), toxic=CUT_TOXIC,
              directional=True,
              summary="every link black-holed",
              effects=frozenset({TAKES_THE_LEADER, SILENCES_ITS_BROKER})),
    FaultKind("cut_replication", "inter-broker links of the broker", "#ff7f0e",
              _cut(lambda c, a, b: c.topo.replication_links(b)), toxic=CUT_TOXIC, directional=True, on_nodes=False,
              summary="inter-broker links cut"),
    FaultKind("cut_fetch", "the broker's connection to the partition's leader (its fetches), both directions",
              "#ff7f0e", _cut(_to_leader), toxic=CUT_TOXIC, directional=True, on_nodes=False,
              summary="fetches from the partition's leader cut",
              effects=frozenset({HOLDS_FETCHES})),
    FaultKind("slow_fetch", "latency_ms (+- jitter_ms) on the broker's connection to the partition's leader",
              "#c5b0d5", _slow(_to_leader), toxic=LATENCY_TOXIC, directional=True, on_nodes=False,
              summary="fetches from the partition's leader delayed",
              effects=frozenset({HOLDS_FETCHES}), draw=_draw_latency),
    FaultKind("cut_coordination", "a broker: its links to every ZooKeeper server / KRaft controller; a "
              "coordination node: its links to the other nodes of the quorum (brokers still reach it)", "#bcbd22",
              _cut(lambda c, a, b: c.topo.coordination(b)), toxic=CUT_TOXIC, directional=True,
              summary="cut from ZooKeeper or the KRaft controllers",
              effects=frozenset({TAKES_THE_LEADER, SILENCES_ITS_BROKER})),
    FaultKind("cut_client", "host clients to the broker", "#17becf", _cut(lambda c, a, b: c.topo.client_links(b)),
              toxic=CUT_TOXIC, directional=True, on_nodes=False,
              summary="host clients cut from the broker", effects=frozenset({CUTS_ITS_CLIENTS})),
    FaultKind("one_way", "bytes from the node to every other broker (a coordination node: every other node of "
              "the quorum) dropped; the other way flows", "#ffbb78", _one_way, toxic=CUT_TOXIC,
              summary="its bytes to the other nodes dropped, not theirs to it"),
    FaultKind("remove_controller", "KIP-853: the controller leaves the voter set (it runs on as an observer); "
              "added back at the heal", "#3182bd", _remove_controller, _add_controller, quorum_change=True,
              summary="a controller leaves the voters until the heal"),
    FaultKind("add_controller", "KIP-853: a spare controller (target controller:K past the voters) joins the "
              "voter set; removed again at the heal", "#6baed6", _add_controller, _remove_controller,
              quorum_change=True,
              summary="a spare controller joins the voters until the heal", adds_voter=True),
    FaultKind("rolling_upgrade", "every node moved to Kafka `to`, one at a time (clean stop, the new version's "
              "jars, start, back in every ISR before the next): KRaft controllers first, then brokers, each group "
              "from the target on; the heal waits for the roll to end", "#31a354", _roll, _await_roll, lasting=True,
              summary="every node moved to Kafka `to`, one at a time", details="`to` is required.",
              guide="versions.md",
              takes=("to",), requires=(("to", "rolling_upgrade needs the version to move to (allowed: "
                                           f"{', '.join(KAFKA_VERSIONS)})"),),
              not_drawn="names a version or a feature level only its user can choose", changes="version"),
    FaultKind("elect_preferred", "a preferred leader election of the fault's partition through the Admin API "
              "(kafka-leader-election --election-type PREFERRED): leadership goes back to the first replica of the "
              "assignment if it is in the ISR; nothing to heal", "#3182bd", _elect("preferred"), operation=True,
              guide="operations.md",
              on_nodes=False, summary="the partition's leadership moved back to its preferred replica by hand",
              details="The controller's answer (`ELECTION_NOT_NEEDED` when the preferred replica leads already) "
                      "and the leader before and after are in the fault's events.",
              effects=frozenset({TAKES_THE_LEADER})),
    FaultKind("elect_unclean", "an unclean leader election of the fault's partition through the Admin API "
              "(kafka-leader-election --election-type UNCLEAN): with no live ISR member, a live replica outside "
              "the ISR is made leader; nothing to heal", "#756bb1", _elect("unclean"), operation=True,
              guide="operations.md",
              on_nodes=False, summary="an out-of-sync replica made the partition's leader by hand",
              details="Kafka elects only when no ISR member can lead (`ELIGIBLE_LEADERS_NOT_AVAILABLE` "
                      "otherwise); what only the ISR held is then lost, which Kafka documents for an unclean "
                      "election, so the promise table excuses lost and diverging data in a run with it.",
              excuse="an unclean election by hand makes a replica outside the ISR the leader: what only the ISR "
                     "held is lost"),
    FaultKind("reassign", "the fault's partition reassigned through Kafka's kafka-reassign-partitions (--execute, "
              "with --throttle when throttle_kbps is given): the target's replica moved to to_broker (`change` = "
              "move), a replica added on to_broker (add) or the target's replica removed (remove); the heal waits "
              "for it to complete (--verify, which takes the throttle off)", "#9e9ac8", _reassign,
              _finish_reassignment, operation=True, guide="operations.md", on_nodes=False,
              summary="the partition's replicas moved, added or removed by hand",
              details="`to_broker` defaults to the lowest broker holding no replica of the partition; a move or an "
                      "add needs one (brokers > replication_factor), a remove a replica to spare. The replicas "
                      "before and asked for, and whether the reassignment was complete by the heal, are in the "
                      "fault's events. Kafka promises a reassignment loses nothing: it excuses nothing.",
              takes=("change", "to_broker", "throttle_kbps"), defaults={"change": "move"}, refuses=_reassign_refused,
              draw=_draw_reassignment, generate=lambda rng, g, log_dirs: {"change": "move"}),
    FaultKind("decommission", "the broker retired by an operator: shut down cleanly, then unregistered from the "
              "KRaft controllers (kafka-cluster unregister), its replicas left where they are; the heal starts it "
              "again, and it registers anew", "#c6dbef", _decommission, _start, operation=True,
              guide="operations.md", on_nodes=False,
              summary="a broker shut down and unregistered (KRaft) until the heal",
              details="KRaft only. The tool's answer is in the fault's events (`unregistered`). A broker "
                      "retired without its replicas moved first leaves them offline until it returns; Kafka "
                      "promises that loses nothing acknowledged by min.insync replicas: it excuses nothing.",
              refuses=_kraft_only, effects=frozenset({TAKES_THE_LEADER})),
    FaultKind("reset_offsets", "the group's committed offsets of the run's topic reset through Kafka's "
              "kafka-consumer-groups while its members run (target group_coordinator:GROUP): --reset-offsets "
              "--to-earliest or --to-latest --execute, or --delete-offsets (`offsets`); nothing to heal",
              "#9ecae1", _reset_offsets, operation=True, guide="operations.md", on_nodes=False,
              summary="a group's committed offsets reset or deleted by hand while it runs",
              details="Kafka moves only an inactive group's offsets (and deletes none of a topic the group is "
                      "subscribed to): the fault's events say whether it did (`offsets_reset`: \"reset\", or "
                      "\"refused: \" and the tool's words). Offsets it did move back excuse the group's "
                      "offset_regression, and moved forward or deleted, its unseen records; refused, nothing.",
              takes=("offsets",), defaults={"offsets": "earliest"}, refuses=_group_target, moves_offsets=True,
              draw=lambda rng, bounds: {"offsets": rng.choice(["earliest", "latest", "delete"])},
              generate=lambda rng, g, log_dirs: {"offsets": "earliest"}),
    FaultKind("abort_transaction", "the oldest transaction open on the fault's partition aborted through Kafka's "
              "kafka-transactions (describe-producers, then abort --start-offset), as an operator aborts one they "
              "take for hanging, while its producer runs; nothing to heal", "#fdd0a2", _abort_transaction,
              operation=True, guide="operations.md", on_nodes=False, aborts_transactions=True, refuses=_abort_refused,
              summary="an open transaction aborted by hand while its producer runs",
              details="Kafka 3.9.1 or later (the tool's release here), and a transactional producer or the copier. "
                      "Kafka documents the abort for hanging transactions only: aborting one its producer still "
                      "runs writes the abort marker on that partition while the producer may go on to commit the "
                      "others, which breaks the transaction's atomicity. The fault's events say what Kafka did "
                      "(`transaction_aborted`: \"aborted\", \"none open\" or \"refused: \" and the tool's words, "
                      "the producer and its transaction's first offset); one it aborted excuses the topic's "
                      "transactional writes (lost, torn and lost copies), a refused one or none open nothing."),
    FaultKind("add_partitions", "the run's topic gains new_partitions partitions through the Admin API (kafka-topics "
              "--alter --partitions), placed by the controller; nothing to heal", "#dadaeb", _add_partitions,
              operation=True, guide="operations.md", on_nodes=False,
              summary="the topic's partition count raised by hand",
              details="kchaos's producers write to the run's partitions by number, so the new ones stay empty; a "
                      "group takes them at its next rebalance. The counts before and after are in the fault's "
                      "events. Kafka promises adding partitions moves no record: it excuses nothing.",
              takes=("new_partitions",), defaults={"new_partitions": 1}),
    FaultKind("recreate_topic", "the run's topic deleted and created again under the same name through the Admin "
              "API (kafka-topics --delete, then --create with the same partitions, replicas and topic configs) "
              "while its clients run, beside the schedule; the heal waits for it", "#c994c7", _recreate_topic,
              _finish_recreation, operation=True,
              guide="operations.md", on_nodes=False, recreates_topic=True,
              not_drawn="deletes every record the run wrote before it, so a hunt for lost records drawing it by "
                        "default would spend its runs on that; name it in a hunt's --kinds or a generator's kinds",
              summary="the topic deleted and created again under its name",
              details="The deletion's and the new topic's times and both topic ids are in the fault's events "
                      "(`recreated`: \"recreated\", or \"refused: \" and why: ZooKeeper mode deletes a topic only "
                      "once every replica's broker is up). A recreated topic is a new topic: writes acknowledged "
                      "before it served were deleted with the old one (reported as topic_deleted, not lost), "
                      "offsets start again at 0 (order across the two is not promised), and a record of the old "
                      "topic in the new one's log is old_topic_read."),
    FaultKind("alter_config", "a config of the run's topic changed through the Admin API (kafka-configs --alter): "
              "`config` set to `value` until the heal, which gives the topic its own value back",
              "#bcbddc", _alter_config, _restore_config, operation=True, heal_retried=True,
              guide="operations.md", on_nodes=False, sets_topic_config=True,
              summary="a topic config (min.insync.replicas, unclean election, retention) changed until the heal",
              details="`config` and `value` are required. The promise table judges the run by the weakest setting "
                      "it had: `min.insync.replicas` lowered or unclean election turned on change the run's "
                      "configuration (its label says which) and what it excuses, as the same setting given from the "
                      "start would; records retention deleted are reported apart from loss.",
              takes=("config", "value"),
              requires=(("config", "alter_config needs the topic config to change (allowed: min.insync.replicas, "
                                   "unclean.leader.election.enable, retention.ms, retention.bytes)"),
                        ("value", "alter_config needs the value the config takes until the heal")),
              draw=_draw_config, generate=lambda rng, g, log_dirs: _draw_config(rng),
              probe={"config": "min.insync.replicas", "value": "1"}),
    FaultKind("feature_upgrade", "kafka-features upgrade of `feature` to `level` (default: the newest level every "
              "broker supports), by the controllers; nothing to heal", "#74c476", _feature_upgrade, lasting=True,
              summary="a feature raised to `level` by kafka-features", details="`feature` is required.",
              guide="versions.md",
              takes=("feature", "level"),
              requires=(("feature", "feature_upgrade needs the feature to upgrade (allowed: a feature the version "
                                    "has, e.g. metadata.version, transaction.version, group.version, share.version)"),),
              not_drawn="names a version or a feature level only its user can choose", changes="feature"),
    FaultKind("clock_skew", "the node's wall clock jumps by offset_s seconds (forward or back) and returns at the "
              "heal; its monotonic clock runs on (libfaketime in its JVM: the machine's clock is not touched)",
              "#e6550d", _skew, _unskew,
              summary="the node's wall clock jumps by offset_s until the heal",
              details="offset_s is required (any number but 0).",
              guide="disks-and-clocks.md",
              takes=("offset_s",),
              requires=(("offset_s", "clock_skew needs how far the clock jumps, in seconds (allowed: any number but "
                                     "0, e.g. 3600 forward or -600 back)"),), draw=_draw_offset,
              generate=lambda rng, g, log_dirs: {"offset_s": g.offset_s}, probe={"offset_s": 60.0}, clock=True),
    FaultKind("disk_full", "the node's log directory answers ENOSPC to every write, creation and growth; the heal "
              "gives the space back and starts the node again if Kafka stopped it", "#636363", _fill, _mend,
              disk=True,
              summary="log directory full: ENOSPC to every write",
              guide="disks-and-clocks.md",
              takes=("dir",)),
    FaultKind("disk_error", "the node's log directory answers EIO to every `op` (read, write or fsync; default "
              "write); the heal mends it and starts the node again if Kafka stopped it", "#252525", _break, _mend,
              disk=True,
              summary="log directory failing: EIO to every `op`",
              guide="disks-and-clocks.md",
              takes=("op", "dir"), defaults={"op": "write"}, draw=_draw_op),
    FaultKind("slow_disk", "every write and fsync of the node's log directory waits latency_ms (+- jitter_ms) first",
              "#969696", _slow_down, _mend, disk=True,
              summary="log directory slow: writes and fsyncs wait latency_ms",
              guide="disks-and-clocks.md",
              takes=("latency_ms", "jitter_ms", "dir"), draw=_draw_latency),
    FaultKind("log_dir_failure", "log directory `dir` (default 1) of a broker with log_dirs >= 2 fails: every "
              "read, write and fsync in it answers EIO, and the broker carries on with the others; the heal mends "
              "it and restarts the broker, which then serves it again", "#000000", _lose_dir, _mend, disk=True,
              summary="one of a JBOD broker's directories fails; it carries on",
              details="`log_dirs` (2 to 4 directories per broker) is a top-level scenario key. Not on a KRaft "
                      "controller, which has one log directory (disk_error fails that).",
              guide="disks-and-clocks.md",
              takes=("dir",), defaults={"dir": 1}, generate=lambda rng, g, log_dirs: {"dir": rng.randint(1, log_dirs)},
              log_dirs_needed=2),
    FaultKind("lose_answers", "the answers to one request type (`api`) on every link of the node that carries "
              "Kafka's protocol are lost: each request reaches the side it is for and is handled there, its answer "
              "never comes back, and the connection closes, as a network that lost an answer leaves it; the "
              "asking side sees the connection go and asks again", "#843c39", _lose_answers, _keep_answers,
              summary="the answers to one request type lost, each connection that lost one closed",
              details="`api` is required (allowed: " + ", ".join(KAFKA_APIS) + "). The node's links to its "
                      "clients, the other brokers and the KRaft controllers are read by kchaos's Kafka toxics "
                      "(docker/toxiproxy/server/kafka.go) from their first byte: a scenario with this fault starts "
                      "its cluster with them (`losable_answers`). One request type per link at a time: two such "
                      "faults on one link, the later's type holds, and the first heal disarms both. How many "
                      "answers were lost is on the fault's line (`answers_lost`).",
              takes=("api",), requires=(("api", "lose_answers needs the request type whose answers are lost "
                                                "(allowed: " + ", ".join(KAFKA_APIS) + ")"),),
              draw=_draw_api, probe={"api": "write_txn_markers"}, loses_answers=True),
    FaultKind("latency", "latency_ms +- jitter_ms on every link of the node", "#aec7e8", _slow(_every_link),
              toxic=LATENCY_TOXIC, directional=True,
              summary="latency_ms +- jitter_ms on every link", draw=_draw_latency),
    FaultKind("bandwidth", "rate_kbps on every link of the node", "#98df8a", _throttle, toxic=BANDWIDTH_TOXIC,
              summary="rate_kbps on every link", draw=_draw_rate),
    FaultKind("client_kill", "a transactional producer or the copier dies mid-transaction (target client:NAME); "
              "a new instance with the same transactional.id takes over at once and fences it. A group member's "
              "process is killed without leaving the group; a new one joins at the heal", "#393b79",
              _no_broker, on_client=_kill_client, clients=frozenset({"member", "transactional"}),
              on_member=("kill", "start"),
              summary="dies; a new instance takes over (a member: at the heal)"),
    FaultKind("client_pause", "a client's own links held both ways (target client:NAME): nothing it sends arrives, "
              "nothing sent to it arrives, and all of it flows at the heal, as for a frozen client process. A "
              "group member's process is frozen itself (no polls, no heartbeats) and resumes at the heal",
              "#5254a3", _hold, toxic=HOLD_TOXIC, client_links=True, clients=frozenset({"any"}),
              on_member=("pause", "resume"),
              summary="frozen until the heal (its links held; a member's process stopped)",
              details="A member stops itself between calls, after processing a batch and before committing it, "
                      "so its first act on waking is a zombie's commit, which the coordinator must refuse."),
    FaultKind("client_restart", "a group member leaves cleanly (its last commit included) and a new one joins "
              "at the heal (target client:MEMBER)", "#8c6d31", _no_broker, clients=frozenset({"member"}),
              on_member=("stop", "start"),
              summary="leaves cleanly; a new member joins at the heal"),
    FaultKind("send", "a workload step: a quiet producer (target client:NAME, quiet = true) sends one record to the "
              "fault's partition and the step ends when it is acknowledged (or its delivery timeout passes)",
              "#2ca02c", _no_broker, on_client=_send_one, clients=frozenset({"quiet"}),
              summary="sends one record to the fault's partition (a workload step)",
              not_drawn="a workload step of a quiet producer: the scenario's own script, not a fault to search over"),
    FaultKind("client_latency", "latency_ms +- jitter_ms on a client's own links (target client:NAME)", "#6b6ecf",
              _slow(_own_links), toxic=LATENCY_TOXIC, directional=True, client_links=True, clients=frozenset({"any"}),
              summary="latency_ms +- jitter_ms on its own links", draw=_draw_latency),
    FaultKind("client_clock_skew", "a plain producer's wall clock jumps by offset_s seconds and returns at the heal "
              "(target client:NAME): the timestamps it stamps on records follow it, and a Java client's timeouts "
              "that run on the wall clock too (libfaketime in its JVM); librdkafka reads the wall clock only to "
              "stamp records, so its records are stamped from the moved clock", "#fd8d3c", _no_broker,
              on_client=_skew_client, off_client=_unskew_client, clients=frozenset({"producer"}),
              summary="its wall clock jumps by offset_s until the heal",
              details="offset_s is required (any number but 0).",
              guide="disks-and-clocks.md",
              takes=("offset_s",), requires=(("offset_s", "client_clock_skew needs how far the clock jumps, in seconds "
              "(allowed: any number but 0, e.g. 3600 forward or -600 back)"),),
              not_drawn="moves the timestamps on a producer's records, which decide when retention deletes them: "
              "deletions the checker reports apart from loss, so no anomaly a hunt looks for", clock=True),
    FaultKind("client_cut", "a client's own links black-holed (target client:NAME)", "#9c9ede",
              _cut(_own_links), toxic=CUT_TOXIC, directional=True, client_links=True, clients=frozenset({"any"}),
              summary="its own links black-holed"),
)}
# The families the fault reference (docs/faults.md) groups kinds into, told apart by FaultKind's fields
# (harness/faults/reference.py), in its order: a title, and what holds for every kind of the family.
FAMILIES = {
    "process": ("A node's process", "Its JVM, in a broker, a KRaft controller or a ZooKeeper server: killed, "
                "frozen, shut down or its clock moved; the heal starts, resumes or restores it."),
    "network": ("A node's links", "Toxiproxy sits in every link a fault must cut: between brokers, between brokers "
                "and the coordination nodes, among those, and from the host's clients. A network fault puts toxics "
                "of its own on the links it names; a cut black-holes them (bytes stop, TCP connections stay open). "
                "The heal takes off that fault's own toxics, so overlapping faults, even on one link, each heal "
                "their own. Losing answers is the exception: the toxics that read Kafka's protocol are on every "
                "Kafka link of such a cluster from its first byte, and a fault arms and disarms them."),
    "disk": ("A node's log directory", "A pass-through FUSE file system under the log directory, in the node's own "
             "container (never the machine's disk), answers as a failing disk would. A broker whose only log "
             "directory failed halts (Kafka's rule); the heal gives the disk back and starts it again. A ZooKeeper "
             "server's disk is not faulted."),
    "quorum": ("The KRaft voter set", "KIP-853, in KRaft on Kafka 3.9 or later: a scenario with such a fault "
               "formats its quorum dynamic."),
    "lasting": ("Upgrades", "Not undone at the heal: the cluster runs the later version or feature level from then "
                "on. The report's Upgrades table has each step."),
    "client": ("A client", "Aimed at `client:NAME`, and only at the clients its row names; the other clients are "
               "untouched."),
    "operation": ("An operator's action", "What an operator does through Kafka's Admin API while the cluster serves, "
                  "on the fault's partition (`partition`, whatever broker the target names); judged against what "
                  "Kafka documents for it."),
}
CLIENT_FAULTS = frozenset(k for k, f in FAULTS.items() if f.on_clients)
CLIENT_LINK_FAULTS = frozenset(k for k, f in FAULTS.items() if f.client_links)
MEMBER_FAULTS = frozenset(k for k, f in FAULTS.items() if f.on_member is not None)
DISK_FAULTS = frozenset(k for k, f in FAULTS.items() if f.disk)
FAULT_KINDS = tuple(FAULTS)
BEYOND_KAFKA_FAULTS = frozenset(k for k, f in FAULTS.items() if f.beyond_kafka)
UNKNOWN_COLOUR = "#7f7f7f"


def colour(kind: str) -> str:
    f = FAULTS.get(kind)
    return f.colour if f else UNKNOWN_COLOUR


def check_kind(kind: str) -> FaultKind:
    """The registered kind, or ValueError naming the allowed ones."""
    if kind not in FAULTS:
        raise ValueError(f"kind {kind!r} is not a fault (allowed: {', '.join(FAULT_KINDS)})")
    return FAULTS[kind]
