"""Transactional producer benchmark: kchaos's transactional producer (every send and every
transaction recorded) against Kafka's own kafka-producer-perf-test with --transactional-id, on the
same cluster, with the same transaction size, in one run.

perf-test commits every --transaction-duration-ms; in each round it runs first, and the kchaos
producer then writes transactions of as many records as one of perf-test's held in that round. Records
are the same size on both sides (the mean length of kchaos's payload ids). Both run flat out with
acks=all, idempotence, linger.ms=5, no compression, and take turns for --rounds rounds after a
discarded warm-up of each, perf-test sending as many records as the kchaos producer did in the round
before; the medians are compared.

Usage: python benchmarks/txn_producer.py [--seconds 10] [--rounds 3] [--txn-ms 100] [--kafka-version 3.9.1]
                                         [--mode kraft]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from producer import SETTINGS, bench_cluster, perf_test  # benchmarks/ is on the path when run as a script

from harness.clients.librdkafka.transactions import TransactionalProducer
from harness.cluster import KafkaCluster
from harness.history.events import now_ms
from harness.scenario import ProducerSpec


def kchaos_txn(c: KafkaCluster, topic: str, seconds: float, txn_records: int) -> tuple[int, float, int, int]:
    """Records acknowledged, seconds, the payloads' mean length, and transactions committed. The
    seconds start at the first transaction, as perf-test's clock starts after initTransactions()."""
    spec = ProducerSpec(name="bench", transactional=True, txn_records=txn_records, rate=1e9, linger_ms=5)
    stop = threading.Event()
    p = TransactionalProducer("bench", spec, c, topic, 3, stop, seed=1)
    p.conf.update({"batch.size": 65536, "compression.type": "none"})
    p.start()
    time.sleep(seconds)
    stop.set()
    p.join()
    ended_ms = now_ms()
    cols, txns = p.columns(), p.log.txns
    elapsed = (ended_ms - txns[0]["begin_ts_ms"]) / 1000
    bad = [t for t in txns if t["outcome"] != "committed"]
    if p.failure is not None or bad:
        raise SystemExit(f"kchaos transactional producer: {len(bad)} transactions not committed ({p.failure!r})")
    acked = cols["status"].count("ok")
    mean_len = round(sum(map(len, cols["value"])) / len(cols["value"]))
    return acked, elapsed, mean_len, len(txns)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--txn-ms", type=int, default=100, help="perf-test's --transaction-duration-ms")
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="kraft")
    a = ap.parse_args()
    txn_args = ["--transactional-id", "kchaos-perf", "--transaction-duration-ms", str(a.txn_ms)]
    ours: list[float] = []
    theirs: list[float] = []
    with bench_cluster(a.kafka_version, a.mode) as c:
        n, _, size, _ = kchaos_txn(c, "rec", a.seconds, 1000)  # warm-up, discarded
        perf_test(c, "perf", n, size, txn_args)  # warms perf-test's JIT too
        for r in range(a.rounds):
            # perf-test first: how many records its transactions hold at its speed in this round is
            # the transaction size the kchaos producer then writes.
            theirs.append(perf_test(c, "perf", n, size, txn_args))
            txn_records = max(1, round(theirs[-1] * a.txn_ms / 1000))
            n, secs, size, k = kchaos_txn(c, "rec", a.seconds, txn_records)
            ours.append(n / secs)
            print(f"round {r + 1}: perf-test {theirs[-1]:,.0f} records/s ({size}-byte records), so {txn_records} "
                  f"records per transaction; kchaos {ours[-1]:,.0f} records/s ({n:,} in {secs:.1f} s, {k} "
                  "transactions)", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"kchaos transactional producer: {mo:,.0f} records/s (median of {a.rounds}; every send and transaction "
          "recorded)")
    print(f"kafka-producer-perf-test --transactional-id: {mt:,.0f} records/s (median of {a.rounds})")
    print(f"ratio {mo / mt:.2f} (target >= 0.7); Kafka {a.kafka_version} {a.mode}, {txn_records} records per "
          f"transaction (last round), acks=all, linger.ms=5, {', '.join(f'{k}={v}' for k, v in SETTINGS.items())}")


if __name__ == "__main__":
    main()
