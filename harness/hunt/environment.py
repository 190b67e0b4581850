"""A finding's environment as a tracker asks for it: versions, the machine, and every broker, topic
and client setting that is not the project's default, kchaos's own cluster defaults included, each
with the default it replaces and why kchaos sets it. A maintainer's first question is whether the
harness's own settings made the bug; bug.md answers it by listing them all."""

from __future__ import annotations

import contextlib
import platform
from dataclasses import dataclass
from importlib import metadata

from harness.history import RunConfig
from harness.scenario import Scenario

# Broker settings kchaos writes that only wire the cluster together (addresses, ids, paths): left
# out of the list, as every deployment has its own.
WIRING = ("listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
          "log.dirs", "broker.id", "node.id", "zookeeper.connect", "controller.quorum.voters",
          "controller.quorum.bootstrap.servers", "controller.listener.names", "process.roles", "broker.rack")

# Kafka's default of each setting kchaos's cluster changes, and why it changes it
# (https://kafka.apache.org/documentation/#brokerconfigs). kchaos also writes some settings at their
# defaults (num.partitions, the internal topics' replication): bug.md leaves those out.
KAFKA_DEFAULTS: dict[str, tuple[str, str]] = {
    "default.replication.factor": ("1", "every topic replicated to the three brokers"),
    "offsets.topic.num.partitions": ("50", "fewer partitions for three small brokers"),
    "transaction.state.log.num.partitions": ("50", "fewer partitions for three small brokers"),
    "group.initial.rebalance.delay.ms": ("3000", "a group forms at once in a short run"),
    "auto.create.topics.enable": ("true", "topics are created with the scenario's settings only"),
    "auto.leader.rebalance.enable": ("true", "no leader moves but the faults'"),
    "replica.lag.time.max.ms": ("30000", "a lagging follower leaves the ISR within a short run"),
    "replica.socket.timeout.ms": ("30000", "a cut replication link is noticed within a short run"),
    "num.network.threads": ("3", "fewer threads on a 2-core machine"),
    "num.io.threads": ("8", "fewer threads on a 2-core machine"),
    "log.segment.bytes": ("1073741824", "segments roll within a run"),
    "zookeeper.session.timeout.ms": ("18000", "a lost broker session expires within a short run"),
    "zookeeper.connection.timeout.ms": ("(the session timeout)", "a broker waits longer for ZooKeeper at boot"),
    "broker.session.timeout.ms": ("9000", "a fenced broker is noticed within a short run"),
    "broker.heartbeat.interval.ms": ("2000", "a broker's heartbeats keep up with the shorter session"),
}

# A client table's fields as the property each library takes (Java's and librdkafka's names agree).
PRODUCER_PROPERTIES = {"acks": "acks", "idempotence": "enable.idempotence", "retries": "retries",
                       "max_in_flight": "max.in.flight.requests.per.connection", "linger_ms": "linger.ms",
                       "delivery_timeout_ms": "delivery.timeout.ms"}


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    default: str | None  # the project's default, when kchaos knows it
    why: str | None  # why kchaos sets it (None: the scenario's own choice)


def broker_settings(run: RunConfig) -> list[Setting]:
    """Every setting of the first broker's server.properties that is neither wiring nor Kafka's own
    default, as the run wrote it."""
    props = (run.cluster.get("broker_properties") or {})
    text = next(iter(props.values()), "") if isinstance(props, dict) else ""
    pairs = [line.split("=", 1) for line in str(text).splitlines() if "=" in line and not line.startswith("#")]
    scenario_keys = set(run.broker_config)
    out = []
    for key, value in pairs:
        if key in WIRING:
            continue
        default, why = KAFKA_DEFAULTS.get(key, (None, None))
        if value == default:
            continue
        out.append(Setting(key, value, default, None if key in scenario_keys else why or "kchaos's cluster"))
    return out


def topic_settings(s: Scenario) -> list[Setting]:
    t = s.topic
    return [Setting("partitions", str(t.partitions), None, None),
            Setting("replication.factor", str(t.replication_factor), None, None),
            Setting("min.insync.replicas", str(t.min_insync_replicas), "1", None),
            Setting("unclean.leader.election.enable", str(t.unclean_leader_election).lower(), "false", None),
            *[Setting(k, str(v), None, None) for k, v in (t.config or {}).items()]]


def client_settings(s: Scenario) -> list[tuple[str, dict[str, object]]]:
    """Each client table of ``s`` and the settings it runs with beyond its library's defaults."""
    out: list[tuple[str, dict[str, object]]] = []
    for p in s.producers:
        props = {prop: getattr(p, field) for field, prop in PRODUCER_PROPERTIES.items()}
        if p.transactional:
            props |= {"transactional.id": ", ".join(p.transactional_id_of(n) for n in p.instance_names),
                      "transaction.timeout.ms": p.transaction_timeout_ms}
        out.append((f"producer `{p.name}` x{p.count}, {p.rate:g} records/s", {**props, **(p.config or {})}))
    if s.consumers.count:
        out.append((f"reader x{s.consumers.count} (assigned every partition, from offset 0)",
                    {"isolation.level": s.consumers.isolation_level, **(s.consumers.config or {})}))
    for g in s.groups:
        out.append((f"consumer group `{g.name}`", {k: v for k, v in g.settings().items() if k != "name"}))
    return out


def machine() -> list[tuple[str, str]]:
    """Where the brokers and clients ran: the containers' OS and Java, the host's kernel, the binding."""
    from harness.setup.base_image import debian_release

    rows = [("Containers", f"Debian {debian_release()} with OpenJDK 17 (kchaos's base image: Debian's packages "
                           "unpacked, no Kafka patches), one container per broker and per quorum node"),
            ("Host", f"Linux {platform.release()} ({platform.machine()}), Docker engine; every link between "
                     "brokers, and between clients and brokers, goes through Toxiproxy, which applies the faults")]
    with contextlib.suppress(metadata.PackageNotFoundError):
        rows.append(("Python binding", f"confluent-kafka {metadata.version('confluent-kafka')} (Python "
                                       f"{platform.python_version()})"))
    return rows
