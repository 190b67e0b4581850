"""Consumer benchmark: kchaos's recording consumer against its own library reading flat out, from
the same topic of the same cluster.

A topic of three partitions is filled once by kafka-producer-perf-test with --records records of
13 bytes (the size of kchaos's payload ids at these counts). Then the two take turns for --rounds
rounds: the recording consumer tails every partition from offset 0 and records every record it
returns, with its high watermark, for --seconds; its rate is the records it returned over the time
between its first and last poll that returned any (a process's start is not the consumer's speed).

- The Java driver (``--client java``, its process) against Kafka's own kafka-consumer-perf-test
  (org.apache.kafka.tools.ConsumerPerformance) reading as many records from offset 0 in a new group
  (its nMsg.sec, which leaves its start out too), both with perf-test's own settings (a 2 MiB socket
  buffer, 1 MiB fetches, no CRC checks); the process's peak resident memory is reported too.
- librdkafka's (``--client librdkafka``, confluent-kafka in kchaos's own process) against a
  confluent-kafka consumer of the same settings (perf-test's, in librdkafka's names) that only counts
  what each poll returned (BareConsumer); the seconds its rows take to build once it stopped are
  printed beside.
- A Go library's (``--client franz-go|sarama|kafka-go``) against the same program reading flat out
  and recording nothing (GoDriver.bare_consumer, library defaults on both sides), as the Go
  producers are: no Go library ships a perf tool.

The medians are compared.

Usage: python benchmarks/consumer.py [--records 15000000] [--seconds 10] [--rounds 3] [--client java]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from producer import SETTINGS, bench_cluster, peak_rss_kb, tool  # benchmarks/ is on the path when run as a script

from harness.clients import DEFAULT_CLIENT, LIBRARIES, driver
from harness.cluster import KafkaCluster
from harness.scenario import ConsumerSpec

RECORD_SIZE = 13
TOPIC = "perf"
# kafka-consumer-perf-test's own settings (ConsumerPerformance: a 2 MiB socket buffer, 1 MiB fetches,
# no CRC checks), given to the recording consumer in each library's names.
PERF_TEST_SETTINGS = {"java": {"receive.buffer.bytes": "2097152", "max.partition.fetch.bytes": "1048576",
                               "check.crcs": "false"},
                      "librdkafka": {"socket.receive.buffer.bytes": "2097152", "max.partition.fetch.bytes": "1048576",
                                     "check.crcs": "false"}}


def fill(c: KafkaCluster, records: int) -> None:
    """``records`` records into TOPIC by kafka-producer-perf-test, as fast as it goes."""
    tool(c, "org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records", str(records),
         "--record-size", str(RECORD_SIZE), "--throughput", "-1", "--producer-props",
         f"bootstrap.servers={c.bootstrap_servers}", *(f"{k}={v}" for k, v in SETTINGS.items()))


def recording_consumer(c: KafkaCluster, seconds: float, client: str, memory: list[int],
                       built: list[float]) -> tuple[int, float]:
    """Records returned and the seconds between the first and last poll that returned any; the
    seconds its rows took to build after it stopped go to ``built``."""
    stop = threading.Event()
    spec = ConsumerSpec(config=PERF_TEST_SETTINGS.get(client, {}))
    r = driver(client, c.settings.kafka_version).consumer("bench", spec, c, TOPIC, 3, stop,
                                                          isolation="read_uncommitted")
    if hasattr(r, "ready"):
        r.ready(120)
    r.start()
    time.sleep(seconds)
    proc = getattr(r, "proc", None)
    if proc is not None:
        memory.append(peak_rss_kb(proc.pid))
    stop.set()
    r.join(300)  # a process's history is parsed before the reader ends: millions of rows, not part of the measure
    t0 = time.monotonic()
    rows = r.rows  # librdkafka's reader builds its rows from the polls it kept here
    built.append(time.monotonic() - t0)
    if r.failure is not None or not rows:
        raise SystemExit(f"recording consumer: {len(rows)} records ({r.failure!r})")
    span_s = (rows[-1]["poll_ts_ms"] - rows[0]["poll_ts_ms"]) / 1000
    return len(rows), max(span_s, 0.001)


def bare_consumer(c: KafkaCluster, seconds: float, client: str) -> tuple[int, float]:
    """A Go library's program reading flat out and recording nothing (GoDriver.bare_consumer): the
    records it read and the seconds between its first and last batch."""
    stop = threading.Event()
    spec = ConsumerSpec(config=PERF_TEST_SETTINGS.get(client, {}))  # the recording consumer's settings
    r = driver(client, c.settings.kafka_version).bare_consumer("bare", spec, c, TOPIC, 3, stop)
    r.ready(120)
    r.start()
    time.sleep(seconds)
    stop.set()
    r.join(60)
    if r.failure is not None or not r.read:
        raise SystemExit(f"bare consumer: {r.read} records ({r.failure!r})")
    if not 0 < r.first_ms < r.last_ms:
        raise SystemExit(f"bare consumer ({client}): {r.read} records but no span of reads (first_ms {r.first_ms}, "
                         f"last_ms {r.last_ms}): its program does not read bare, and no rate can be compared")
    return r.read, (r.last_ms - r.first_ms) / 1000


def perf_test(c: KafkaCluster, records: int, round_no: int) -> float:
    """kafka-consumer-perf-test's records/s reading ``records`` records from offset 0 in a new group."""
    out = tool(c, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", c.bootstrap_servers,
               "--topic", TOPIC, "--messages", str(records), "--group", f"perf-{round_no}-{time.time_ns()}",
               "--timeout", "60000", "--hide-header")
    # One CSV line: start, end, MB, MB/s, records, records/s, rebalance ms, fetch s, fetch MB/s, fetch records/s.
    fields = [f.strip() for f in out.strip().splitlines()[-1].split(",")]
    try:
        return float(fields[9] if len(fields) > 9 else fields[5])
    except (IndexError, ValueError):
        raise SystemExit(f"could not read kafka-consumer-perf-test output:\n{out[-2000:]}") from None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=15_000_000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="zk")
    ap.add_argument("--client", default=DEFAULT_CLIENT, choices=sorted(LIBRARIES),
                    help="the recording consumer's client library (java: the driver's JVM process)")
    a = ap.parse_args()
    ours: list[float] = []
    theirs: list[float] = []
    memory: list[int] = []
    built: list[float] = []
    with bench_cluster(a.kafka_version, a.mode) as c:  # its topic "perf": 3 partitions, RF=3
        fill(c, a.records)
        bare = hasattr(driver(a.client, a.kafka_version), "bare_consumer")
        for r in range(a.rounds):
            n, secs = recording_consumer(c, a.seconds, a.client, memory, built)
            ours.append(n / secs)
            if bare:
                m, bare_secs = bare_consumer(c, a.seconds, a.client)
                theirs.append(m / bare_secs)
            else:
                theirs.append(perf_test(c, n, r))
            print(f"round {r + 1}: kchaos {ours[-1]:,.0f} records/s ({n:,} in {secs:.1f} s), "
                  f"{'the bare program' if bare else 'perf-test'} {theirs[-1]:,.0f} records/s", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"kchaos recording consumer ({a.client}): {mo:,.0f} records/s (median of {a.rounds}; every record recorded)")
    if a.client == "librdkafka":
        print(f"its rows built after it stopped in {statistics.median(built):.1f} s (median of {a.rounds})")
    if memory and a.client == "java":
        print(f"its process's peak resident memory: {statistics.median(memory) / 1024:,.0f} MiB")
    reference = f"the same program recording nothing ({a.client} flat out)" if bare else "kafka-consumer-perf-test"
    print(f"{reference}: {mt:,.0f} records/s (median of {a.rounds})")
    print(f"ratio {mo / mt:.2f}; Kafka {a.kafka_version} {a.mode}, {RECORD_SIZE}-byte values, 3 partitions")


if __name__ == "__main__":
    main()
