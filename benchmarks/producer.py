"""Producer benchmark: kchaos's recording producer against its own library driven flat out, on the
same cluster, topic and settings, in one run: the Java driver against Kafka's own
kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance), the others against the library
with nothing recorded (below).

Settings for both: acks=all, idempotence on, linger.ms=5, batch.size=65536, no compression,
no faults; both reach the brokers through the same Toxiproxy client proxies. Records are the same
size on both sides: perf-test's --record-size is the mean length of the payload ids the recording
producer just sent ("bench-<seq>", 13 bytes at these rates). With acks=all the pipeline is bound
by in-flight requests, so records per second follow records per 64 KiB batch: sizes that differ
by 3 bytes would move the ratio by about 15% on their own.
The Java tool runs in the Kafka image on the host's network namespace so it can use 127.0.0.1.
Both get a discarded warm-up of --warmup seconds' worth of records (the brokers' JIT, the topics'
first segments): after a 3-second warm-up the recording producer alone still sped up round after
round (520k -> 620k records/s over six 8-second rounds, at a constant 1.05 us of its thread's CPU
per record), because it competes with the brokers for the two cores and they spend less CPU per
record once compiled. Then they take turns for --rounds rounds, each perf-test round sending as
many records as the recording producer just did; the medians are compared, so neither side gains
from going second on a warmer cluster.

A Go library's recording producer (``--client franz-go``, ``sarama``, ``kafka-go``) is measured against
the same program with nothing recorded (``bare``: the library driven flat out with the same
settings, each send's promise only counted), on the same cluster in turns, as above; librdkafka's
the same way, against confluent-kafka driven by the same sending loop with each delivery report
only counted (BareProducer). The Java driver is measured against kafka-producer-perf-test, Kafka's
own tool on the same Java client.

Usage: python benchmarks/producer.py [--seconds 10] [--rounds 5] [--warmup 15] [--kafka-version 3.9.1] [--mode zk]
       [--client librdkafka|java|franz-go|sarama|kafka-go]
"""

from __future__ import annotations

import argparse
import re
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.clients import DEFAULT_CLIENT, LIBRARIES, driver, refusal
from harness.cluster import ClusterSettings, KafkaCluster, reaper
from harness.scenario import ProducerSpec
from harness.setup import cluster_images, engine, images

SETTINGS = {"acks": "all", "enable.idempotence": "true", "linger.ms": "5", "batch.size": "65536",
            "compression.type": "none"}


def recording_producer(c: KafkaCluster, topic: str, seconds: float, client: str = DEFAULT_CLIENT,
                       memory: list[int] | None = None, bare: bool = False,
                       start_up: list[float] | None = None) -> tuple[int, float, int]:
    """Records acknowledged, seconds taken, and the payloads' mean length in bytes; a process's peak
    memory (the Java driver's) is appended to ``memory``, and the seconds from making the client to
    its ``ready`` (a process's start-up, its client made and the topic's metadata fetched) to
    ``start_up``. ``bare``: a Go library's program recording nothing (GoDriver.bare_producer), the
    reference a Go driver is measured against."""
    spec = bench_spec(client, c.settings.kafka_version)
    stop = threading.Event()
    d = driver(client, c.settings.kafka_version)
    make = d.bare_producer if bare else d.producer
    t_made = time.monotonic()
    p = make("bench", spec, c, topic, 3, stop) if bare else make("bench", spec, c, topic, 3, stop, seed=1)
    p.ready(120)  # a JVM's start is not the producer's speed (perf-test's figure leaves its own out too)
    if start_up is not None:
        start_up.append(time.monotonic() - t_made)
    t0 = time.monotonic()
    p.start()
    time.sleep(seconds)
    proc = getattr(p, "proc", None)
    if proc is not None and memory is not None:
        memory.append(peak_rss_kb(proc.pid))
    stop.set()
    p.join()
    elapsed = getattr(p, "sending_s", 0) or time.monotonic() - t0
    sent, acked = p.sent, p.acked()
    if p.failure is not None or acked != sent:
        raise SystemExit(f"recording producer: {sent - acked} of {sent} not acknowledged ({p.failure!r})")
    # The payload ids are "<name>-<seq>", seq 0..sent-1: their mean length, for perf-test's records.
    mean_len = len(p.pname) + 1 + round(sum(len(str(i)) for i in range(sent)) / sent)
    return acked, elapsed, mean_len


