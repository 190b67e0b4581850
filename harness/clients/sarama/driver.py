"""The driver for sarama (github.com/IBM/sarama): every client is a process of its own running the
program in ``src/`` (built per sarama version by build.py), talked to by the process protocol of
docs/drivers.md (harness/clients/go_program.py, the same for every Go library).

Producers (plain, idempotent and transactional: sarama's AsyncProducer), consumers (a partition
consumer each), consumer-group members (sarama's ConsumerGroup, classic protocol) and the
exactly-once copier (a consumer group and a transactional producer, AddOffsetsToTxn) are built.
What sarama cannot tell, and so the driver cannot record, is in docs/drivers.md ("The sarama
driver"): no commit acknowledgements (the group's commits are the coordinator's own record), no last
stable offset (a read_committed read's hw is the high watermark), no delivery timeout.
"""

from __future__ import annotations

from harness.clients.go_program import (
    GoDriver,
    GoLibrary,
    as_properties,
    copier_consumer_properties,
    member_properties,
)
from harness.clients.go_program import txn_properties as go_txn_properties
from harness.clients.process import bootstrap
from harness.clients.sarama.build import PROGRAM
from harness.cluster import KafkaCluster
from harness.scenario import ProducerSpec


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict[str, str]:
    """The producer's table under Kafka's property names. sarama has no delivery timeout (a record
    is retried ``retries`` times), so ``delivery_timeout_ms`` bounds only the program's wait for the
    promises still open when the workload ends; an idempotent sarama producer allows one request in
    flight (sarama refuses more), so ``max_in_flight`` is given only without idempotence."""
    in_flight = {} if spec.idempotence else {"max.in.flight.requests.per.connection": spec.max_in_flight}
    return as_properties({
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "enable.idempotence": spec.idempotence,
        "retries": spec.retries, **in_flight, "linger.ms": spec.linger_ms,
        "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, "kchaos.close.timeout.ms": spec.delivery_timeout_ms,
        "kchaos.kafka.version": cluster.settings.kafka_version, **spec.config})


def txn_properties(cluster: KafkaCluster, name: str, txn_id: str, timeout_ms: int, config: dict) -> dict[str, str]:
    """A transactional client's properties: every Go library's, less the delivery timeout sarama
    does not have, with the broker's version (sarama speaks the protocol versions of the version
    it is told)."""
    props = go_txn_properties(cluster, name, txn_id, timeout_ms, config)
    props.pop("delivery.timeout.ms", None)
    return {**props, "kchaos.kafka.version": cluster.settings.kafka_version}


SARAMA = GoLibrary(PROGRAM, producer_properties, txn_properties, member_properties, copier_consumer_properties,
                   reports_commits=False)


def driver_for(version: str) -> GoDriver:
    return GoDriver(SARAMA, version)
