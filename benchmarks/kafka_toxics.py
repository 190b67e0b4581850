"""What the Kafka toxics cost: kafka-producer-perf-test (acks=all, idempotent, the producer
benchmark's settings, 100-byte records) through a cluster started without and with
``losable_answers`` (every Kafka link read by kchaos's two Kafka-protocol toxics, unarmed), so the
client's and the replication's bytes both pass through them. One cluster at a time: --rounds
perf-test runs of --records records on each after a discarded warm-up of the same size; the medians
of records/s are compared. Nothing is armed: this is the price every run of a cluster that may lose
answers pays.

Usage: python benchmarks/kafka_toxics.py [--records 2000000] [--rounds 3] [--kafka-version 3.9.1] [--mode kraft]
"""

from __future__ import annotations

import argparse
import re
import statistics

from producer import SETTINGS, tool  # benchmarks/ is on the path when run as a script

from harness.cluster import ClusterSettings, KafkaCluster
from harness.setup import cluster_images

TOPIC = "perf"
RECORD_SIZE = 100


def perf_test(c: KafkaCluster, records: int) -> float:
    out = tool(c, "org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records", str(records),
               "--record-size", str(RECORD_SIZE), "--throughput", "-1", "--producer-props",
               f"bootstrap.servers={c.bootstrap_servers}", *(f"{k}={v}" for k, v in SETTINGS.items()))
    m = re.search(r"([\d.]+) records/sec", out.strip().splitlines()[-1])
    if m is None:
        raise SystemExit(f"could not read kafka-producer-perf-test's output:\n{out[-2000:]}")
    return float(m.group(1))


def rates(version: str, mode: str, losable: bool, records: int, rounds: int) -> list[float]:
    settings = ClusterSettings(kafka_version=version, mode=mode, losable_answers=losable)
    with KafkaCluster(settings, cluster_images(version)) as c:
        c.create_topic(TOPIC, 3, 3, {"min.insync.replicas": "2"})
        c.wait_full_isr(TOPIC)
        perf_test(c, records)  # warm-up: the brokers' JIT, the topic's first segments
        out = [perf_test(c, records) for _ in range(rounds)]
    print(f"{'with' if losable else 'without'} the Kafka toxics: " + ", ".join(f"{r:,.0f}" for r in out)
          + " records/s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="kraft")
    a = ap.parse_args()
    plain = statistics.median(rates(a.kafka_version, a.mode, False, a.records, a.rounds))
    read = statistics.median(rates(a.kafka_version, a.mode, True, a.records, a.rounds))
    print(f"kafka-producer-perf-test, {RECORD_SIZE}-byte records, acks=all: {plain:,.0f} records/s without, "
          f"{read:,.0f} with the Kafka toxics on every link (medians of {a.rounds}): ratio {read / plain:.2f}; "
          f"Kafka {a.kafka_version} {a.mode}")


if __name__ == "__main__":
    main()