def bench_spec(client: str, version: str) -> ProducerSpec:
    """The producer both sides run: acks=all, linger 5 ms, flat out, idempotent and SETTINGS' batch
    size and compression where the library has them (kafka-go has no idempotent producer; the Go
    libraries no batch.size by that name)."""
    idempotent = refusal(client, ProducerSpec(idempotence=True), version) is None
    config = {k: SETTINGS[k] for k in ("batch.size", "compression.type")
              if refusal(client, ProducerSpec(config={k: SETTINGS[k]}), version) is None}
    return ProducerSpec(name="bench", acks="all", idempotence=idempotent, linger_ms=5, rate=1e9, config=config)


def peak_rss_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def perf_test(c: KafkaCluster, topic: str, records: int, record_size: int, extra: list[str] | None = None) -> float:
    """kafka-producer-perf-test's records/s; ``extra`` are more of its options (transactions)."""
    props = [f"bootstrap.servers={c.bootstrap_servers}", *(f"{k}={v}" for k, v in SETTINGS.items())]
    out = tool(c, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
               "--record-size", str(record_size), "--throughput", "-1", *(extra or []), "--producer-props", *props)
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if not m:
        raise SystemExit(f"could not read kafka-producer-perf-test output:\n{out[-2000:]}")
    return float(m[-1][1])


def tool(c: KafkaCluster, *args: str) -> str:
    """One of Kafka's tools in the Kafka image, on the host's network namespace (127.0.0.1); its output."""
    return engine.client().containers.run(
        images.kafka_ref(c.settings.kafka_version).tag, ["tool", *args], network_mode="host", remove=True,
        labels=reaper.labels(**{"kchaos.role": "perf-test"}), environment={"KCHAOS_TOOL_HEAP": "-Xmx512m"},
    ).decode()


@contextmanager
def bench_cluster(kafka_version: str, mode: str) -> Iterator[KafkaCluster]:
    """A cluster with topics "rec" (kchaos) and "perf" (perf-test): 3 partitions, RF=3, min.insync=2."""
    with KafkaCluster(ClusterSettings(kafka_version=kafka_version, mode=mode), cluster_images(kafka_version)) as c:
        for t in ("rec", "perf"):
            c.create_topic(t, 3, 3, {"min.insync.replicas": "2"})
            c.wait_full_isr(t)
        yield c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="zk")
    ap.add_argument("--client", default=DEFAULT_CLIENT, choices=sorted(LIBRARIES),
                    help="the recording producer's client library (java: the driver's JVM process)")
    a = ap.parse_args()
    ours: list[float] = []
    theirs: list[float] = []
    memory: list[int] = []
    start_up: list[float] = []
    # A Go library and librdkafka are measured against the library driven flat out with nothing
    # recorded (the same settings); the Java client against kafka-producer-perf-test.
    go = hasattr(driver(a.client, a.kafka_version), "bare_producer")
    ref_name = f"{a.client} unrecorded" if go else "kafka-producer-perf-test"

    def reference(c: KafkaCluster, n: int, size: int) -> float:
        if go:
            m, secs, _ = recording_producer(c, "perf", a.seconds, a.client, bare=True)
            return m / secs
        return perf_test(c, "perf", n, size)

    with bench_cluster(a.kafka_version, a.mode) as c:
        n, _, size = recording_producer(c, "rec", a.warmup, a.client)  # warm-up, discarded
        reference(c, n, size)
        for r in range(a.rounds):
            n, secs, size = recording_producer(c, "rec", a.seconds, a.client, memory, start_up=start_up)
            ours.append(n / secs)
            theirs.append(reference(c, n, size))
            print(f"round {r + 1}: kchaos {ours[-1]:,.0f} records/s ({n:,} in {secs:.1f} s), "
                  f"{ref_name} {theirs[-1]:,.0f} records/s ({size}-byte records)", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"kchaos recording producer ({a.client}): {mo:,.0f} records/s (median of {a.rounds}; every send recorded)")
    if memory:
        print(f"its process's peak resident memory: {statistics.median(memory) / 1024:,.0f} MiB "
              f"(median of {len(memory)}, taken just before each round's stop)")
    print(f"its process's start-up to ready: {statistics.median(start_up):.2f} s (median of {len(start_up)}; "
          f"{min(start_up):.2f} to {max(start_up):.2f} s)")
    print(f"{ref_name}:  {mt:,.0f} records/s (median of {a.rounds})")
    spec = bench_spec(a.client, a.kafka_version)
    settings = ", ".join([*(["idempotent"] if spec.idempotence else ["not idempotent"]),
                          *(f"{k}={v}" for k, v in spec.config.items())])
    print(f"ratio {mo / mt:.2f} (target >= {0.9 if go or a.client == 'java' else 0.8}); Kafka {a.kafka_version} "
          f"{a.mode}, acks=all, linger.ms=5, {settings}, {size}-byte values on both sides")


if __name__ == "__main__":
    main()
