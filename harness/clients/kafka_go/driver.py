"""The driver for kafka-go (github.com/segmentio/kafka-go): every client is a process of its own
running the program in ``src/`` (built per kafka-go version by build.py), talked to by the process
protocol of docs/drivers.md (harness/clients/go_program.py, the same for every Go library).

Plain producers (kafka-go's asynchronous Writer; kafka-go has no idempotent or transactional
producer), consumers (a partition Reader each) and consumer-group members (kafka-go's
ConsumerGroup, a partition Reader per assigned partition, commits with the generation's
CommitOffsets) are built; docs/drivers.md ("The kafka-go driver") says what it cannot record.
"""

from __future__ import annotations

from harness.clients.go_program import (
    GoDriver,
    GoLibrary,
    as_properties,
    copier_consumer_properties,
    member_properties,
    txn_properties,
)
from harness.clients.kafka_go.build import PROGRAM
from harness.clients.process import bootstrap
from harness.cluster import KafkaCluster
from harness.scenario import ProducerSpec


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict[str, str]:
    """The producer's table under Kafka's property names. kafka-go has no delivery timeout (a record
    is tried ``retries`` + 1 times), so ``delivery_timeout_ms`` bounds only the program's wait for the
    completions still open when the workload ends; it writes one batch at a time to a partition,
    so ``max_in_flight`` is not given."""
    return as_properties({
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "retries": spec.retries,
        "linger.ms": spec.linger_ms, "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, "kchaos.close.timeout.ms": spec.delivery_timeout_ms, **spec.config})


KAFKA_GO = GoLibrary(PROGRAM, producer_properties, txn_properties, member_properties, copier_consumer_properties)


def driver_for(version: str) -> GoDriver:
    return GoDriver(KAFKA_GO, version)
