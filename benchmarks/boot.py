"""Cluster boot benchmark: from start to every partition of a new RF=3 topic having a full ISR.

Images must already be built. Prints each run and the median.
Usage: python benchmarks/boot.py [--kafka-version 3.9.1] [--mode zk] [--quorum 3] [--runs 3]
(--quorum: KRaft controllers, 1, 3 or 5; ZooKeeper servers, 1 or 3; default 3)
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
    ap.add_argument("--quorum", type=int, default=3, help="KRaft controllers (1, 3, 5) or ZooKeeper servers (1, 3)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    size = {"controllers": a.quorum} if a.mode == "kraft" else {"zookeepers": a.quorum}
    s = ClusterSettings(kafka_version=a.kafka_version, mode=a.mode, brokers=3, **size)
    totals = []
    for i in range(a.runs):
        ready, total = boot_once(s)
        totals.append(total)
        print(f"run {i + 1}: brokers registered {ready:.1f} s, full ISR on RF=3 topic {total:.1f} s")
    med = statistics.median(totals)
    verdict = "meets" if med <= 20 else "misses"
    nodes = "controllers" if a.mode == "kraft" else "ZooKeeper servers"
    print(f"Kafka {a.kafka_version} {a.mode}, {a.quorum} {nodes}, 3 brokers + Toxiproxy: median boot {med:.1f} s "
          f"over {a.runs} runs ({verdict} the 20 s target)")


if __name__ == "__main__":
    main()
