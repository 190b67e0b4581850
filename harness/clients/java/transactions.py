"""The Java driver's transactional clients: a transactional producer (TransactionalProducer.java) and
the exactly-once copier (Copier.java), each a JVM process, recording what the v2 contract needs as
the librdkafka driver's do (transactions.py): their sends with each one's transaction (and, for a
copy, its source), their transactions, and for the copier its reads and the offsets its committed
transactions carried. Their history file is TxnLog.java's: JSON lines, one object under its kind.
"""

from __future__ import annotations

import threading

from harness.clients.java.config import split_config
from harness.clients.java.process import JavaProcess
from harness.clients.java_errors import classify
from harness.clients.process import TxnProcess, TxnProducerProcess, bootstrap
from harness.cluster import KafkaCluster
from harness.scenario import CopierSpec, ProducerSpec

READ_COMMITTED = "read_committed"


def txn_properties(cluster: KafkaCluster, name: str, txn_id: str, timeout_ms: int, config: dict) -> dict:
    """kafka-clients properties of a transactional producer named ``name`` whose transactional.id is
    ``txn_id``, as transactions.txn_conf's are librdkafka's; a transactional call blocks up to max.block.ms."""
    return {"bootstrap.servers": bootstrap(cluster, name), "transactional.id": txn_id,
            "enable.idempotence": True, "acks": "all", "transaction.timeout.ms": timeout_ms,
            "request.timeout.ms": 5000, "delivery.timeout.ms": max(timeout_ms, 10000), "max.block.ms": 10000,
            "metadata.max.age.ms": 5000, **config}


class JavaTxnProcess(TxnProcess, JavaProcess):
    """A Java transactional client's JVM; its sends' errors are Java exceptions."""

    classify = staticmethod(classify)


class JavaTransactionalProducer(TxnProducerProcess, JavaTxnProcess):
    """TransactionalProducer.java in a JVM."""

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int, version: str):
        super().__init__(name, spec, cluster, topic, partitions, stop, seed, version,
                         txn_properties(cluster, name, spec.transactional_id_of(name), spec.transaction_timeout_ms,
                                        {"linger.ms": spec.linger_ms, **spec.config}))


class JavaCopier(JavaTxnProcess):
    """Consume-transform-produce with exactly-once semantics, in one JVM: a consumer of ``spec.group``
    (read_committed) and a transactional producer that commits the group's offsets with each copy."""

    role = "copier"

    def __init__(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
                 out_partitions: int, stop: threading.Event, version: str):
        producer = txn_properties(cluster, spec.name, spec.transactional_id, spec.transaction_timeout_ms,
                                  split_config(spec.config, "producer", version))
        consumer = {"bootstrap.servers": bootstrap(cluster, spec.name), "group.id": spec.group_id,
                    "isolation.level": READ_COMMITTED, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                    "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 6000,
                    "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000, "max.poll.records": spec.txn_records,
                    **split_config(spec.config, "consumer", version)}
        super().__init__(spec.name, cluster, version, stop, producer, consumer_properties=consumer,
                         group=spec.group_id, input_topic=input_topic, output_topic=output_topic,
                         output_partitions=out_partitions, transaction_timeout_ms=spec.transaction_timeout_ms)
        self.spec, self.cluster, self.input = spec, cluster, input_topic

