"""The driver for Apache Kafka's Java client (kafka-clients): every client is a JVM process of its own
running ``src/kchaos/Driver.java``, built from Maven Central the first time a scenario uses it (clients/java/build.py)
for the broker's Kafka version, talked to by the process protocol of docs/drivers.md (java_process.py).

Producers (plain and idempotent), consumers, consumer-group members (GroupMember.java, acted on
and read as librdkafka's members are: groups.py), and the transactional producer and the copier
(transactions.py), and share-group members (share_groups.py) are built. The final read and a
group's final offsets are the harness's own (``clients.reader``), whatever client is under test.
"""

from __future__ import annotations

import threading
from pathlib import Path

from harness.clients import CopierClient, ProducerClient
from harness.clients.groups import Group
from harness.clients.java.process import JavaProcess, java_command
from harness.clients.java.share_groups import ShareGroup
from harness.clients.java.transactions import JavaCopier, JavaTransactionalProducer
from harness.clients.java_errors import classify
from harness.clients.process import ConsumerProcess, ProducerProcess, bootstrap
from harness.cluster import KafkaCluster
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec


class JavaProducer(ProducerProcess, JavaProcess):
    """A recording producer in a JVM (RecordingProducer.java)."""

    classify = staticmethod(classify)

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str):
        super().__init__(name, spec, cluster, topic, partitions, stop, version,
                         producer_properties(cluster, name, spec))


class JavaConsumer(ConsumerProcess, JavaProcess):
    """A recording consumer in a JVM (RecordingConsumer.java)."""


ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
             "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
             "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}


def member_properties(g: GroupSpec, base: dict) -> dict:
    """A group member's kafka-clients properties, as groups.member_conf's are librdkafka's."""
    conf = {"bootstrap.servers": base["bootstrap.servers"], "group.id": g.group_id,
            "isolation.level": g.isolation_level, "auto.offset.reset": "earliest",
            "enable.auto.commit": g.commit == "auto",
            "auto.commit.interval.ms": g.auto_commit_interval_ms, "max.poll.interval.ms": g.max_poll_interval_ms,
            "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000}
    if g.protocol == "consumer":  # session and heartbeat are the broker's settings
        return {**conf, "group.protocol": "consumer", **g.config}
    return {**conf, "group.protocol": "classic", "partition.assignment.strategy": ASSIGNORS[g.assignor],
            "session.timeout.ms": g.session_timeout_ms, "heartbeat.interval.ms": max(200, g.session_timeout_ms // 6),
            **g.config}


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict:
    """The producer's table as kafka-clients properties; the request timeout leaves room in the
    delivery timeout, which the Java client requires to cover linger and one request."""
    return {
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "enable.idempotence": spec.idempotence,
        "retries": spec.retries, "max.in.flight.requests.per.connection": spec.max_in_flight,
        "linger.ms": spec.linger_ms, "delivery.timeout.ms": spec.delivery_timeout_ms,
        "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, **spec.config,
    }


class JavaDriver:
    """Makes a run's clients as kafka-clients processes of the broker's version."""

    name = "java"

    def __init__(self, kafka_version: str):
        self.kafka_version = kafka_version
        self.version = f"kafka-clients {kafka_version}"

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> ProducerClient:
        if spec.transactional:
            return JavaTransactionalProducer(name, spec, cluster, topic, partitions, stop, seed, self.kafka_version)
        return JavaProducer(name, spec, cluster, topic, partitions, stop, self.kafka_version)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> JavaConsumer:
        return JavaConsumer(name, spec, cluster, topic, partitions, stop, isolation, self.kafka_version)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event) -> CopierClient:
        return JavaCopier(spec, cluster, input_topic, output_topic, out_partitions, stop, self.kafka_version)

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        """Members are GroupMember.java processes, acted on and read as librdkafka's are (groups.py)."""
        return Group(spec, cluster, topic, partitions, work, command=java_command(self.kafka_version, "member"),
                     conf=member_properties)

    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int) -> ShareGroup:
        """Members are ShareMember.java processes (KafkaShareConsumer)."""
        return ShareGroup(spec, cluster, topic, partitions, work, self.kafka_version, seed)


def driver_for(kafka_version: str) -> JavaDriver:
    """The driver of kafka-clients of the broker's version."""
    return JavaDriver(kafka_version)
