"""A scenario's workload tables: the topic, producers, consumers, the copier, consumer groups and
share groups, each a typed model validated on its own; ``Scenario`` checks how they fit together."""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from harness.clients.registry import (
    canonical,
    names,
)


def _props(v: object) -> object:
    """Kafka properties are strings; TOML gives ints and bools (true -> "true")."""
    if isinstance(v, dict):
        return {str(k): (str(x).lower() if isinstance(x, bool) else str(x)) for k, x in v.items()}
    return v


PropMap = Annotated[dict[str, str], BeforeValidator(_props)]

UNLIMITED_RATE = 1e6  # a producer rate this high means as fast as the client goes (both drivers read it so)


class ScenarioError(ValueError):
    """Bad input: names the file, the key and what is allowed."""


def keys_allowed(model: type[BaseModel], loc: tuple) -> list[str]:
    """The keys the table at ``loc`` takes (``loc``: a validation error's location, its last part a key
    the table does not know), walking ``model``'s fields and the tables inside them; [] where a part
    is not a table's (a free-form map)."""
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        inner = _table_in(field.annotation) if field is not None else None
        if inner is None:
            return []
        model = inner
    return sorted(model.model_fields)


def _table_in(annotation: object) -> type[BaseModel] | None:
    """The model a field's type holds (itself, or inside a list, a tuple, an Optional or Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _table_in(arg)
        if found is not None:
            return found
    return None


def unknown_key(model: type[BaseModel], loc: tuple) -> str:
    """What bad input says of a key its table does not take: the keys it does."""
    allowed = keys_allowed(model, loc)
    return f"unknown key (allowed: {', '.join(allowed)})" if allowed else "unknown key"


# A version as text: `--set client_version=4.1` reads as a number.
VersionText = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, int | float) else v)]


class ScenarioTable(BaseModel):
    """A table of a scenario file: a key it does not name is refused."""

    model_config = ConfigDict(extra="forbid")


class ClientTable(ScenarioTable):
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


class HoldsClusterIds(ClientTable):
    """A table whose clients hold ids on the cluster that outlive the run: a group's ``group.id``
    (its committed offsets, generation and members), a transactional client's ``transactional.id``
    (its producer epoch, its open transaction)."""

    ids_suffix: str = Field("", pattern=r"^[a-zA-Z0-9._-]*$", description=(
        "appended to every id its clients hold on the cluster (group.id, transactional.id); a run on a kept "
        "cluster gets one of its own, so that nothing an earlier run left there is its (default: none)"))

    def on_the_cluster(self, name: str) -> str:
        """``name`` as the id the cluster knows it by."""
        return name + self.ids_suffix


class GroupOfMembers(HoldsClusterIds):
    """A consumer group or a share group: ``members`` processes under one group.id made of its
    ``name`` (each kind declares both fields, with its own default name)."""

    name: str
    members: int

    @property
    def member_names(self) -> list[str]:
        """The names faults and the history give the members: NAME-1 .. NAME-N."""
        return [f"{self.name}-{k}" for k in range(1, self.members + 1)]

    @property
    def group_id(self) -> str:
        """Its group.id: its name as the cluster knows it."""
        return self.on_the_cluster(self.name)


# Kafka's rule for topic names (org.apache.kafka.common.internals.Topic.validate): 1 to 249 of
# these characters, and neither "." nor "..".
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class TopicSpec(ScenarioTable):
    name: str = "chaos"
    partitions: int = Field(3, ge=1, le=64)
    replication_factor: int = Field(3, ge=1)
    min_insync_replicas: int = Field(2, ge=1)
    unclean_leader_election: bool = False
    config: PropMap = Field(default_factory=dict, description="any other topic config")

    @field_validator("name")
    @classmethod
    def _kafka_topic_name(cls, v: str) -> str:
        if not TOPIC_NAME.fullmatch(v) or v in (".", ".."):
            raise ValueError(f"{v!r} is not a Kafka topic name (allowed: 1 to 249 of a-z A-Z 0-9 . _ -, not "
                             "'.' or '..')")
        return v

    def topic_config(self) -> dict[str, str]:
        return {
            "min.insync.replicas": str(self.min_insync_replicas),
            "unclean.leader.election.enable": str(self.unclean_leader_election).lower(),
            **self.config,
        }


def transactional_id(instance: str) -> str:
    """The transactional.id a run gives a transactional client instance (a producer's or the copier's),
    whatever its library: what the nemesis looks its coordinator up by, and what kchaos-epochs drives."""
    return f"kchaos-{instance}"


class ProducerSpec(HoldsClusterIds):
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
    epoch_from: int | None = Field(
        None, ge=1, le=32766, description="transactional: before the run, its transactional.id's producer epoch is "
                                          "driven to this value by InitProducerId requests (docker/epochs), so its "
                                          "commits and aborts reach the epoch's limit (32767) within the run")
    quiet: bool = Field(False, description="send nothing on its own: only `send` steps, one record each, "
                                           "acknowledged before the step ends (a quiet pipeline)")
    # The instances a client_clock_skew aims at (the scenario marks them): a process-per-client
    # driver must start those with a clock it can move.
    _skewed_clocks: set[str] = PrivateAttr(default_factory=set)

    def transactional_id_of(self, instance: str) -> str:
        """The transactional.id of one of its instances (transactional producers only use one)."""
        return self.on_the_cluster(transactional_id(instance))

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
        if self.epoch_from is not None and not self.transactional:
            raise ValueError("epoch_from: only a transactional producer has a producer epoch that its transactions "
                             "bump (allowed: transactional = true)")
        if self.quiet and self.transactional:
            raise ValueError("quiet: send steps are for plain producers, not transactional ones (allowed: false)")
        return self


Isolation = Literal["read_uncommitted", "read_committed"]


class ConsumerSpec(ClientTable):
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


class CopierSpec(HoldsClusterIds):
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

    @property
    def group_id(self) -> str:
        """The group.id its consumer commits under: ``group`` as the cluster knows it."""
        return self.on_the_cluster(self.group)

    @property
    def transactional_id(self) -> str:
        return self.on_the_cluster(transactional_id(self.name))


MAX_MEMBERS = 6  # members of all groups together: each is a process of its own


class GroupSpec(GroupOfMembers):
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

    def settings(self) -> dict:
        """What run.json says of the group, for the promises: protocol, assignor, commit mode."""
        return {"name": self.name, "members": self.members, "protocol": self.protocol,
                "assignor": self.assignor if self.protocol == "classic" else "server",
                "isolation": self.isolation_level, "commit": self.commit, "config": self.config}


class ShareGroupSpec(GroupOfMembers):
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

    def settings(self) -> dict:
        """What run.json says of the group (the offsets it started from and ended at are added by the run)."""
        return {"name": self.name, "members": self.members, "acknowledge": self.acknowledge,
                "release_ratio": self.release_ratio, "reject_ratio": self.reject_ratio, "crash_ratio": self.crash_ratio,
                "delivery_count_limit": self.delivery_count_limit, "lock_ms": self.lock_ms,
                "auto_offset_reset": self.auto_offset_reset, "isolation": self.isolation_level, "config": self.config}


