"""Cluster settings and the configuration files rendered from them.

The timeouts that decide how fast a fault becomes visible (ISR lag, ZooKeeper
sessions, KRaft broker heartbeats) are settings of the run, defaulting to values
that make faults show within seconds instead of Kafka's production defaults.
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS

CONTROLLER_ID = 100  # KRaft: the single dedicated controller's node id
CLIENT_PORT = 9092  # broker listener for clients (reached through proxy client-i)
REPLICATION_PORT = 9093  # inter-broker listener (reached through proxies repl-x-i)
CONTROLLER_PORT = 9094  # KRaft controller listener
ZK_PORT = 2181
PROXY_CLIENT_BASE = 9100  # toxiproxy listens on 9100+i for broker i's clients
PROXY_REPL_BASE = 19100  # toxiproxy listens on <ip on net_x>:19100+i for x -> i replication
PRIVATE_PORT_BASE = 9110  # broker listener PRIVATEk for the k-th client with links of its own
PROXY_PRIVATE_BASE = 9200  # toxiproxy listens on 9200+10k+i for that client to broker i
MAX_PRIVATE_CLIENTS = 4
CLIENT_NAME = r"^[A-Za-z0-9_.-]+$"


class ClusterSettings(BaseModel):
    """Everything that shapes a cluster; validated before any container starts."""

    model_config = ConfigDict(extra="forbid")

    kafka_version: str = DEFAULT_VERSION
    mode: Literal["zk", "kraft"] = "zk"
    brokers: int = Field(3, ge=1, le=9)
    racks: list[str] | None = Field(None, description="broker.rack per broker, in broker-id order")
    replica_lag_time_max_ms: int = Field(3000, ge=100)
    replica_socket_timeout_ms: int = Field(5000, ge=500)
    zookeeper_session_timeout_ms: int = Field(6000, ge=1000, le=10000)
    broker_session_timeout_ms: int = Field(4000, ge=1000)
    broker_heartbeat_interval_ms: int = Field(500, ge=100)
    auto_leader_rebalance: bool = False
    heap: str = "-Xms256m -Xmx512m"
    eligible_leader_replicas: bool | None = Field(
        None, description="KIP-966 ELR (KRaft, Kafka >= 4.0); None keeps the version's default (on from 4.1)")
    private_clients: list[str] = Field(
        default_factory=list, max_length=MAX_PRIVATE_CLIENTS,
        description="clients with links of their own (a listener per broker, its own proxies), so a fault can "
                    "slow, hold or cut one client alone")
    broker_config: dict[str, str] = Field(default_factory=dict, description="extra server.properties")
    controller_config: dict[str, str] = Field(default_factory=dict, description="extra KRaft controller props")

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
        bad = [n for n in self.private_clients if not re.match(CLIENT_NAME, n)]
        if bad or len(set(self.private_clients)) != len(self.private_clients):
            raise ValueError(f"private_clients {self.private_clients}: names must differ and use letters, digits, "
                             f"'_', '.', '-'")
        if self.replica_socket_timeout_ms < 500:
            raise ValueError("replica_socket_timeout_ms must be >= replica.fetch.wait.max.ms (500)")
        return self

    @property
    def elr_enabled(self) -> bool:
        """Whether eligible leader replicas are on in this cluster (ELR is on by default from 4.1)."""
        if self.mode != "kraft" or _major_minor(self.kafka_version) < (4, 0):
            return False
        if self.eligible_leader_replicas is None:
            return _major_minor(self.kafka_version) >= (4, 1)
        return self.eligible_leader_replicas

    def format_args(self) -> str:
        """Extra ``kafka-storage format`` arguments for the KRaft controller."""
        if self.mode != "kraft" or _major_minor(self.kafka_version) < (4, 0):
            return ""
        return f"--feature eligible.leader.replicas.version={int(self.elr_enabled)}"

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def rack_of(self, broker: int) -> str | None:
        return self.racks[broker - 1] if self.racks else None


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
        "log.dirs": "/var/lib/kafka/data",
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
            "zookeeper.connect": f"zk:{ZK_PORT}",
            "zookeeper.session.timeout.ms": s.zookeeper_session_timeout_ms,
            "zookeeper.connection.timeout.ms": 30000,
        }
    else:
        p |= {
            "process.roles": "broker",
            "node.id": broker,
            "controller.quorum.voters": f"{CONTROLLER_ID}@controller:{CONTROLLER_PORT}",
            "controller.listener.names": "CONTROLLER",
            "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        }
    rack = s.rack_of(broker)
    if rack:
        p["broker.rack"] = rack
    p |= s.broker_config
    return _props(p)


def controller_properties(s: ClusterSettings) -> str:
    p: dict[str, object] = {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "listeners": f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "controller.quorum.voters": f"{CONTROLLER_ID}@controller:{CONTROLLER_PORT}",
        "log.dirs": "/var/lib/kafka/data",
        "broker.session.timeout.ms": s.broker_session_timeout_ms,
        "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        "unclean.leader.election.enable": "false",
    }
    p |= s.controller_config
    return _props(p)


def zookeeper_config() -> str:
    # tickTime 500 allows broker session timeouts from 1 s to 10 s.
    return _props({
        "dataDir": "/var/lib/zookeeper",
        "clientPort": ZK_PORT,
        "tickTime": 500,
        "initLimit": 10,
        "syncLimit": 5,
        "maxClientCnxns": 0,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,stat",
    })
