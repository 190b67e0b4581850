"""How long one small transaction takes, back to back: begin, send N records over three partitions,
commit; librdkafka (confluent-kafka) against a three-broker cluster behind Toxiproxy, as kchaos's
transactional producer does it, with no fault.

It prints the median and 90th percentile of the whole cycle and of the commit call, the
transactions per second that makes, and, from librdkafka's own debug log (``debug=eos``), how often
AddPartitionsToTxn was refused with CONCURRENT_TRANSACTIONS and retried: the coordinator still
completing the previous transaction. ``--broker-config`` starts the cluster with other broker
settings, to see which part of the cycle each one moves.

Usage: python benchmarks/txn_cycle.py [--records 7] [--seconds 15] [--kafka-version 3.9.1] [--mode kraft]
                                      [--broker-config KEY=VALUE ...] [--client-config KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from confluent_kafka import Producer

from harness.cluster import ClusterSettings, KafkaCluster
from harness.setup import cluster_images

PARTITIONS = 3


class Counter(logging.Handler):
    """Counts librdkafka debug lines that mention a phrase."""

    def __init__(self, phrase: str):
        super().__init__()
        self.phrase, self.n = phrase, 0

    def emit(self, record: logging.LogRecord) -> None:
        if self.phrase in record.getMessage():
            self.n += 1


def cycles(c: KafkaCluster, topic: str, records: int, seconds: float, client: dict[str, str]) -> dict:
    log = logging.getLogger("bench.txn")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    retries = Counter("another concurrent operation")  # CONCURRENT_TRANSACTIONS, as librdkafka words it
    log.addHandler(retries)
    p = Producer(c.client_config("bench", **{"transactional.id": "bench", "enable.idempotence": True, "acks": "all",
                                             "linger.ms": 5, "debug": "eos", **client}), logger=log)
    p.init_transactions(30)
    whole, commit = [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        p.begin_transaction()
        for i in range(records):
            p.produce(topic, b"x" * 16, partition=i % PARTITIONS)
        p.poll(0)
        t1 = time.monotonic()
        p.commit_transaction(30)
        t2 = time.monotonic()
        whole.append((t2 - t0) * 1000)
        commit.append((t2 - t1) * 1000)
    p.flush(10)
    return {"txns": len(whole), "whole": whole, "commit": commit, "retries": retries.n}


def p90(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.9)]


def _pairs(items: list[str] | None) -> dict[str, str]:
    return dict(x.split("=", 1) for x in items or [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="kraft")
    ap.add_argument("--broker-config", nargs="*", help="KEY=VALUE broker properties")
    ap.add_argument("--client-config", nargs="*", help="KEY=VALUE librdkafka properties")
    a = ap.parse_args()
    broker = _pairs(a.broker_config)
    settings = ClusterSettings(kafka_version=a.kafka_version, mode=a.mode, broker_config=broker)
    with KafkaCluster(settings, cluster_images(a.kafka_version)) as c:
        c.create_topic("txn", PARTITIONS, 3, {"min.insync.replicas": "2"})
        c.wait_full_isr("txn")
        cycles(c, "txn", a.records, 3, _pairs(a.client_config))  # warm-up: coordinator loaded, connections open
        r = cycles(c, "txn", a.records, a.seconds, _pairs(a.client_config))
    n = r["txns"]
    client = _pairs(a.client_config) or "kchaos"
    print(f"Kafka {a.kafka_version} {a.mode}, broker {broker or 'defaults'}, client {client}: "
          f"{n} transactions of {a.records} records in {a.seconds:g} s = {n / a.seconds:.1f}/s; cycle median "
          f"{statistics.median(r['whole']):.0f} ms (p90 {p90(r['whole']):.0f}), commit call median "
          f"{statistics.median(r['commit']):.0f} ms (p90 {p90(r['commit']):.0f}); CONCURRENT_TRANSACTIONS retries "
          f"{r['retries']} ({r['retries'] / max(1, n):.2f} per transaction)")


if __name__ == "__main__":
    main()
