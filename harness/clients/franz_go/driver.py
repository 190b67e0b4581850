"""The driver for franz-go (github.com/twmb/franz-go): every client is a process of its own running
the program in ``src/`` (built per franz-go version by build.py), talked to by the process protocol
of docs/drivers.md (clients/process.py).

Producers (plain, idempotent and transactional), consumers, consumer-group members (classic
protocol; acted on and read as librdkafka's and Java's members are: groups.py) and the exactly-once
copier (franz-go's GroupTransactSession) are built. A franz-go client's
``config`` table takes Kafka's property names where franz-go has an option for them (config.py).
"""

from __future__ import annotations

import threading
from pathlib import Path

from harness.clients import CopierClient, ProducerClient
from harness.clients.franz_go import build as franz_build
from harness.clients.franz_go.config import as_properties, franz_version
from harness.clients.groups import Group
from harness.clients.process import (
    ClientProcess,
    ConsumerProcess,
    ProducerProcess,
    TxnProcess,
    TxnProducerProcess,
    bootstrap,
)
from harness.cluster import KafkaCluster
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec

# Broker answers after which the record was definitely not written; the rest (timeouts, connections
# lost, the client's own retry limit) leave it unknown.
DEFINITELY_NOT_WRITTEN = {"MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD", "CORRUPT_MESSAGE",
                          "TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION"}
REFUSED_BEFORE_APPEND = {"NOT_ENOUGH_REPLICAS", "INVALID_TIMESTAMP"}  # definite only when nothing was retried


def classify(error: str | None, retries: int) -> str:
    """A send's status from its promise's error (``NAME: description`` for a broker's answer)."""
    if error is None:
        return "ok"
    name = error.split(":", 1)[0]
    if name in DEFINITELY_NOT_WRITTEN or (name in REFUSED_BEFORE_APPEND and retries == 0):
        return "fail"
    return "info"


class FranzProcess(ClientProcess):
    """A franz-go client: the driver program of franz-go ``version`` in its role."""

    library = "franz-go"

    def command_line(self) -> list[str]:
        return [str(franz_build.program(self.version)), self.role]


class FranzProducer(ProducerProcess, FranzProcess):
    """A recording producer (the program's ``producer`` role)."""

    classify = staticmethod(classify)

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str):
        super().__init__(name, spec, cluster, topic, partitions, stop, version,
                         producer_properties(cluster, name, spec))


def txn_properties(cluster: KafkaCluster, name: str, timeout_ms: int, config: dict) -> dict[str, str]:
    """A transactional client's properties under Kafka's names (the program takes the transactional
    id and timeout as franz-go's options)."""
    return as_properties({"bootstrap.servers": bootstrap(cluster, name), "transactional.id": f"kchaos-{name}",
                  "transaction.timeout.ms": timeout_ms, "request.timeout.ms": 5000,
                  "delivery.timeout.ms": max(timeout_ms, 10000), "metadata.max.age.ms": 5000, **config})


class FranzTxnProcess(TxnProcess, FranzProcess):
    """A franz-go transactional client; its sends' errors read as a plain producer's."""

    classify = staticmethod(classify)


class FranzTransactionalProducer(TxnProducerProcess, FranzTxnProcess):
    """The program's ``txn-producer`` role."""

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int, version: str):
        super().__init__(name, spec, cluster, topic, partitions, stop, seed, version,
                         txn_properties(cluster, name, spec.transaction_timeout_ms, {"linger.ms": spec.linger_ms,
                                                                                     **spec.config}))


class FranzCopier(FranzTxnProcess):
    """Consume-transform-produce with exactly-once semantics in one process: franz-go's
    GroupTransactSession, a read_committed member of ``spec.group`` whose offsets each transaction commits."""

    role = "copier"

    def __init__(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
                 out_partitions: int, stop: threading.Event, version: str):
        consumer = as_properties({
            "group.id": spec.group, "isolation.level": "read_committed", "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 6000,
            "fetch.max.wait.ms": 100, "max.poll.records": spec.txn_records})
        super().__init__(spec.name, cluster, version, stop,
                         txn_properties(cluster, spec.name, spec.transaction_timeout_ms, spec.config),
                         consumer_properties=consumer, group=spec.group, input_topic=input_topic,
                         output_topic=output_topic, output_partitions=out_partitions,
                         transaction_timeout_ms=spec.transaction_timeout_ms)
        self.spec, self.cluster, self.input = spec, cluster, input_topic


class FranzConsumer(ConsumerProcess, FranzProcess):
    """A recording consumer (the program's ``consumer`` role)."""


def member_properties(g: GroupSpec, base: dict) -> dict:
    """A group member's properties under Kafka's names, which the program maps to franz-go's options."""
    return as_properties({
        "bootstrap.servers": base["bootstrap.servers"], "group.id": g.name, "isolation.level": g.isolation_level,
        "auto.offset.reset": "earliest", "enable.auto.commit": g.commit == "auto",
        "auto.commit.interval.ms": g.auto_commit_interval_ms, "max.poll.interval.ms": g.max_poll_interval_ms,
        "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000, "partition.assignment.strategy": g.assignor,
        "session.timeout.ms": g.session_timeout_ms, "heartbeat.interval.ms": max(200, g.session_timeout_ms // 6),
        **g.config})


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict:
    """The producer's table under Kafka's property names. An idempotent franz-go producer keeps up to
    5 requests in flight itself and refuses the option, so ``max_in_flight`` is given only without
    idempotence."""
    in_flight = {} if spec.idempotence else {"max.in.flight.requests.per.connection": spec.max_in_flight}
    return as_properties({
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "enable.idempotence": spec.idempotence,
        "retries": spec.retries, **in_flight, "linger.ms": spec.linger_ms,
        "delivery.timeout.ms": spec.delivery_timeout_ms,
        "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, **spec.config})


class FranzDriver:
    """Makes a run's clients as franz-go processes."""

    name = "franz-go"

    def __init__(self, version: str):
        self.franz = franz_version(version)
        self.version = f"franz-go {self.franz}"

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> ProducerClient:
        if spec.transactional:
            return FranzTransactionalProducer(name, spec, cluster, topic, partitions, stop, seed, self.franz)
        return FranzProducer(name, spec, cluster, topic, partitions, stop, self.franz)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> FranzConsumer:
        return FranzConsumer(name, spec, cluster, topic, partitions, stop, isolation, self.franz)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event) -> CopierClient:
        return FranzCopier(spec, cluster, input_topic, output_topic, out_partitions, stop, self.franz)

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        """Members are the program's ``member`` role, acted on and read as every library's are (groups.py)."""
        return Group(spec, cluster, topic, partitions, work, command=[str(franz_build.program(self.franz)), "member"],
                     conf=member_properties)

    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int):
        raise ValueError("the franz-go driver has no share consumer (config.refusal refuses the table)")


def driver_for(version: str) -> FranzDriver:
    return FranzDriver(version)
