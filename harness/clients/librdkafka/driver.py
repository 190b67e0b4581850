"""The confluent-kafka (librdkafka) driver: the recording producer and consumer (workload.py), the
transactional producer and the exactly-once copier (transactions.py), consumer-group members as
processes of their own (member.py, run by clients/groups.py). It is also the harness's reader of the
brokers after healing (``HarnessReader``): the final read and a group's committed offsets."""

from __future__ import annotations

import threading
from pathlib import Path

from confluent_kafka import libversion

from harness.clients.groups import Group, final_offsets
from harness.clients.librdkafka.transactions import Copier, TransactionalProducer
from harness.clients.librdkafka.workload import (
    BareConsumer,
    BareProducer,
    RecordingConsumer,
    RecordingProducer,
    final_read,
)
from harness.cluster import KafkaCluster
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec


class ConfluentDriver:
    name = "librdkafka"
    version = f"librdkafka {libversion()[0]}"

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> RecordingProducer:
        if spec.transactional:
            return TransactionalProducer(name, spec, cluster, topic, partitions, stop, seed)
        return RecordingProducer(name, spec, cluster, topic, partitions, stop)

    def bare_producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                      stop: threading.Event) -> BareProducer:
        """The recording producer's settings and loop recording nothing: what it is measured against
        (benchmarks/producer.py)."""
        return BareProducer(name, spec, cluster, topic, partitions, stop)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> RecordingConsumer:
        return RecordingConsumer(name, spec, cluster, topic, partitions, stop, isolation=isolation)

    def bare_consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                      stop: threading.Event) -> BareConsumer:
        """The recording consumer's settings reading flat out and recording nothing: what it is
        measured against (benchmarks/consumer.py)."""
        return BareConsumer(name, spec, cluster, topic, partitions, stop)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event) -> Copier:
        return Copier(spec, cluster, input_topic, output_topic, out_partitions, stop)

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        return Group(spec, cluster, topic, partitions, work)

    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int) -> Group:
        raise ValueError(f"share group {spec.name}: librdkafka has no share consumer (registry.LIBRARIES)")

    def final_read(self, cluster: KafkaCluster, topic: str, partitions: int) -> list[dict]:
        return final_read(cluster, topic, partitions)

    def group_final_offsets(self, cluster: KafkaCluster, group: str, topic: str) -> list[dict]:
        return final_offsets(cluster, group, topic)


DRIVER = ConfluentDriver()


def driver_for(kafka_version: str) -> ConfluentDriver:
    """The one confluent-kafka driver: the library installed, against any broker version."""
    return DRIVER
