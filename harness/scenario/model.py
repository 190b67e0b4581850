"""Scenarios are data: TOML files validated into typed config objects before anything starts.

Every problem is reported as ``FILE: KEY: what is wrong (allowed: ...)``. ``--set a.b=c``
overrides any field by its dotted name; list items are addressed by index (``producers.0.acks``).
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.clients.registry import (
    DEFAULT_CLIENT,
    LIBRARIES,
    canonical,
    libraries_for,
    names,
    refusal,
    version_refusal,
)
from harness.cluster import feature_levels
from harness.cluster.settings import ClusterSettings, quorum_size_refused, supports_dynamic_quorum
from harness.faults import (
    CLIENT_FAULTS,
    CLIENT_LINK_FAULTS,
    FAULT_KINDS,
    FAULTS,
    MEMBER_FAULTS,
    TARGET_HELP,
    Target,
    check_kind,
)
from harness.faults.triggers import BROKER_EVENTS, EVENTS, PARTITION_EVENTS, Trigger, cycle
from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS, upgrades_from, with_default_mode

FREEFORM_MAPS = ("broker_config", "config", "controller_config", "features")
ROLE_WORDS = {"any": "any client", "member": "group members", "transactional": "transactional producers and the "
              "copier", "quiet": "producers with quiet = true", "producer": "plain (not transactional) producers"}


def _props(v: object) -> object:
    """Kafka properties are strings; TOML gives ints and bools (true -> "true")."""
    if isinstance(v, dict):
        return {str(k): (str(x).lower() if isinstance(x, bool) else str(x)) for k, x in v.items()}
    return v


PropMap = Annotated[dict[str, str], BeforeValidator(_props)]


def _target(v: object) -> object:
    return Target.parse(v) if isinstance(v, str) else v


# A fault's target: written as a string ("follower:2"), held parsed, written back as the string.
TargetField = Annotated[Target, BeforeValidator(_target), PlainSerializer(str)]


UNLIMITED_RATE = 1e6  # a producer rate this high means as fast as the client goes (both drivers read it so)


class ScenarioError(ValueError):
    """Bad input: names the file, the key and what is allowed."""


# A version as text: `--set client_version=4.1` reads as a number.
VersionText = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, int | float) else v)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _ClientTable(_Model):
    """A client's table: ``client`` names its library (the scenario's when unset) and
    ``client_version`` that library's version; its ``config`` holds any property of that library,
    passed as is, checked by the library's driver (``Scenario._check_client_configs``); ``kind``
    names the kind of client it is."""

    kind: ClassVar[str]
    client: str | None = Field(None, description=f"the client library of this table: {names()} (default: "
                                                 "the scenario's client)")
    client_version: VersionText | None = Field(None, description="the library's version (java: kafka-clients of "
                                                                 "any version kchaos has a Kafka image of; default: "
                                                                 "the scenario's client_version, else the broker's "
                                                                 "version)")
    config: PropMap = Field(default_factory=dict, description="any property of the table's client library, "
                                                              "passed as is")

    @field_validator("client")
    @classmethod
    def _library_name(cls, v: str | None) -> str | None:
        return canonical(v) if v is not None else None


class TopicSpec(_Model):
    name: str = "chaos"
    partitions: int = Field(3, ge=1, le=64)
    replication_factor: int = Field(3, ge=1)
    min_insync_replicas: int = Field(2, ge=1)
    unclean_leader_election: bool = False
    config: PropMap = Field(default_factory=dict, description="any other topic config")

    def topic_config(self) -> dict[str, str]:
        return {
            "min.insync.replicas": str(self.min_insync_replicas),
            "unclean.leader.election.enable": str(self.unclean_leader_election).lower(),
            **self.config,
        }


class ProducerSpec(_ClientTable):
    kind: ClassVar[str] = "producer"
    name: str = "p"
    count: int = Field(1, ge=1, le=16)
    acks: Literal["0", "1", "all"] = "all"
    idempotence: bool = False
    retries: int = Field(2147483647, ge=0)
    max_in_flight: int = Field(5, ge=1, le=5)
    linger_ms: int = Field(5, ge=0)
    rate: float = Field(200.0, gt=0, description=f"records per second per producer instance "
                                                 f"({UNLIMITED_RATE:g}: as fast as it goes)")
    delivery_timeout_ms: int = Field(20000, ge=1000)
    transactional: bool = Field(False, description="write in transactions (idempotent, acks=all)")
    txn_records: int = Field(10, ge=1, le=100_000, description="records per transaction, over every partition")
    abort_ratio: float = Field(0.0, ge=0, le=1, description="share of transactions aborted (seeded)")
    transaction_timeout_ms: int = Field(10000, ge=1000, description="transaction.timeout.ms")
    quiet: bool = Field(False, description="send nothing on its own: only `send` steps, one record each, "
                                           "acknowledged before the step ends (a quiet pipeline)")
    # The instances a client_clock_skew aims at (the scenario marks them): a process-per-client
    # driver must start those with a clock it can move.
    _skewed_clocks: set[str] = PrivateAttr(default_factory=set)

    def clock_skewed(self, instance: str) -> bool:
        """Whether a client_clock_skew of the scenario aims at this instance."""
        return instance in self._skewed_clocks

    @property
    def instance_names(self) -> list[str]:
        """The names the run gives this spec's instances: the name alone, or name0, name1, ..."""
        return [f"{self.name}{i}" for i in range(self.count)] if self.count > 1 else [self.name]

    @model_validator(mode="before")
    @classmethod
    def _acks_as_string(cls, data):
        if isinstance(data, dict) and isinstance(data.get("acks"), int):
            data = {**data, "acks": str(data["acks"])}
        return data

    @model_validator(mode="after")
    def _idempotence_needs_acks_all(self) -> ProducerSpec:
        if self.transactional and self.acks != "all":
            raise ValueError(f"transactional: a transactional producer needs acks = \"all\" (got acks = "
                             f"\"{self.acks}\"; allowed: all)")
        if self.idempotence and self.acks != "all":
            raise ValueError("idempotence requires acks = \"all\"")
        if self.quiet and self.transactional:
            raise ValueError("quiet: send steps are for plain producers, not transactional ones (allowed: false)")
        return self


Isolation = Literal["read_uncommitted", "read_committed"]


