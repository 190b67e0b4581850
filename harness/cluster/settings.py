"""Cluster settings and the configuration files rendered from them.

The timeouts that decide how fast a fault becomes visible (ISR lag, ZooKeeper
sessions, KRaft broker heartbeats) are settings of the run, defaulting to values
that make faults show within seconds instead of Kafka's production defaults.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.cluster import feature_levels
from harness.cluster.formation import FormationFault
from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS, with_default_mode

ELR_FEATURE = "eligible.leader.replicas.version"
CONTROLLER_ID_BASE = 100  # KRaft: controller K's node.id is 100+K
ZK_NODE_BASE = 200  # ZooKeeper server K (myid K) is node 200+K where faults name nodes
CLIENT_PORT = 9092  # broker listener for clients (reached through proxy client-i)
REPLICATION_PORT = 9093  # inter-broker listener (reached through proxies repl-x-i)
CONTROLLER_PORT_BASE = 19300  # controller K listens, and is reached through a proxy, on 19300+K
ZK_PORT = 2181  # every ZooKeeper server's client port
ZK_PROXY_BASE = 21810  # broker i reaches ZooKeeper server K through a proxy on 21810+K
ZK_QUORUM_BASE = 2880  # server K's quorum port is 2880+K and its election port 3880+K
ZK_ELECTION_BASE = 3880
ADMIN_PROXY_BASE = 9300  # the harness reaches coordination node K on 9300+K (published, never faulted)
PROXY_CLIENT_BASE = 9100  # toxiproxy listens on 9100+i for broker i's clients
PROXY_REPL_BASE = 19100  # toxiproxy listens on <ip on net_x>:19100+i for x -> i replication
PRIVATE_PORT_BASE = 9110  # broker listener PRIVATEk for the k-th client with links of its own
PROXY_PRIVATE_BASE = 9200  # toxiproxy listens on 9200+10k+i for that client to broker i
MAX_PRIVATE_CLIENTS = 4
CLIENT_NAME = r"^[A-Za-z0-9_.-]+$"


@dataclass(frozen=True)
class ClusterImages:
    """The image tags a cluster's containers run: set-up builds them (``setup.cluster_images``) and
    the caller hands them to ``KafkaCluster``, which never builds anything."""

    kafka: str
    toxiproxy: str
    faultable_disks: bool = False  # the Kafka image has kchaos-diskfs (setup.cluster_images(disks=True))
    # Where a Kafka version's jars are on this machine, copied out of its image on first use: the
    # operator's tools an admin operation runs from the machine (host_tools.py); None: no such tools.
    tool_libs: Callable[[str], Path] | None = None


LOGGER_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*")


class ClusterSettings(BaseModel):
    """Everything that shapes a cluster; validated before any container starts."""

    model_config = ConfigDict(extra="forbid")

    kafka_version: str = DEFAULT_VERSION
    mode: Literal["zk", "kraft"] = "kraft"  # without one: the version's (versions.default_mode)
    brokers: int = Field(3, ge=1, le=9)
    racks: list[str] | None = Field(None, description="broker.rack per broker, in broker-id order")
    replica_lag_time_max_ms: int = Field(3000, ge=100)
    replica_socket_timeout_ms: int = Field(5000, ge=500)
    zookeeper_session_timeout_ms: int = Field(6000, ge=1000, le=60000)  # Kafka's default: 18000
    broker_session_timeout_ms: int = Field(4000, ge=1000)
    broker_heartbeat_interval_ms: int = Field(500, ge=100)
    auto_leader_rebalance: bool = False
    heap: str = "-Xms256m -Xmx512m"
    class_data_archive: bool = Field(
        True, description="every node's JVM starts from its image's class-data archive "
        "(docker/kafka/kchaos-cds-train.sh); off only to measure what it saves (benchmarks/boot.py --paired)")
    eligible_leader_replicas: bool | None = Field(
        None, description="KIP-966 ELR (KRaft, Kafka >= 4.0); None keeps the version's default (on from 4.1)")
    controllers: Literal[1, 3, 5] | None = Field(
        None, description="KRaft controllers in the quorum (1, 3 or 5; default 3), each in its own container")
    zookeepers: Literal[1, 3] | None = Field(
        None, description="ZooKeeper servers in the ensemble (1 or 3; default 3), each in its own container")
    dynamic_quorum: bool = Field(
        False, description="KIP-853 dynamic KRaft quorum (Kafka >= 3.9): formatted with --initial-controllers, "
                           "so controllers can be added and removed at run time")
    spare_controllers: int = Field(
        0, ge=0, le=2, description="controllers started as observers (dynamic quorum), for add_controller")
    private_clients: list[str] = Field(
        default_factory=list, max_length=MAX_PRIVATE_CLIENTS,
        description="clients with links of their own (a listener per broker, its own proxies), so a fault can "
                    "slow, hold or cut one client alone")
    broker_config: dict[str, str] = Field(default_factory=dict, description="extra server.properties")
    controller_config: dict[str, str] = Field(default_factory=dict, description="extra KRaft controller props")
    skewable_clocks: bool = Field(
        False, description="every node's JVM started with libfaketime, so a clock_skew fault can move its wall clock "
                           "alone (harness/cluster/clocks.py)")
    losable_answers: bool = Field(
        False, description="every link that carries Kafka's protocol read by kchaos's Kafka toxics from its first "
                           "byte, so a lose_answers fault can lose the answers to one request type "
                           "(docker/toxiproxy/server/kafka.go)")
    log_dirs: int = Field(1, ge=1, le=4, description="log directories per broker (JBOD): /var/lib/kafka/data, "
                                                     "/var/lib/kafka/data-2, ...")
    faultable_disks: bool = Field(
        False, description="every broker's and controller's log directory served through kchaos-diskfs, so a disk "
                           "fault can fill, fail or slow it (harness/cluster/disks.py)")
    features: dict[str, int] = Field(
        default_factory=dict, description="feature levels the KRaft controllers format the cluster with "
                                          "(harness/cluster/feature_levels.py); the rest get the version's defaults")
    formation: FormationFault | None = Field(
        None, description="a fault on the coordination quorum's first leader as soon as it is elected or once the "
                          "first broker registered (harness/cluster/formation.py); a cluster of its own per run")
    log_levels: dict[str, Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]] = Field(
        default_factory=dict, description="log4j levels of named loggers on every broker, controller and ZooKeeper "
                                          "server (e.g. {\"state.change.logger\" = \"DEBUG\"}): a finding's "
                                          "evidence runs (kchaos evidence) set those of the components it concerns")

    @model_validator(mode="before")
    @classmethod
    def _version_mode(cls, data):
        """Settings that name no mode run in their version's (ZooKeeper on 3.x, KRaft on 4.x)."""
        return with_default_mode(data)

    @model_validator(mode="after")
    def _check(self) -> ClusterSettings:
        if self.kafka_version not in KAFKA_VERSIONS:
            raise ValueError(
                f"kafka_version {self.kafka_version!r} has no image recipe; allowed: {', '.join(KAFKA_VERSIONS)}"
            )
        modes = KAFKA_VERSIONS[self.kafka_version]
        if self.mode not in modes:
            raise ValueError(f"mode {self.mode!r} is not available on Kafka {self.kafka_version}; allowed: "
                             f"{', '.join(modes)}")
        if self.racks is not None and len(self.racks) != self.brokers:
            raise ValueError(f"racks lists {len(self.racks)} entries but brokers = {self.brokers}")
        if self.eligible_leader_replicas and (self.mode != "kraft" or _major_minor(self.kafka_version) < (4, 0)):
            raise ValueError("eligible_leader_replicas needs KRaft on Kafka 4.0 or later (allowed: false, or "
                             "mode = \"kraft\" with kafka_version >= 4.0)")
        if why := feature_levels.refusal(self.kafka_version, self.mode, self.features):
            raise ValueError(why)
        for name in self.log_levels:
            if not LOGGER_NAME.fullmatch(name):
                raise ValueError(f"log_levels: {name!r} is not a logger name (allowed: dotted Java names, e.g. "
                                 "kafka.cluster.Partition)")
        elr = self.features.get(ELR_FEATURE)
        if elr is not None and self.eligible_leader_replicas is not None and elr != int(self.eligible_leader_replicas):
            raise ValueError(f"features.{ELR_FEATURE} = {elr} contradicts eligible_leader_replicas = "
                             f"{str(self.eligible_leader_replicas).lower()} (allowed: one of them, or both agreeing)")
        bad = [n for n in self.private_clients if not re.match(CLIENT_NAME, n)]
        if bad or len(set(self.private_clients)) != len(self.private_clients):
            raise ValueError(f"private_clients {self.private_clients}: names must differ and use letters, digits, "
                             f"'_', '.', '-'")
        self._check_quorum()
        if self.replica_socket_timeout_ms < 500:
            raise ValueError("replica_socket_timeout_ms must be >= replica.fetch.wait.max.ms (500)")
        return self

    def _check_quorum(self) -> None:
        if why := quorum_size_refused(self.mode, self.controllers, self.zookeepers):
            raise ValueError(why)
        dynamic = self.dynamic_quorum or self.spare_controllers
        if dynamic and not supports_dynamic_quorum(self.mode, self.kafka_version):
            raise ValueError(f"dynamic_quorum needs KRaft on Kafka 3.9 or later (KIP-853); this cluster is "
                             f"{self.mode} on {self.kafka_version} (allowed: false)")
        if self.spare_controllers and not self.dynamic_quorum:
            raise ValueError("spare_controllers needs dynamic_quorum = true (allowed: 0)")

    @property
    def quorum_size(self) -> int:
        """Voting members of the coordination layer: KRaft controllers or ZooKeeper servers."""
        if self.mode == "kraft":
            return self.controllers or 3
        return self.zookeepers or 3

    @property
    def coordination_ids(self) -> list[int]:
        """Node numbers of every coordination container, voters first, then spare controllers."""
        base = CONTROLLER_ID_BASE if self.mode == "kraft" else ZK_NODE_BASE
        return [base + k for k in range(1, self.quorum_size + self.spare_controllers + 1)]

    @property
    def elr_enabled(self) -> bool:
        """Whether eligible leader replicas are on in this cluster (ELR is on by default from 4.1)."""
        if self.mode != "kraft" or _major_minor(self.kafka_version) < (4, 0):
            return False
        if ELR_FEATURE in self.features:
            return self.features[ELR_FEATURE] >= 1
        if self.eligible_leader_replicas is None:
            return _major_minor(self.kafka_version) >= (4, 1)
        return self.eligible_leader_replicas

    def format_args(self) -> str:
        """Extra ``kafka-storage format`` arguments for the KRaft controller."""
        if self.mode != "kraft":
            return ""
        levels = dict(self.features)
        if _major_minor(self.kafka_version) >= (4, 0):
            levels[ELR_FEATURE] = int(self.elr_enabled)
        return " ".join(f"--feature {name}={level}" for name, level in levels.items())

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def log_dir_paths(self) -> list[str]:
        """Each broker's log directories, the first the one a broker with one has."""
        return [log_dir(k) for k in range(1, self.log_dirs + 1)]

    def rack_of(self, broker: int) -> str | None:
        return self.racks[broker - 1] if self.racks else None


