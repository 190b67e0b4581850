"""Cluster boot benchmark: from start to every partition of a new RF=3 topic having a full ISR.

Images must already be built. Prints each run, the CPU seconds its nodes' containers used up to a
full ISR (their cgroups' own accounting), and the medians.
Usage: python benchmarks/boot.py [--kafka-version 3.9.1] [--mode zk] [--quorum 3] [--runs 3] [--paired]
(--quorum: KRaft controllers, 1, 3 or 5; ZooKeeper servers, 1 or 3; default 3; --paired: each run
twice, with and without the images' class-data archive, one after the other)
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.cluster import ClusterSettings, KafkaCluster
from harness.setup import cluster_images

CPU_FILES = "cat /sys/fs/cgroup/cpu.stat 2>/dev/null || cat /sys/fs/cgroup/cpuacct/cpuacct.usage"


def node_cpu_s(c: KafkaCluster) -> float:
    """CPU seconds every node's container has used so far (cgroup v2's usage_usec or v1's ns)."""
    total = 0.0
    for key in c.container_keys():
        code, out = c.exec(key, ["sh", "-c", CPU_FILES])
        words = out.split()
        if code != 0 or not words:
            raise RuntimeError(f"{key}: no CPU accounting ({out.strip()})")
        total += int(words[1]) / 1e6 if words[0] == "usage_usec" else int(words[0]) / 1e9
    return total


def boot_once(settings: ClusterSettings) -> tuple[float, float, float]:
    """Seconds to registered brokers, to a full ISR, and the nodes' CPU seconds by then."""
    t0 = time.monotonic()
    c = KafkaCluster(settings, cluster_images(settings.kafka_version))
    try:
        c.start()
        t_ready = time.monotonic() - t0
        c.create_topic("boot", partitions=3, replication_factor=3)
        c.wait_full_isr("boot")
        return t_ready, time.monotonic() - t0, node_cpu_s(c)
    finally:
        c.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="zk")
    ap.add_argument("--quorum", type=int, default=3, help="KRaft controllers (1, 3, 5) or ZooKeeper servers (1, 3)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--paired", action="store_true", help="each run also without the class-data archive")
    a = ap.parse_args()
    size = {"controllers": a.quorum} if a.mode == "kraft" else {"zookeepers": a.quorum}
    s = ClusterSettings(kafka_version=a.kafka_version, mode=a.mode, brokers=3, **size)
    kinds = {"": s} if not a.paired else {
        "with the archive: ": s, "without: ": s.model_copy(update={"class_data_archive": False})}
    totals: dict[str, list[float]] = {k: [] for k in kinds}
    cpus: dict[str, list[float]] = {k: [] for k in kinds}
    for i in range(a.runs):
        for kind, settings in kinds.items():
            ready, total, cpu = boot_once(settings)
            totals[kind].append(total)
            cpus[kind].append(cpu)
            print(f"run {i + 1}: {kind}brokers registered {ready:.1f} s, full ISR on RF=3 topic {total:.1f} s, "
                  f"nodes' CPU {cpu:.1f} s")
    nodes = "controllers" if a.mode == "kraft" else "ZooKeeper servers"
    for kind in kinds:
        med = statistics.median(totals[kind])
        verdict = "meets" if med <= 20 else "misses"
        print(f"{kind}Kafka {a.kafka_version} {a.mode}, {a.quorum} {nodes}, 3 brokers + Toxiproxy: median boot "
              f"{med:.1f} s, nodes' CPU {statistics.median(cpus[kind]):.1f} s over {a.runs} runs "
              f"({verdict} the 20 s target)")


if __name__ == "__main__":
    main()
