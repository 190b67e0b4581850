"""Scenarios are data: TOML files validated into typed config objects before anything starts.

Every problem is reported as ``FILE: KEY: what is wrong (allowed: ...)``. ``--set a.b=c``
overrides any field by its dotted name; list items are addressed by index (``producers.0.acks``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
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
    FAULTS,
    MEMBER_FAULTS,
    TARGET_HELP,
    ClusterShape,
    Target,
)
from harness.faults.triggers import PARTITION_EVENTS, cycle
from harness.scenario import config_defs
from harness.scenario.broker_config import kip848_broker_config, share_broker_config
from harness.scenario.fault_tables import FaultSpec, GeneratorSpec, HuntSpec
from harness.scenario.tables import (
    MAX_MEMBERS,
    ClientTable,
    ConsumerSpec,
    CopierSpec,
    GroupSpec,
    ProducerSpec,
    PropMap,
    ScenarioTable,
    ShareGroupSpec,
    TopicSpec,
    VersionText,
    unknown_key,
)
from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS, upgrades_from, with_default_mode

ROLE_WORDS = {"any": "any client", "member": "group members", "transactional": "transactional producers and the "
              "copier", "quiet": "producers with quiet = true", "producer": "plain (not transactional) producers"}


class Scenario(ScenarioTable):
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
    isr_wait_s: float = Field(120.0, ge=5, le=1800, description="after the heal, how long the run waits for every "
                              "partition's ISR to be whole before it records isr_not_restored (the run is then "
                              "not healed)")
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

    def library(self, table: ClientTable) -> tuple[str, str]:
        """The client library a table's clients are made with, and its version: the table's own, else
        the scenario's, a version defaulting to the broker's (a driver built per Kafka version, as the
        Java client's is, is taken at it; librdkafka is the one installed, whatever is named)."""
        if table.client is None and self.client not in libraries_for(table.kind):  # the first library that makes it
            return libraries_for(table.kind)[0], table.client_version or self.kafka_version
        return table.client or self.client, self._explicit_version(table) or self.kafka_version

    def _explicit_version(self, table: ClientTable) -> str | None:
        """The client version a scenario names for a table: the table's, else the scenario's for a
        table of the scenario's library."""
        return table.client_version or (self.client_version if (table.client or self.client) == self.client else None)

    @property
    def client_tables(self) -> list[tuple[str, ClientTable]]:
        """Every client table by its dotted key: producers, the consumers, groups, the copier."""
        tables: list[tuple[str, ClientTable]] = [(f"producers.{i}", p) for i, p in enumerate(self.producers)]
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
            self._check_fits_cluster(i, f)
            if f.partition >= self.topic.partitions:
                raise ValueError(f"faults.{i}.partition: {f.partition} does not exist (allowed: 0.."
                                 f"{self.topic.partitions - 1})")
            if f.at_s + f.duration_s > self.duration_s:
                raise ValueError(f"faults.{i}: ends at {f.at_s + f.duration_s:g} s, after duration_s = "
                                 f"{self.duration_s:g}")
        self._check_upgrades()
        self._check_kafka_configs()
        self._check_triggers()
        self._check_generator_clients()
        self._check_share_groups()  # before the configs: a share group's library must have a share consumer
        self._check_client_configs()
        names = [p.name for p in self.producers]
        if len(set(names)) != len(names):
            raise ValueError(f"producers: names must differ (got {names})")
        self._check_copier(names)
        self._check_groups()
        skewed = {f.target.client for f in self.faults if FAULTS[f.kind].clock and FAULTS[f.kind].on_clients}
        for p in self.producers:
            p._skewed_clocks = skewed & set(p.instance_names)
        try:
            self.cluster_settings()  # validates the cluster table too
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(x) for x in err["loc"])
            msg = unknown_key(ClusterSettings, err["loc"]) if err["type"] == "extra_forbidden" \
                else err["msg"].removeprefix("Value error, ")
            raise ValueError(f"cluster.{key}: {msg}" if key else f"cluster: {msg}") from None
        return self

    def _check_upgrades(self) -> None:
        """Each rolling upgrade moves the cluster to a later version that runs in its mode, each after
        the one before (in the order of ``faults``); each feature upgrade names a feature and level the
        version running by then has (feature_levels.upgrade_refusal)."""
        running = self.kafka_version
        for i, f in enumerate(self.faults):
            if FAULTS[f.kind].changes == "version":
                allowed = upgrades_from(running, self.mode)
                if f.to not in allowed:
                    raise ValueError(f"faults.{i}.to: {f.to!r} is not a later version of a {self.mode} cluster running "
                                     f"{running} (allowed: {', '.join(allowed) or 'none: it runs the newest'})")
                running = f.to
            elif FAULTS[f.kind].changes == "feature" and (why := feature_levels.upgrade_refusal(
                    f"faults.{i}", self.kafka_version, running, self.mode, self.features, f.feature, f.level)):
                raise ValueError(why)

    @property
    def upgrades(self) -> list[str]:
        """The versions the rolling upgrades move the cluster to, in order: its image holds them all."""
        return [f.to for f in self.faults if FAULTS[f.kind].changes == "version" and f.to is not None]

    def _check_kafka_configs(self) -> None:
        """``topic.config`` and ``broker_config`` against the config definitions of every Kafka version
        the cluster runs (its own, then each a rolling upgrade moves it to): a name that version does not
        define, or a value it would refuse, is bad input here rather than a broker that will not start."""
        for version in dict.fromkeys([self.kafka_version, *self.upgrades]):
            found = [*config_defs.problems(self.topic.config, version, "topic", "topic.config"),
                     *config_defs.problems(self.broker_config, version, "broker", "broker_config")]
            if found:
                raise ValueError("; ".join(found))

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
        if t.role in ("zookeeper", "controller_zookeeper") and self.mode != "zk":
            raise ValueError(f"{where}: {t} is a ZooKeeper server; this scenario is KRaft (allowed: controller, "
                             f"controller:1..{self.quorum_size}, quorum_majority)")
        if t.role == "controller" and t.number and self.mode != "kraft":
            raise ValueError(f"{where}: {t} names a KRaft controller; in ZooKeeper mode 'controller' is the broker "
                             f"that is Kafka's controller (allowed: controller, zookeeper, controller_zookeeper, "
                             f"zookeeper:1..{self.quorum_size}, quorum_majority)")
        spares = self.spare_controllers
        top = self.quorum_size + spares if t.role == "controller" else self.quorum_size
        if t.role in ("controller", "zookeeper") and t.number > top:
            raise ValueError(f"{where}: {t} does not exist (allowed: {t.role}:1..{t.role}:{top})")
        kind_ = FAULTS[kind]
        if kind_.disk and self.mode == "kraft" and t.on_coordination(self.mode) and kind_.log_dirs_needed > 1:
            raise ValueError(f"{where}: {kind} fails one of a broker's log directories; a KRaft controller "
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
        if FAULTS[kind].adds_voter and t.number <= self.quorum_size:
            raise ValueError(f"{where}: {kind} needs a spare controller, controller:K with K > controllers "
                             f"= {self.quorum_size} (allowed: controller:{self.quorum_size + 1}.."
                             f"controller:{self.quorum_size + 2})")

    @property
    def spare_controllers(self) -> int:
        """Controllers an add_controller fault names past the voters: started as observers."""
        ks = [f.target.number for f in self.faults if FAULTS[f.kind].adds_voter and f.target.role == "controller"]
        return max([0, *(k - self.quorum_size for k in ks)])

    @property
    def dynamic_quorum(self) -> bool:
        """A quorum change among the faults (or the generator's kinds) needs a KIP-853 quorum."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return any(FAULTS[k].quorum_change for k in kinds if k in FAULTS)

    def _check_log_dir(self, i: int, f: FaultSpec) -> None:
        """A disk fault names a log directory the broker has; a failed directory needs another one."""
        if self.log_dirs < FAULTS[f.kind].log_dirs_needed:
            raise ValueError(f"faults.{i}: {f.kind} fails one log directory of several, and brokers have "
                             f"log_dirs = 1 (allowed: log_dirs = 2..4; one directory failing is disk_error)")
        if f.dir is not None and f.dir > self.log_dirs:
            raise ValueError(f"faults.{i}.dir: {f.dir} does not exist (allowed: 1..{self.log_dirs})")

    def _check_fits_cluster(self, i: int, f: FaultSpec) -> None:
        """A kind that needs something of the cluster (a broker to move a replica to) says so itself."""
        shape = ClusterShape(self.brokers, self.topic.replication_factor, self.mode, self.kafka_version,
                             tuple(self.transactional_clients))
        if (refuses := FAULTS[f.kind].refuses) is not None and (why := refuses(f, shape)):
            raise ValueError(f"faults.{i}.{why}")

    @property
    def faults_disks(self) -> bool:
        """A disk fault among the faults (or the generator's kinds) needs log directories it can fail."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return any(FAULTS[k].disk for k in kinds if k in FAULTS)

    @property
    def loses_answers(self) -> bool:
        """A fault that loses answers among the faults (or the generator's kinds) needs the Kafka toxics
        on every link from its first byte."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return any(FAULTS[k].loses_answers for k in kinds if k in FAULTS)

    @property
    def skews_clocks(self) -> bool:
        """A clock fault among the faults (or the generator's kinds) needs nodes started with skewable clocks."""
        kinds = [f.kind for f in self.faults] + (self.generator.kinds if self.generator is not None else [])
        return any(FAULTS[k].clock and not FAULTS[k].on_clients for k in kinds if k in FAULTS)

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
            return self._clock_refuses(name, kind)
        allowed = [n for n in self.client_names if self.client_roles(n) & wanted]
        return (f"{kind} acts on {' or '.join(ROLE_WORDS[r] for r in sorted(wanted))}, not {name!r} (allowed: "
                f"{', '.join(allowed) or 'none'})")

    def _clock_refuses(self, name: str, kind: str) -> str | None:
        """Why client ``name``'s wall clock cannot be moved by a ``kind`` fault, or None: libfaketime
        reaches a JVM and the Python process librdkafka runs in, not a static Go program."""
        table = next((p for p in self.producers if name in p.instance_names), None)
        if not FAULTS[kind].clock or table is None or LIBRARIES[(lib := self.library(table)[0])].moved_clocks:
            return None
        allowed = [n for p in self.producers if not p.transactional and LIBRARIES[self.library(p)[0]].moved_clocks
                   for n in p.instance_names]
        movable = ", ".join(n for n, b in LIBRARIES.items() if b.moved_clocks)
        return (f"{kind}: {name!r} is a {lib} client, whose clock kchaos cannot move (allowed: "
                f"{', '.join(allowed) or 'none'}; a producer of {movable})")

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

    @property
    def cluster_unfaulted(self) -> dict:
        """The ``[cluster]`` table without its ``formation`` fault: the same cluster, formed unfaulted."""
        return {k: v for k, v in self.cluster.items() if k != "formation"}

    def cluster_settings(self) -> ClusterSettings:
        extra = {**self.cluster, "private_clients": self.private_clients}
        if self.dynamic_quorum:
            extra |= {"dynamic_quorum": True, "spare_controllers": self.spare_controllers}
        if self.skews_clocks:
            extra["skewable_clocks"] = True
        if self.faults_disks:
            extra["faultable_disks"] = True
        if self.loses_answers:
            extra["losable_answers"] = True
        if self.log_dirs > 1:
            extra["log_dirs"] = self.log_dirs
        extra |= {"controllers": self.controllers} if self.mode == "kraft" else {"zookeepers": self.zookeepers}
        return ClusterSettings(kafka_version=self.kafka_version, mode=self.mode, brokers=self.brokers,
                               racks=self.racks, broker_config={**self.group_broker_config(), **self.broker_config},
                               eligible_leader_replicas=self.eligible_leader_replicas, features=self.features,
                               **extra)