def log_dir(k: int) -> str:
    """Log directory k (from 1) of a broker: /var/lib/kafka/data, then /var/lib/kafka/data-2, ..."""
    return "/var/lib/kafka/data" + (f"-{k}" if k > 1 else "")


def quorum_size_refused(mode: str, controllers: int | None, zookeepers: int | None) -> str | None:
    """Why a quorum size does not fit the mode (it starts with the key), or None."""
    if mode == "zk" and controllers is not None:
        return ("controllers: KRaft only (mode = \"kraft\"); ZooKeeper mode sizes its ensemble with zookeepers "
                "(allowed: 1, 3)")
    if mode == "kraft" and zookeepers is not None:
        return ("zookeepers: ZooKeeper mode only (mode = \"zk\"); KRaft sizes its quorum with controllers "
                "(allowed: 1, 3, 5)")
    return None


def supports_dynamic_quorum(mode: str, kafka_version: str) -> bool:
    """KIP-853 (add and remove controllers) came with Kafka 3.9, in KRaft mode."""
    return mode == "kraft" and _major_minor(kafka_version) >= (3, 9)


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.

    Never one starting with "-" (1 in 64 would): the storage tool's argument parser takes it for an
    option and the controller exits ("--cluster-id: expected one argument"). Kafka's own
    Uuid.randomUuid() skips those too.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _props(d: dict[str, object]) -> str:
    return "\n".join(f"{k}={v}" for k, v in d.items()) + "\n"