class ConsumerSpec(_ClientTable):
    kind: ClassVar[str] = "consumer"
    count: int = Field(1, ge=0, le=8, description="readers per isolation level")
    isolation_level: Isolation | Literal["both"] | list[Isolation] = "read_uncommitted"

    @property
    def levels(self) -> list[str]:
        """The isolation levels read at, each by ``count`` consumers side by side."""
        if self.isolation_level == "both":
            return ["read_committed", "read_uncommitted"]
        return [self.isolation_level] if isinstance(self.isolation_level, str) else list(dict.fromkeys(
            self.isolation_level))


class CopierSpec(_ClientTable):
    """An exactly-once copier (consume-transform-produce): reads the scenario's topic with
    read_committed in its own group and writes a copy of each record to ``output_topic`` in
    transactions that carry the group's offsets (send_offsets_to_transaction)."""

    kind: ClassVar[str] = "copier"

    name: str = "copier"
    input_topic: str = ""  # the scenario's topic when empty
    output_topic: str = ""  # "<topic>-copy" when empty
    group: str = "kchaos-copier"
    txn_records: int = Field(100, ge=1, le=10_000, description="input records per transaction at most")
    transaction_timeout_ms: int = Field(10000, ge=1000)


MAX_MEMBERS = 6  # members of all groups together: each is a process of its own


class GroupSpec(_ClientTable):
    """A consumer group: ``members`` processes subscribed to the scenario's topic, each recording every
    record it returns (with its generation) and every commit the coordinator acknowledged."""

    kind: ClassVar[str] = "group"

    name: str = "g"
    members: int = Field(3, ge=1, le=MAX_MEMBERS)
    protocol: Literal["classic", "consumer"] = Field("classic", description="classic, or consumer (KIP-848, "
                                                     "Kafka 4.0+)")
    assignor: Literal["range", "roundrobin", "cooperative-sticky"] = Field(
        "range", description="classic only: partition.assignment.strategy")
    isolation_level: Isolation = "read_uncommitted"
    commit: Literal["auto", "sync", "async"] = Field("sync", description="auto-commit, or a commit after "
                                                     "processing, synchronous or asynchronous")
    auto_commit_interval_ms: int = Field(1000, ge=100, description="auto only: auto.commit.interval.ms")
    commit_every_records: int = Field(50, ge=1, description="sync/async: commit after this many records")
    commit_every_ms: int = Field(500, ge=10, description="sync/async: or after this long, whichever first")
    session_timeout_ms: int = Field(6000, ge=1000, description="session timeout (classic: the member's; "
                                    "consumer: the broker's group.consumer.session.timeout.ms)")
    max_poll_interval_ms: int = Field(8000, ge=1000)

    @property
    def member_names(self) -> list[str]:
        """The names faults and the history give the members: NAME-1 .. NAME-N."""
        return [f"{self.name}-{k}" for k in range(1, self.members + 1)]

    def settings(self) -> dict:
        """What run.json says of the group, for the promises: protocol, assignor, commit mode."""
        return {"name": self.name, "members": self.members, "protocol": self.protocol,
                "assignor": self.assignor if self.protocol == "classic" else "server",
                "isolation": self.isolation_level, "commit": self.commit, "config": self.config}


class ShareGroupSpec(_ClientTable):
    """A share group (KIP-932, queues): ``members`` processes subscribed to the scenario's topic
    that share its partitions record by record, each recording every record it was given (with its
    delivery count) and every acknowledgement it sent with its outcome (docs/share-groups.md)."""

    kind: ClassVar[str] = "share_group"

    name: str = "s"
    members: int = Field(2, ge=1, le=MAX_MEMBERS)
    acknowledge: Literal["explicit", "implicit"] = Field(
        "explicit", description="explicit: each record acknowledged (accept, or release / reject for the shares "
                                "below); implicit: every record accepted by the next poll or commit")
    release_ratio: float = Field(0.0, ge=0, le=1, description="explicit only: the share of deliveries released for "
                                                              "redelivery")
    reject_ratio: float = Field(0.0, ge=0, le=1, description="explicit only: the share of deliveries rejected "
                                                             "(archived as unprocessable)")
    crash_ratio: float = Field(0.0, ge=0, le=0.05, description="the share of records that are poison: a member "
                               "given one dies before committing its poll, and is started again (chosen by the "
                               "record's value, the same in every member)")
    delivery_count_limit: int = Field(5, ge=2, le=10, description="delivery attempts before a record is archived "
                                                                  "(group.share.delivery.count.limit)")
    lock_ms: int = Field(5000, ge=1000, le=3_600_000, description="how long a delivered record stays acquired "
                                                                  "(group.share.record.lock.duration.ms)")
    auto_offset_reset: Literal["earliest", "latest"] = Field(
        "earliest", description="where the group starts on a partition it has not read (share.auto.offset.reset; "
                                "Kafka's default is latest)")
    isolation_level: Isolation = "read_uncommitted"
    session_timeout_ms: int = Field(6000, ge=1000, description="group.share.session.timeout.ms")

    @property
    def member_names(self) -> list[str]:
        """The names faults and the history give the members: NAME-1 .. NAME-N."""
        return [f"{self.name}-{k}" for k in range(1, self.members + 1)]

    def settings(self) -> dict:
        """What run.json says of the group (the offsets it started from and ended at are added by the run)."""
        return {"name": self.name, "members": self.members, "acknowledge": self.acknowledge,
                "release_ratio": self.release_ratio, "reject_ratio": self.reject_ratio, "crash_ratio": self.crash_ratio,
                "delivery_count_limit": self.delivery_count_limit, "lock_ms": self.lock_ms,
                "auto_offset_reset": self.auto_offset_reset, "isolation": self.isolation_level, "config": self.config}


