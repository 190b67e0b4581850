"""What making nodes faultable costs a run that faults nothing: the recording producer's throughput
(acks=all, idempotent, linger 5 ms, 64 KiB batches, no faults) on a cluster of plain nodes, on one
whose JVMs run with libfaketime preloaded at offset 0 (``skewable_clocks``, the clock_skew fault's
mechanism) and on one whose log directories are served through kchaos-diskfs failing nothing
(``faultable_disks``, the disk faults' mechanism). Each cluster is booted once; its producer runs a
discarded warm-up and then --rounds rounds; the median is compared with the plain cluster's.

Usage: python benchmarks/node_faults.py [--seconds 8] [--rounds 3] [--warmup 8] [--kafka-version 3.9.1]
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.producer import recording_producer
from harness.cluster import ClusterSettings, KafkaCluster, reaper
from harness.setup import cluster_images

KINDS = {"plain": {}, "skewable clocks": {"skewable_clocks": True}, "faultable disks": {"faultable_disks": True}}


def rates(settings: ClusterSettings, seconds: float, rounds: int, warmup: float) -> list[float]:
    """Records per second acknowledged in each round, after a warm-up, on a cluster of ``settings``."""
    with KafkaCluster(settings, cluster_images(settings.kafka_version, disks=settings.faultable_disks)) as c:
        c.create_topic("bench", partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
        recording_producer(c, "bench", warmup)
        out = []
        for _ in range(rounds):
            n, took, _ = recording_producer(c, "bench", seconds)
            out.append(n / took)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=8)
    ap.add_argument("--kafka-version", default="3.9.1")
    a = ap.parse_args()
    reaper.install_signal_handlers()
    medians = {}
    for name, extra in KINDS.items():
        r = rates(ClusterSettings(kafka_version=a.kafka_version, zookeepers=1, **extra), a.seconds, a.rounds,
                  a.warmup)
        medians[name] = statistics.median(r)
        print(f"{name:16} records/s per round: {', '.join(f'{x:,.0f}' for x in r)}; median {medians[name]:,.0f}",
              flush=True)
    for name in list(KINDS)[1:]:
        print(f"{name:16} {medians[name] / medians['plain']:.2f} of plain")


if __name__ == "__main__":
    main()