def _listeners(broker: int, client_host_port: int, private_host_ports: list[int]) -> dict[str, object]:
    """Listeners of one broker: host clients, each private client, other brokers."""
    names = ["CLIENT", *(f"PRIVATE{k}" for k in range(len(private_host_ports))), "REPLICATION"]
    ports = [CLIENT_PORT, *(PRIVATE_PORT_BASE + k for k in range(len(private_host_ports))), REPLICATION_PORT]
    # Clients on the host reach the broker via a published proxy port (a private client via its own);
    # other brokers reach it via the name 'kafka-<i>-repl', which on their own network is Toxiproxy.
    advertised = [f"127.0.0.1:{p}" for p in (client_host_port, *private_host_ports)]
    advertised.append(f"kafka-{broker}-repl:{PROXY_REPL_BASE + broker}")
    return {
        "listeners": ",".join(f"{n}://0.0.0.0:{p}" for n, p in zip(names, ports, strict=True)),
        "advertised.listeners": ",".join(f"{n}://{a}" for n, a in zip(names, advertised, strict=True)),
        "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in [*names, "CONTROLLER"]),
    }


def broker_properties(s: ClusterSettings, broker: int, client_host_port: int,
                      private_host_ports: list[int] | None = None) -> str:
    """server.properties for one broker; every link leaves the broker through Toxiproxy.
    ``private_host_ports``: the published port of broker's proxy for each of ``s.private_clients``."""
    rf = min(3, s.brokers)
    p: dict[str, object] = {
        **_listeners(broker, client_host_port, private_host_ports or []),
        "inter.broker.listener.name": "REPLICATION",
        "log.dirs": ",".join(s.log_dir_paths),
        "num.partitions": 1,
        "default.replication.factor": rf,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 3,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min(2, rf),
        "transaction.state.log.num.partitions": 3,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false",
        "auto.leader.rebalance.enable": str(s.auto_leader_rebalance).lower(),
        "replica.lag.time.max.ms": s.replica_lag_time_max_ms,
        "replica.socket.timeout.ms": s.replica_socket_timeout_ms,
        "unclean.leader.election.enable": "false",
        "num.network.threads": 2,
        "num.io.threads": 4,
        "log.segment.bytes": 16 * 1024 * 1024,
    }
    if s.mode == "zk":
        p |= {
            "broker.id": broker,
            "zookeeper.connect": ",".join(f"zk-{k}:{ZK_PROXY_BASE + k}" for k in range(1, s.quorum_size + 1)),
            "zookeeper.session.timeout.ms": s.zookeeper_session_timeout_ms,
            "zookeeper.connection.timeout.ms": 30000,
        }
    else:
        p |= {
            "process.roles": "broker",
            "node.id": broker,
            **quorum_address(s),
            "controller.listener.names": "CONTROLLER",
            "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        }
    rack = s.rack_of(broker)
    if rack:
        p["broker.rack"] = rack
    p |= s.broker_config
    return _props(p)


def controller_port(k: int) -> int:
    return CONTROLLER_PORT_BASE + k


def quorum_address(s: ClusterSettings) -> dict[str, str]:
    """How a node finds the KRaft quorum: a static voter set, or (dynamic quorum) where to bootstrap.
    Controller K is ``controller-K:19300+K`` everywhere: on every other node's network that name is
    Toxiproxy, on its own it is itself."""
    voters = range(1, s.quorum_size + 1)
    if s.dynamic_quorum:
        return {"controller.quorum.bootstrap.servers": ",".join(f"controller-{k}:{controller_port(k)}"
                                                                for k in voters)}
    return {"controller.quorum.voters": ",".join(f"{CONTROLLER_ID_BASE + k}@controller-{k}:{controller_port(k)}"
                                                 for k in voters)}


def controller_properties(s: ClusterSettings, k: int) -> str:
    """Controller K's server.properties."""
    port = controller_port(k)
    p: dict[str, object] = {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID_BASE + k,
        "listeners": f"CONTROLLER://0.0.0.0:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        **quorum_address(s),
        "log.dirs": "/var/lib/kafka/data",
        "broker.session.timeout.ms": s.broker_session_timeout_ms,
        "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        "unclean.leader.election.enable": "false",
    }
    if s.dynamic_quorum:
        p["advertised.listeners"] = f"CONTROLLER://controller-{k}:{port}"
    p |= s.controller_config
    return _props(p)


def controller_format_args(s: ClusterSettings, k: int, directory_ids: dict[int, str]) -> str:
    """``kafka-storage format`` arguments of controller K: the version's features and, in a dynamic
    quorum, the initial voters with their directory ids (a spare controller starts outside them)."""
    args = s.format_args()
    if s.dynamic_quorum:
        if k > s.quorum_size:
            args += " --no-initial-controllers"
        else:
            voters = ",".join(f"{CONTROLLER_ID_BASE + j}@controller-{j}:{controller_port(j)}:{directory_ids[j]}"
                              for j in range(1, s.quorum_size + 1))
            args += f" --initial-controllers {voters}"
    return args.strip()


def zookeeper_config(s: ClusterSettings, me: int) -> str:
    """Server ``me``'s zoo.cfg (it learns its id from myid).

    Server K's quorum and election ports are 2880+K and 3880+K, so that Toxiproxy, one address on
    each server's network, can listen for every peer at once; quorumListenOnAllIPs makes server K
    bind those ports on its own address, although its name (``zk-K``) is Toxiproxy elsewhere.
    Server K's own entry is 0.0.0.0: a server tells each peer it connects to its own election
    address, and a peer with the higher id drops the connection and dials that address back. Its
    own name would give its own IP, which no peer reaches here (each reaches it through Toxiproxy),
    and after a cut the ensemble stayed without a leader for minutes, every peer dialling those IPs.
    A wildcard address is not dialled back (ZOOKEEPER-2164, ZooKeeper 3.5.8 and later): the peer
    dials the name its own configuration gives, Toxiproxy.
    tickTime 500 allows broker session timeouts from 1 s (two ticks); maxSessionTimeout lets them go to
    60 s (twenty ticks would stop at 10 s, below Kafka's default of 18 s)."""
    p: dict[str, object] = {
        "dataDir": "/var/lib/zookeeper",
        "clientPort": ZK_PORT,
        "tickTime": 500,
        "maxSessionTimeout": 60000,
        "initLimit": 10,
        "syncLimit": 5,
        "maxClientCnxns": 0,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,stat",
    }
    if s.quorum_size > 1:
        p["quorumListenOnAllIPs"] = "true"
        # A peer that is not up yet still accepts through Toxiproxy, which then closes: give up on a
        # connection in 1 s, not the default 5 s, so the first election does not wait on it.
        p["cnxTimeout"] = 1000
        for k in range(1, s.quorum_size + 1):
            host = "0.0.0.0" if k == me else f"zk-{k}"
            p[f"server.{k}"] = f"{host}:{ZK_QUORUM_BASE + k}:{ZK_ELECTION_BASE + k}"
    return _props(p)