def share_broker_config(groups: list[ShareGroupSpec]) -> dict[str, str]:
    """The broker settings share groups need: Kafka keeps their lock duration, attempt limit and
    sessions on the broker, and its floors (15 s locks, 45 s sessions) would outlast a short run;
    the least of the groups' values is every group's. A group is given partitions only once their
    share state is initialized, and an attempt that fails (the first one often does, racing the
    creation of ``__share_group_state``) is retried after ``group.share.initialize.retry.interval.ms``:
    30 s by default, longer than a run; the broker raises anything lower to offsets.commit.timeout.ms
    (5 s)."""
    if not groups:
        return {}
    lock = min(g.lock_ms for g in groups)
    session = min(g.session_timeout_ms for g in groups)
    beat = max(500, session // 6)
    return {"group.share.record.lock.duration.ms": str(lock), "group.share.min.record.lock.duration.ms": str(lock),
            "group.share.delivery.count.limit": str(min(g.delivery_count_limit for g in groups)),
            "group.share.session.timeout.ms": str(session), "group.share.min.session.timeout.ms": str(session),
            "group.share.heartbeat.interval.ms": str(beat), "group.share.min.heartbeat.interval.ms": str(beat),
            "group.share.initialize.retry.interval.ms": "1000"}


def kip848_broker_config(session_timeout_ms: int = 6000) -> dict[str, str]:
    """KIP-848 groups keep their session on the broker: its timeout and heartbeat interval, which
    default to 45 s and 5 s and would outlast a short run, set from the groups' session_timeout_ms."""
    beat = str(max(500, session_timeout_ms // 6))
    return {"group.consumer.session.timeout.ms": str(session_timeout_ms),
            "group.consumer.min.session.timeout.ms": str(session_timeout_ms),
            "group.consumer.heartbeat.interval.ms": beat, "group.consumer.min.heartbeat.interval.ms": beat}


class TriggerSpec(_Model):
    """``[faults.on]``: fire the fault on an event after its ``at_s`` (harness/faults/triggers.py)."""

    event: str
    count: int = Field(0, ge=0, description="acked: fire at this many acknowledged records")
    producer: str = Field("", description="acked: count one producer instance's ('' = all producers')")
    partition: int = Field(-1, ge=-1, description="partition events: which partition (-1: the fault's own)")
    offset: int = Field(0, ge=0, description="hw: fire when the high watermark reaches this offset")
    fault: int = Field(-1, ge=-1, description="fault_start/fault_end: the number of the other fault")
    size: int = Field(0, ge=0, description="isr_shrink: fire once the ISR is down to at most this many members "
                                           "(0: on any shrink)")
    broker: int = Field(0, ge=0, description="isr_shrink/isr_grow/truncation: fire when this broker leaves/joins "
                                             "the ISR, or truncates its replica (0: any broker)")
    delay_s: float = Field(0.0, ge=0, description="then wait this long before the fault")

    @model_validator(mode="after")
    def _check(self) -> TriggerSpec:
        if self.event not in EVENTS:
            raise ValueError(f"event: {self.event!r} is not an event (allowed: {', '.join(EVENTS)})")
        if self.event == "acked" and self.count < 1:
            raise ValueError("count: acked needs count >= 1 (the acknowledgement to fire at)")
        if self.size and self.event != "isr_shrink":
            raise ValueError(f"size: only isr_shrink takes a size, not {self.event}")
        if self.broker and self.event not in BROKER_EVENTS:
            raise ValueError(f"broker: only {', '.join(BROKER_EVENTS)} take a broker, not {self.event}")
        if self.event in ("fault_start", "fault_end") and self.fault < 0:
            raise ValueError(f"fault: {self.event} needs fault = the number of another fault (0-based)")
        return self

    def trigger(self) -> Trigger:
        return Trigger(**self.model_dump())


# The fault settings only some kinds take, and those kinds.
KIND_KEYS = {"to": ("rolling_upgrade",), "feature": ("feature_upgrade",), "level": ("feature_upgrade",),
             "offset_s": ("clock_skew", "client_clock_skew"), "op": ("disk_error",),
             "dir": ("disk_full", "disk_error", "slow_disk", "log_dir_failure")}


class FaultSpec(_Model):
    at_s: float = Field(ge=0)
    duration_s: float = Field(5.0, ge=0)
    kind: str
    target: TargetField = Target("leader")
    partition: int = Field(0, ge=0, description="whose leader/followers 'leader' and 'follower...' mean")
    latency_ms: int = Field(200, ge=0)
    jitter_ms: int = Field(0, ge=0)
    rate_kbps: int = Field(64, ge=1)
    on: TriggerSpec | None = Field(None, description="fire on an event after at_s instead of at at_s")
    stream: Literal["both", "upstream", "downstream"] = Field(
        "both", description="cuts and delays: one direction only. upstream is what the connecting side sends (a "
                            "follower's fetch requests), downstream what it receives (the leader's fetch responses, "
                            "which carry the high watermark)")
    to: str | None = Field(None, description="rolling_upgrade: the Kafka version every node is moved to")
    feature: str | None = Field(None, description="feature_upgrade: the feature (metadata.version, "
                                                  "transaction.version, ...)")
    level: int | None = Field(None, ge=0, description="feature_upgrade: the level (default: the newest production "
                                                      "level the running version has)")
    offset_s: float | None = Field(None, description="clock_skew, client_clock_skew: how far the node's or the "
                                                     "client's wall clock jumps (seconds, forward or back)")
    op: Literal["read", "write", "fsync"] | None = Field(None, description="disk_error: the operation that fails "
                                                                          "(default write)")
    dir: int | None = Field(None, ge=1, description="disk faults: which log directory of the broker (from 1; "
                                                    "default: every one; log_dir_failure: 1)")

    @model_validator(mode="after")
    def _check(self) -> FaultSpec:
        kind = check_kind(self.kind)
        for key, kinds in KIND_KEYS.items():
            if getattr(self, key) is not None and self.kind not in kinds:
                raise ValueError(f"{key}: only {' and '.join(kinds)} take{'s' if len(kinds) == 1 else ''} {key}, not "
                                 f"{self.kind}")
        if self.kind == "rolling_upgrade" and self.to is None:
            raise ValueError(f"to: rolling_upgrade needs the version to move to (allowed: {', '.join(KAFKA_VERSIONS)})")
        if self.kind in KIND_KEYS["offset_s"] and not self.offset_s:
            raise ValueError(f"offset_s: {self.kind} needs how far the clock jumps, in seconds (allowed: any number "
                             "but 0, e.g. 3600 forward or -600 back)")
        if self.kind == "feature_upgrade" and self.feature is None:
            raise ValueError("feature: feature_upgrade needs the feature to upgrade (allowed: a feature the version "
                             "has, e.g. metadata.version, transaction.version, group.version, share.version)")
        if self.stream != "both" and not kind.directional:
            directional = [k for k, f in FAULTS.items() if f.directional]
            raise ValueError(f"stream: {self.stream} applies to cuts and delays of one direction only, not "
                             f"{self.kind} (allowed kinds: {', '.join(directional)})")
        return self


class GeneratorSpec(_Model):
    """A seeded random schedule: faults of these kinds, at random gaps, on random targets."""

    kinds: list[str] = Field(default_factory=lambda: ["kill", "pause", "isolate"])
    targets: list[TargetField] = Field(default_factory=lambda: [Target.parse(t) for t in ("leader", "follower",
                                                                                              "random")])
    gap_s: tuple[float, float] = (3.0, 6.0)
    duration_s: tuple[float, float] = (2.0, 5.0)
    start_s: float = 3.0
    latency_ms: int = 200
    jitter_ms: int = 50
    rate_kbps: int = 64
    offset_s: float = Field(600.0, description="clock_skew: how far a drawn skew moves the clock")
    chain: float = Field(0.0, ge=0, le=1, description="the share of drawn faults fired on a trigger: the previous "
                                                      "drawn fault's start, after a delay from chain_delay_s")
    chain_delay_s: tuple[float, float] = Field((0.0, 2.0), description="the range that delay is drawn from")

    @model_validator(mode="after")
    def _check(self) -> GeneratorSpec:
        bad = [k for k in self.kinds if k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"kinds {bad} are not faults (allowed: {', '.join(FAULT_KINDS)})")
        for k in self.kinds:
            if not self.targets_for(k):
                wanted = "a client:NAME target" if k in CLIENT_FAULTS else "a target other than client:NAME"
                raise ValueError(f"kinds: {k} needs {wanted} in targets (allowed: {TARGET_HELP})")
        return self

    def targets_for(self, kind: str, mode: str = "") -> list[Target]:
        """The targets a fault of this kind can be drawn on: client faults on clients, the rest on brokers
        and (kinds that act on them, given the cluster's ``mode``) on coordination nodes."""
        return [t for t in self.targets if (t.role == "client") == (kind in CLIENT_FAULTS)
                and (not mode or FAULTS[kind].on_nodes or not t.on_coordination(mode))
                and not (FAULTS[kind].disk and mode == "zk" and t.on_coordination(mode))]


class HuntSpec(_Model):
    """``[hunt]``: the bounds ``kchaos hunt`` draws this scenario's fault schedules within
    (harness/hunt/space.py). Every key is optional; what is absent is the whole vocabulary the
    scenario's configuration allows."""

    kinds: list[str] | None = Field(None, description="fault kinds to draw (default: every kind the scenario "
                                                       "takes)")
    targets: list[TargetField] | None = Field(None, description="targets to draw (default: every role the "
                                                                "scenario has, and each of its clients)")
    faults: tuple[int, int] = Field((1, 4), description="how many faults a schedule has (min, max)")
    fault_duration_s: tuple[float, float] = (1.0, 8.0)
    duration_s: tuple[float, float] | None = Field(None, description="the workload's duration (default: the "
                                                                     "scenario's)")
    rate: tuple[float, float] | None = Field(None, description="each producer's rate (default: as written)")
    triggers: float = Field(0.5, ge=0, le=1, description="the share of faults fired on a protocol event")
    latency_ms: tuple[int, int] = (50, 1000)

    @model_validator(mode="after")
    def _check(self) -> HuntSpec:
        bad = [k for k in self.kinds or [] if k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"kinds {bad} are not faults (allowed: {', '.join(FAULT_KINDS)})")
        for key in ("faults", "fault_duration_s", "duration_s", "rate", "latency_ms"):
            lo_hi = getattr(self, key)
            if lo_hi is not None and not 0 <= lo_hi[0] <= lo_hi[1]:
                raise ValueError(f"{key}: {list(lo_hi)} is not [min, max] with 0 <= min <= max")
        return self


class Scenario(_Model):
    name: str
    description: str = ""
    kafka_version: str = DEFAULT_VERSION
    mode: Literal["zk", "kraft"] = Field("kraft", description="default: the version's (versions.default_mode)")
    brokers: int = Field(3, ge=1, le=9)
    log_dirs: int = Field(1, ge=1, le=4, description="log directories per broker (JBOD)")
    controllers: Literal[1, 3, 5] | None = Field(None, description="KRaft controllers (default 3)")
    zookeepers: Literal[1, 3] | None = Field(None, description="ZooKeeper servers (default 3)")
    racks: list[str] | None = None
    duration_s: float = Field(20.0, gt=0, le=3600)
    seed: int = 1
    cluster: dict = Field(default_factory=dict, description="ClusterSettings fields: timeouts, heap")
    broker_config: PropMap = Field(default_factory=dict)
    topic: TopicSpec = Field(default_factory=TopicSpec)
    producers: list[ProducerSpec] = Field(default_factory=lambda: [ProducerSpec()])
    consumers: ConsumerSpec = Field(default_factory=ConsumerSpec)
    copier: CopierSpec | None = None
    groups: list[GroupSpec] = Field(default_factory=list)
    share_groups: list[ShareGroupSpec] = Field(default_factory=list)
    faults: list[FaultSpec] = Field(default_factory=list)
    generator: GeneratorSpec | None = None
    hunt: HuntSpec | None = None
    eligible_leader_replicas: bool | None = None  # None: the version's default (on for KRaft from 4.1)
    features: dict[str, int] = Field(default_factory=dict, description="feature levels the KRaft cluster is "
                                     "formatted with, e.g. {\"transaction.version\" = 1}; the rest: the version's "
                                     "defaults (harness/cluster/feature_levels.py)")
    client: str = Field(DEFAULT_CLIENT, description="the client library of every producer, consumer, group and the "
                                                    f"copier that names none: {names()} (harness/clients/registry.py)")
    client_version: VersionText | None = Field(None, description="the version of that library (java: "
                                                                 "kafka-clients; default: the broker's version)")

    @field_validator("client")
    @classmethod
    def _library_name(cls, v: str) -> str:
        return canonical(v)

    @model_validator(mode="before")
    @classmethod
    def _version_mode(cls, data):
        """A scenario that names no mode runs in its version's (ZooKeeper on 3.x, KRaft on 4.x)."""
        return with_default_mode(data)

    def library(self, table: _ClientTable) -> tuple[str, str]:
        """The client library a table's clients are made with, and its version: the table's own, else
        the scenario's, a version defaulting to the broker's (a driver built per Kafka version, as the
        Java client's is, is taken at it; librdkafka is the one installed, whatever is named)."""
        if table.client is None and self.client not in libraries_for(table.kind):  # the first library that makes it
            return libraries_for(table.kind)[0], table.client_version or self.kafka_version
        return table.client or self.client, self._explicit_version(table) or self.kafka_version

    def _explicit_version(self, table: _ClientTable) -> str | None:
        """The client version a scenario names for a table: the table's, else the scenario's for a
        table of the scenario's library."""
        return table.client_version or (self.client_version if (table.client or self.client) == self.client else None)

    @property
    def client_tables(self) -> list[tuple[str, _ClientTable]]:
        """Every client table by its dotted key: producers, the consumers, groups, the copier."""
        tables: list[tuple[str, _ClientTable]] = [(f"producers.{i}", p) for i, p in enumerate(self.producers)]
        tables += [("consumers", self.consumers)] + [(f"groups.{i}", g) for i, g in enumerate(self.groups)]
        tables += [(f"share_groups.{i}", g) for i, g in enumerate(self.share_groups)]
        return tables + ([("copier", self.copier)] if self.copier is not None else [])

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.kafka_version not in KAFKA_VERSIONS:
            raise ValueError(f"kafka_version: {self.kafka_version!r} has no image recipe (allowed: "
                             f"{', '.join(KAFKA_VERSIONS)})")
        if self.mode not in KAFKA_VERSIONS[self.kafka_version]:
            raise ValueError(f"mode: {self.mode!r} is not available on Kafka {self.kafka_version} (allowed: "
                             f"{', '.join(KAFKA_VERSIONS[self.kafka_version])})")
        if why := feature_levels.refusal(self.kafka_version, self.mode, self.features):
            raise ValueError(why)
        if self.topic.replication_factor > self.brokers:
            raise ValueError(f"topic.replication_factor: {self.topic.replication_factor} is greater than brokers "
                             f"= {self.brokers} (allowed: 1..{self.brokers})")
        if self.topic.min_insync_replicas > self.topic.replication_factor:
            raise ValueError(f"topic.min_insync_replicas: {self.topic.min_insync_replicas} is greater than "
                             f"topic.replication_factor = {self.topic.replication_factor}")
        ibp = self.broker_config.get("inter.broker.protocol.version", "")
        if ibp.startswith("0.") and not self.kafka_version.startswith("2."):
            raise ValueError(f"broker_config.inter.broker.protocol.version: {ibp} (leader epochs off) is only run on "
                             f"Kafka 2.x here (allowed with kafka_version: "
                             f"{', '.join(v for v in KAFKA_VERSIONS if v.startswith('2.'))})")
        racks = set(self.racks or [])
        self._check_quorum_size()
        for i, f in enumerate(self.faults):
            self._check_client_target(i, f)
            self._check_quorum_target(f"faults.{i}.target", f.kind, f.target)
            where = f"faults.{i}.target"
            if f.target.role == "broker" and not 1 <= f.target.number <= self.brokers:
                raise ValueError(f"{where}: broker {f.target.number} does not exist (allowed: broker:1..broker:"
                                 f"{self.brokers})")
            if f.target.role == "rack" and f.target.rack not in racks:
                raise ValueError(f"{where}: rack {f.target.rack!r} is not in racks (allowed: "
                                 f"{', '.join(sorted(racks)) or 'none: set racks first'})")
            self._check_log_dir(i, f)
            if f.partition >= self.topic.partitions:
                raise ValueError(f"faults.{i}.partition: {f.partition} does not exist (allowed: 0.."
                                 f"{self.topic.partitions - 1})")
            if f.at_s + f.duration_s > self.duration_s:
                raise ValueError(f"faults.{i}: ends at {f.at_s + f.duration_s:g} s, after duration_s = "
                                 f"{self.duration_s:g}")
        self._check_upgrades()
        self._check_triggers()
        self._check_generator_clients()
        self._check_share_groups()  # before the configs: a share group's library must have a share consumer
        self._check_client_configs()
        names = [p.name for p in self.producers]
        if len(set(names)) != len(names):
            raise ValueError(f"producers: names must differ (got {names})")
        self._check_copier(names)
        self._check_groups()
        skewed = {f.target.client for f in self.faults if f.kind == "client_clock_skew"}
        for p in self.producers:
            p._skewed_clocks = skewed & set(p.instance_names)
        try:
            self.cluster_settings()  # validates the cluster table too
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(x) for x in err["loc"])
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
            raise ValueError(f"cluster.{key}: {msg}" if key else f"cluster: {msg}") from None
        return self

    def _check_upgrades(self) -> None:
        """Each rolling upgrade moves the cluster to a later version that runs in its mode, each after
        the one before (in the order of ``faults``); each feature upgrade names a feature and level the
        version running by then has (feature_levels.upgrade_refusal)."""
        running = self.kafka_version
        for i, f in enumerate(self.faults):
            if f.kind == "rolling_upgrade":
                allowed = upgrades_from(running, self.mode)
                if f.to not in allowed:
                    raise ValueError(f"faults.{i}.to: {f.to!r} is not a later version of a {self.mode} cluster running "
                                     f"{running} (allowed: {', '.join(allowed) or 'none: it runs the newest'})")
                running = f.to
            elif f.kind == "feature_upgrade" and (why := feature_levels.upgrade_refusal(
                    f"faults.{i}", self.kafka_version, running, self.mode, self.features, f.feature, f.level)):
                raise ValueError(why)

    @property
    def upgrades(self) -> list[str]:
        """The versions the rolling upgrades move the cluster to, in order: its image holds them all."""
        return [f.to for f in self.faults if f.kind == "rolling_upgrade" and f.to is not None]

    def _check_client_configs(self) -> None:
        """Each table's client library has a driver, runs at the version named, and takes the table's ``config``."""
        if self.client not in LIBRARIES:
            raise ValueError(f"client: {self.client!r} has no driver (allowed: {names()})")
        if self.client_version is not None and (why := version_refusal(self.client, self.client_version)):
            raise ValueError(why)
        for where, t in self.client_tables:
            if t.client is not None and t.client not in LIBRARIES:
                raise ValueError(f"{where}.client: {t.client!r} has no driver (allowed: {names()})")
            name, version = self.library(t)
            if t.client_version is not None and (why := version_refusal(name, t.client_version)):
                raise ValueError(f"{where}.{why}")
            if why := refusal(name, t, version):
                raise ValueError(f"{where}.{why}")

    def _check_quorum_size(self) -> None:
        if why := quorum_size_refused(self.mode, self.controllers, self.zookeepers):
            raise ValueError(why)

    @property
    def quorum_size(self) -> int:
        return (self.controllers if self.mode == "kraft" else self.zookeepers) or 3

    def _check_quorum_target(self, where: str, kind: str, t: Target) -> None:
        """Coordination targets exist in this mode and quorum; a kind that acts on brokers' own links
        does not take them; KIP-853 changes need a controller on a version that has them."""
        if t.role == "zookeeper" and self.mode != "zk":
            raise ValueError(f"{where}: {t} is a ZooKeeper server; this scenario is KRaft (allowed: controller, "
                             f"controller:1..{self.quorum_size}, quorum_majority)")
        if t.role == "controller" and t.number and self.mode != "kraft":
            raise ValueError(f"{where}: {t} names a KRaft controller; in ZooKeeper mode 'controller' is the broker "
                             f"that is Kafka's controller (allowed: controller, zookeeper, zookeeper:1.."
                             f"{self.quorum_size}, quorum_majority)")
        spares = self.spare_controllers
        top = self.quorum_size + spares if t.role == "controller" else self.quorum_size
        if t.role in ("controller", "zookeeper") and t.number > top:
            raise ValueError(f"{where}: {t} does not exist (allowed: {t.role}:1..{t.role}:{top})")
        kind_ = FAULTS[kind]
        if kind_.disk and self.mode == "kraft" and t.on_coordination(self.mode) and kind == "log_dir_failure":
            raise ValueError(f"{where}: log_dir_failure fails one of a broker's log directories; a KRaft controller "
                             f"has one (allowed: leader, follower, followers, random, broker:N, rack:NAME)")
        if kind_.disk and self.mode == "zk" and t.on_coordination(self.mode):
            raise ValueError(f"{where}: {kind} acts on a broker's or KRaft controller's log directory, not on {t} "
                             f"(allowed: leader, follower, followers, controller, random, broker:N, rack:NAME)")
        if t.on_coordination(self.mode) and not kind_.on_nodes:
            allowed = [k for k, f in FAULTS.items() if f.on_nodes and k not in CLIENT_FAULTS]
            raise ValueError(f"{where}: {kind} acts on a broker's own links, not on {t} (allowed kinds there: "
                             f"{', '.join(allowed)})")
        if kind_.quorum_change:
            self._check_quorum_change(where, kind, t)

    def _check_quorum_change(self, where: str, kind: str, t: Target) -> None:
        if not supports_dynamic_quorum(self.mode, self.kafka_version):
            allowed = [v for v, modes in KAFKA_VERSIONS.items() for m in modes if supports_dynamic_quorum(m, v)]
            raise ValueError(f"{where}: {kind} needs KIP-853 (KRaft on Kafka 3.9 or later), not {self.mode} on "
                             f"{self.kafka_version} (allowed: mode = \"kraft\" with kafka_version "
                             f"{', '.join(allowed)})")
        if t.role != "controller":
            raise ValueError(f"{where}: {kind} acts on a controller, not {t} (allowed: controller, controller:K)")
        if kind == "add_controller" and t.number <= self.quorum_size:
            raise ValueError(f"{where}: add_controller needs a spare controller, controller:K with K > controllers "
                             f"= {self.quorum_size} (allowed: controller:{self.quorum_size + 1}.."
                             f"controller:{self.quorum_size + 2})")

    @property
    def spare_controllers(self) -> int:
        """Controllers an add_controller fault names past the voters: started as observers."""
        ks = [f.target.number for f in self.faults if f.kind == "add_controller" and f.target.role == "controller"]
        return max([0, *(k - self.quorum_size for k in ks)])

    @property
    def dynamic_quorum(self) -> bool:
        """A quorum change among the faults (or the generator's kinds) needs a KIP-853 quorum."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return any(FAULTS[k].quorum_change for k in kinds if k in FAULTS)

    def _check_log_dir(self, i: int, f: FaultSpec) -> None:
        """A disk fault names a log directory the broker has; a failed directory needs another one."""
        if f.kind == "log_dir_failure" and self.log_dirs < 2:
            raise ValueError(f"faults.{i}: log_dir_failure fails one log directory of several, and brokers have "
                             f"log_dirs = 1 (allowed: log_dirs = 2..4; one directory failing is disk_error)")
        if f.dir is not None and f.dir > self.log_dirs:
            raise ValueError(f"faults.{i}.dir: {f.dir} does not exist (allowed: 1..{self.log_dirs})")

    @property
    def faults_disks(self) -> bool:
        """A disk fault among the faults (or the generator's kinds) needs log directories it can fail."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return any(FAULTS[k].disk for k in kinds if k in FAULTS)

    @property
    def skews_clocks(self) -> bool:
        """A clock fault among the faults (or the generator's kinds) needs nodes started with skewable clocks."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return "clock_skew" in kinds

    def _check_client_target(self, i: int, f: FaultSpec) -> None:
        """Coordinator targets name a client or group of this scenario; client faults take a client
        target and nothing else, and only clients they can act on (``_client_refuses``)."""
        where, t = f"faults.{i}.target", f.target
        if t.role == "group_coordinator":
            groups = [g.name for g in [*self.groups, *self.share_groups]]
            if not groups or (t.client and t.client not in groups):
                raise ValueError(f"{where}: {t} needs a group of this scenario (allowed groups: "
                                 f"{', '.join(groups) or 'none: add a [[groups]] table'})")
        if t.role == "share_coordinator":
            shares = [g.name for g in self.share_groups]
            if not shares or (t.client and t.client not in shares):
                raise ValueError(f"{where}: {t} needs a share group of this scenario (allowed: "
                                 f"{', '.join(shares) or 'none: add a [[share_groups]] table'})")
        if (f.kind in CLIENT_FAULTS) != (t.role == "client"):
            raise ValueError(f"{where}: {f.kind} takes a client:NAME target and client:NAME only client faults "
                             f"({', '.join(sorted(CLIENT_FAULTS))}) (allowed clients: "
                             f"{', '.join(self.client_names) or 'none'})")
        txn = self.transactional_clients
        if t.role == "txn_coordinator" and (not txn or (t.client and t.client not in txn)):
            raise ValueError(f"{where}: {t} needs a transactional client of this scenario (allowed: "
                             f"{', '.join(txn) or 'none: make a producer transactional or add a copier'})")
        if t.role == "client" and (why := self._client_refuses(t.client, f.kind)):
            raise ValueError(f"{where}: {why}")

    def client_roles(self, name: str) -> set[str]:
        """The roles (faults.CLIENT_ROLES) client ``name`` of this scenario has."""
        quiet = {n for p in self.producers if p.quiet for n in p.instance_names}
        roles = {"any"} | ({"member"} if name in self.member_names else set())
        roles |= {"transactional"} if name in self.transactional_clients else set()
        plain = {n for p in self.producers if not p.transactional for n in p.instance_names}
        return roles | ({"quiet"} if name in quiet else set()) | ({"producer"} if name in plain else set())

    def _client_refuses(self, name: str, kind: str) -> str | None:
        """Why client ``name`` cannot take a ``kind`` fault, or None: the kind's registry entry names
        the roles of client it acts on (faults.FaultKind.clients)."""
        if name not in self.client_names:
            return f"{name!r} is not a client of this scenario (allowed: {', '.join(self.client_names)})"
        wanted = FAULTS[kind].clients
        if self.client_roles(name) & wanted:
            return None
        allowed = [n for n in self.client_names if self.client_roles(n) & wanted]
        return (f"{kind} acts on {' or '.join(ROLE_WORDS[r] for r in sorted(wanted))}, not {name!r} (allowed: "
                f"{', '.join(allowed) or 'none'})")

    def _check_triggers(self) -> None:
        """A trigger names a producer instance, a partition and another fault that exist, and no
        faults wait for each other in a circle."""
        producers = [n for p in self.producers for n in p.instance_names]
        waits: dict[int, int] = {}
        for i, f in enumerate(self.faults):
            t, where = f.on, f"faults.{i}.on"
            if t is None:
                continue
            if t.producer and t.producer not in producers:
                raise ValueError(f"{where}.producer: {t.producer!r} is not a producer of this scenario (allowed: "
                                 f"{', '.join(producers)})")
            if t.broker > self.brokers:
                raise ValueError(f"{where}.broker: {t.broker} is not a broker of this scenario (allowed: "
                                 f"1..{self.brokers})")
            if t.event in PARTITION_EVENTS and t.partition >= self.topic.partitions:
                raise ValueError(f"{where}.partition: {t.partition} does not exist (allowed: 0.."
                                 f"{self.topic.partitions - 1})")
            if t.fault >= 0:
                if t.fault >= len(self.faults) or t.fault == i:
                    raise ValueError(f"{where}.fault: {t.fault} is not another fault (allowed: "
                                     f"{', '.join(str(k) for k in range(len(self.faults)) if k != i) or 'none'})")
                waits[i] = t.fault
        if (loop := cycle(waits)) is not None:
            raise ValueError(f"faults: {' -> '.join(str(k) for k in loop)} trigger each other in a cycle "
                             "(allowed: faults that wait for faults that do not wait for them)")

    def _check_generator_clients(self) -> None:
        g = self.generator
        if g is None:
            return
        for t in g.targets:
            for kind in [k for k in g.kinds if k in CLIENT_FAULTS] if t.role == "client" else []:
                if why := self._client_refuses(t.client, kind):
                    raise ValueError(f"generator.targets: {why}")
            if t.role != "client":
                for kind in [k for k in g.kinds if k not in CLIENT_FAULTS and FAULTS[k].on_nodes]:
                    self._check_quorum_target("generator.targets", kind, t)
        for kind in g.kinds:
            if not g.targets_for(kind, self.mode):
                raise ValueError(f"generator.kinds: {kind} acts on a broker's own links and no target of "
                                 f"generator.targets is a broker (allowed: {TARGET_HELP})")

    def _check_groups(self) -> None:
        """Group names differ from each other and the copier's; the consumer protocol needs Kafka 4;
        every member is a process, so their number is bounded."""
        names = [g.name for g in self.groups] + ([self.copier.group] if self.copier is not None else [])
        if len(set(names)) != len(names):
            raise ValueError(f"groups: names must differ from each other and from copier.group (got {names})")
        for i, g in enumerate(self.groups):
            if g.protocol == "consumer" and int(self.kafka_version.split(".")[0]) < 4:
                raise ValueError(f"groups.{i}.protocol: 'consumer' (KIP-848) needs Kafka 4.0 or later, not "
                                 f"{self.kafka_version} (allowed here: classic)")
        total = sum(g.members for g in [*self.groups, *self.share_groups])
        if total > MAX_MEMBERS:
            raise ValueError(f"groups: {total} members in all, share groups' included (allowed: at most {MAX_MEMBERS})")
        clash = set(self.member_names) & set(n for p in self.producers for n in p.instance_names)
        if clash:
            raise ValueError(f"groups: member names {sorted(clash)} are producer names too (names must differ)")

    def _check_share_groups(self) -> None:
        """Share groups on a version and feature level that has them, with names of their own, a
        share consumer's library, and release and reject shares an explicit member can draw."""
        if not self.share_groups:
            return
        level = self.features.get("share.version", feature_levels.defaults(self.kafka_version).get("share.version", 0))
        if self.mode != "kraft" or level < 1:
            have = [v for v, modes in KAFKA_VERSIONS.items() if "kraft" in modes
                    and "share.version" in feature_levels.levels(v)]
            on = [f"{v} (with features = {{ \"share.version\" = 1 }})"
                  if feature_levels.defaults(v)["share.version"] < 1 else v for v in have]
            at = f" at share.version {level}" if self.mode == "kraft" and "share.version" in feature_levels.levels(
                self.kafka_version) else ""
            raise ValueError(f"share_groups: Kafka {self.kafka_version} {self.mode}{at} has no share groups (allowed: "
                             f"mode = \"kraft\" with kafka_version {', '.join(on)})")
        names = [g.name for g in self.share_groups]
        group_names = [g.name for g in self.groups] + ([self.copier.group] if self.copier is not None else [])
        if len(set(names)) != len(names) or set(names) & set(group_names):
            raise ValueError(f"share_groups: names must differ from each other and from the groups' (got {names})")
        for i, g in enumerate(self.share_groups):
            library = self.library(g)[0]
            if library not in libraries_for(g.kind):
                raise ValueError(f"share_groups.{i}.client: {library!r} has no share consumer here (allowed: "
                                 f"{', '.join(libraries_for(g.kind))})")
            if g.acknowledge == "implicit" and (g.release_ratio or g.reject_ratio):
                raise ValueError(f"share_groups.{i}: release_ratio and reject_ratio need acknowledge = \"explicit\" "
                                 "(an implicit member accepts every record)")
            if g.release_ratio + g.reject_ratio > 1:
                total = g.release_ratio + g.reject_ratio
                raise ValueError(f"share_groups.{i}: release_ratio + reject_ratio = {total:g} (allowed: at most 1)")

    @property
    def client_names(self) -> list[str]:
        """Every producer instance, the copier and every group member, as the run names them."""
        names = [n for p in self.producers for n in p.instance_names]
        return names + ([self.copier.name] if self.copier is not None else []) + self.member_names

    @property
    def member_names(self) -> list[str]:
        return [n for g in [*self.groups, *self.share_groups] for n in g.member_names]

    @property
    def transactional_clients(self) -> list[str]:
        """Names of the transactional producer instances and the copier, as the run names them."""
        names = [n for p in self.producers if p.transactional for n in p.instance_names]
        return names + ([self.copier.name] if self.copier is not None else [])

    @property
    def private_clients(self) -> list[str]:
        """Clients a link fault aims at: each gets links of its own (a listener and proxies)."""
        aimed = [f.target.client for f in self.faults if self._on_links(f.kind, f.target.client)]
        if self.generator is not None:
            aimed += [t.client for t in self.generator.targets for k in self.generator.kinds
                      if t.role == "client" and self._on_links(k, t.client)]
        return list(dict.fromkeys([*self.cluster.get("private_clients", []), *aimed]))

    def _on_links(self, kind: str, client: str) -> bool:
        """Whether a ``kind`` fault on ``client`` acts on its own links (a member's pause is its process's)."""
        return kind in CLIENT_LINK_FAULTS and not (kind in MEMBER_FAULTS and client in self.member_names)

    def _check_copier(self, producer_names: list[str]) -> None:
        c = self.copier
        if c is None:
            return
        if c.input_topic and c.input_topic != self.topic.name:
            raise ValueError(f"copier.input_topic: {c.input_topic!r} is not a topic of this scenario (allowed: "
                             f"{self.topic.name})")
        if c.output_topic == self.topic.name:
            raise ValueError(f"copier.output_topic: {c.output_topic!r} is the input topic (allowed: any other name)")
        if c.name in producer_names:
            raise ValueError(f"copier.name: {c.name!r} is a producer's name too (names must differ)")

    @property
    def transactional(self) -> bool:
        return self.copier is not None or any(p.transactional for p in self.producers)

    def group_broker_config(self) -> dict[str, str]:
        """The broker settings the consumer-protocol groups and the share groups need (none without
        such a group)."""
        sessions = [g.session_timeout_ms for g in self.groups if g.protocol == "consumer"]
        return {**(kip848_broker_config(min(sessions)) if sessions else {}), **share_broker_config(self.share_groups)}

    def cluster_settings(self) -> ClusterSettings:
        extra = {**self.cluster, "private_clients": self.private_clients}
        if self.dynamic_quorum:
            extra |= {"dynamic_quorum": True, "spare_controllers": self.spare_controllers}
        if self.skews_clocks:
            extra["skewable_clocks"] = True
        if self.faults_disks:
            extra["faultable_disks"] = True
        if self.log_dirs > 1:
            extra["log_dirs"] = self.log_dirs
        extra |= {"controllers": self.controllers} if self.mode == "kraft" else {"zookeepers": self.zookeepers}
        return ClusterSettings(kafka_version=self.kafka_version, mode=self.mode, brokers=self.brokers,
                               racks=self.racks, broker_config={**self.group_broker_config(), **self.broker_config},
                               eligible_leader_replicas=self.eligible_leader_replicas, features=self.features,
                               **extra)


def _set_dotted(data: dict, dotted: str, raw: str, source: str) -> None:
    """Apply one --set KEY=VALUE; VALUE is parsed as a TOML value, else taken as a string."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    parts = dotted.split(".")
    # Kafka property names contain dots: below a free-form map the rest of the path is one key.
    for i, key in enumerate(parts[:-1]):
        if key in FREEFORM_MAPS:
            parts = [*parts[: i + 1], ".".join(parts[i + 1:])]
            break
    node = data
    for i, key in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise ScenarioError(f"{source}: --set {dotted}: {'.'.join(parts[:i + 1])} is not an index of the "
                                    f"list (allowed: 0..{len(node) - 1})")
            node = node[int(key)]
        else:
            node = node.setdefault(key, [] if nxt.isdigit() else {})
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ScenarioError(f"{source}: --set {dotted}: not an index of the list (allowed: 0..{len(node) - 1})")
        node[int(last)] = value
    else:
        node[last] = value


def _explain(e: ValidationError, source: str) -> str:
    lines = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "literal_error":
            msg = f"{err.get('input')!r} is not allowed ({err['msg'].removeprefix('Input should be ')})"
        lines.append(f"{source}: {loc + ': ' if loc else ''}{msg}")
    return "\n".join(lines)


def load(path: str | Path, overrides: list[str] | None = None, **fields) -> Scenario:
    """Read, override and validate a scenario; raise ScenarioError naming the file and key."""
    path = Path(path)
    if not path.exists():
        raise ScenarioError(f"{path}: no such scenario file")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML ({e})") from e
    data = copy.deepcopy(data)
    data.setdefault("name", path.stem)
    for k, v in fields.items():
        if v is not None:
            data[k] = v
    for item in overrides or []:
        if "=" not in item:
            raise ScenarioError(f"{path}: --set {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        _set_dotted(data, k.strip(), v.strip(), str(path))
    return validate_tables(str(path), data)


def validate_tables(source: str, data: dict) -> Scenario:
    """A scenario from its tables (a file's, or a pytest workload's); ScenarioError names ``source``
    and the key."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(_explain(e, source)) from e
