"""Cluster boot benchmark: from start to every partition of a new RF=3 topic having a full ISR.

Images must already be built. Prints each run and the median.
Usage: python benchmarks/boot.py [--kafka-version 3.9.1] [--mode zk] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.cluster import ClusterSettings, KafkaCluster
from harness.setup import cluster_images


def boot_once(settings: ClusterSettings) -> tuple[float, float]:
    t0 = time.monotonic()
    c = KafkaCluster(settings, cluster_images(settings.kafka_version))
    try:
        c.start()
        t_ready = time.monotonic() - t0
        c.create_topic("boot", partitions=3, replication_factor=3)
        c.wait_full_isr("boot")
        return t_ready, time.monotonic() - t0
    finally:
        c.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="zk")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    s = ClusterSettings(kafka_version=a.kafka_version, mode=a.mode, brokers=3)
    totals = []
    for i in range(a.runs):
        ready, total = boot_once(s)
        totals.append(total)
        print(f"run {i + 1}: brokers registered {ready:.1f} s, full ISR on RF=3 topic {total:.1f} s")
    med = statistics.median(totals)
    verdict = "meets" if med <= 20 else "misses"
    print(f"Kafka {a.kafka_version} {a.mode}, 3 brokers + Toxiproxy: median boot {med:.1f} s "
          f"over {a.runs} runs ({verdict} the 20 s target)")


if __name__ == "__main__":
    main()
