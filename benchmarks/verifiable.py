"""Kafka's verifiable clients read by kchaos against the same tools printing to nowhere.

kchaos runs ``VerifiableProducer`` and ``VerifiableConsumer`` (harness/clients/verifiable) with their
stdout a file, counts the producer's acknowledgements in it as they come (for triggers) and reads the
events once the tool has ended. A tool whose stdout is read too slowly blocks on its ``println`` (the
producer's inside the client's I/O thread's callback), so the cost of kchaos's recording is whatever
throughput the tool loses. The reference is the same tool with the same flags and properties, its
stdout a file on tmpfs that nothing reads until it has exited.

Both sides are measured the same way, from the tool's own event timestamps: records per second from
its first to its last ``producer_send_success`` (producer) or ``record_data`` (consumer, which prints
every record with ``--verbose`` as kchaos runs it), and its start-up, from the process started to its
``startup_complete`` event. The producer sends flat out (``--throughput`` unbounded) for --seconds and
is stopped as a run stops it (SIGTERM); the consumer reads a topic of --records records from the
start, alone in a new group, and stops itself (``--max-messages``). They take turns for --rounds
rounds after a discarded warm-up of each; the medians are compared.

Usage: python benchmarks/verifiable.py [--role producer|consumer] [--seconds 8] [--records 2000000]
       [--rounds 3] [--kafka-version 3.9.1] [--mode zk]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from producer import bench_cluster, bench_spec  # benchmarks/ is on the path when run as a script

from harness.clients.verifiable.driver import ToolProcess, VerifiableConsumer, VerifiableProducer
from harness.cluster import KafkaCluster, reaper
from harness.scenario import ConsumerSpec

CLIENT = "verifiable"
EVENT = {"producer": "producer_send_success", "consumer": "record_data"}


@dataclass(frozen=True)
class Round:
    """One side's round: records, their span by the tool's own clock, and its start-up."""

    records: int
    span_s: float
    start_up_s: float

    @property
    def rate(self) -> float:
        return self.records / self.span_s


def measure(events: list[dict], role: str, started_ms: float) -> Round:
    """A round's figures from the tool's events: the span of the role's events and the start-up."""
    stamps = [e["timestamp"] for e in events if e.get("name") == EVENT[role]]
    up = next((e["timestamp"] for e in events if e.get("name") == "startup_complete"), None)
    if len(stamps) < 2 or up is None:
        raise SystemExit(f"the {role} printed {len(stamps)} {EVENT[role]} events and "
                         f"{'a' if up is not None else 'no'} startup_complete: nothing to measure")
    span = (stamps[-1] - stamps[0]) / 1000
    return Round(len(stamps), span, (up - started_ms) / 1000)


def tool(c: KafkaCluster, role: str, topic: str, name: str) -> ToolProcess:
    """The tool as kchaos runs it, flat out: the producer's --throughput unbounded."""
    if role == "producer":
        spec = bench_spec(CLIENT, c.settings.kafka_version)
        return VerifiableProducer(name, spec, c, topic, 3, threading.Event(), c.settings.kafka_version)
    return VerifiableConsumer(name, ConsumerSpec(), c, topic, 3, threading.Event(), "read_uncommitted",
                              c.settings.kafka_version)


def argv_of(t: ToolProcess, role: str, records: int) -> list[str]:
    """The tool's command line, with the consumer stopping by itself after ``records``."""
    return [*t.argv, "--max-messages", str(records)] if role == "consumer" else list(t.argv)


def recorded(t: ToolProcess, role: str, records: int, seconds: float, reading: list[float]) -> Round:
    """The tool as kchaos runs it (ToolProcess: its stdout counted as it comes, read once it ended);
    the seconds that reading took after the process ended are appended to ``reading``."""
    t.argv = argv_of(t, role, records)
    started = time.time() * 1000
    t.launch()
    assert t.proc is not None
    stop_after(t.proc, role, seconds)
    ended = time.monotonic()
    t.terminate(5)
    reading.append(time.monotonic() - ended)
    if role == "producer" and t.seen != len([e for e in t.events if e["name"] == EVENT[role]]):
        raise SystemExit(f"the live count ({t.seen}) is not the events read after the process ended")
    return measure(t.events, role, started)


def unread(t: ToolProcess, role: str, records: int, seconds: float) -> Round:
    """The same tool printing to a tmpfs file that is read only after it exited."""
    with tempfile.TemporaryFile(dir="/dev/shm", mode="w+") as out:
        started = time.time() * 1000
        proc = subprocess.Popen(argv_of(t, role, records), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.DEVNULL, preexec_fn=reaper.die_with_parent)
        stop_after(proc, role, seconds)
        out.seek(0)
        events = [json.loads(line) for line in out if line.startswith("{")]
    return measure(events, role, started)


def stop_after(proc: subprocess.Popen, role: str, seconds: float) -> None:
    """A producer stopped after ``seconds`` as a run stops it; a consumer waited for (it stops itself)."""
    if role == "producer":
        time.sleep(seconds)
        proc.send_signal(signal.SIGTERM)
    if proc.wait(600) not in (0, 143, -signal.SIGTERM):
        raise SystemExit(f"the {role} exited {proc.returncode}")


def fill(c: KafkaCluster, topic: str, records: int) -> None:
    """``records`` records in ``topic`` for the consumer to read, written by the verifiable producer."""
    t = tool(c, "producer", topic, "filler")
    proc = subprocess.run([*t.argv, "--max-messages", str(records)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, preexec_fn=reaper.die_with_parent, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"filling {topic} failed ({proc.returncode})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", choices=sorted(EVENT), default="producer")
    ap.add_argument("--seconds", type=float, default=8, help="the producer's sending per round")
    ap.add_argument("--records", type=int, default=2_000_000, help="the consumer's records per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kafka-version", default="3.9.1")
    ap.add_argument("--mode", default="zk")
    a = ap.parse_args()
    ours: list[Round] = []
    theirs: list[Round] = []
    reading: list[float] = []
    with bench_cluster(a.kafka_version, a.mode) as c:
        if a.role == "consumer":
            fill(c, "rec", a.records)
        for r in range(a.rounds + 1):  # round 0: the warm-up, discarded
            mine = recorded(tool(c, a.role, "perf" if a.role == "producer" else "rec", f"rec{r}"), a.role,
                            a.records, a.seconds, reading)
            ref = unread(tool(c, a.role, "perf" if a.role == "producer" else "rec", f"ref{r}"), a.role,
                         a.records, a.seconds)
            if r == 0:
                continue
            ours.append(mine)
            theirs.append(ref)
            print(f"round {r}: read by kchaos {mine.rate:,.0f} records/s ({mine.records:,} in {mine.span_s:.1f} s, "
                  f"start-up {mine.start_up_s:.2f} s); unread {ref.rate:,.0f} records/s ({ref.records:,} in "
                  f"{ref.span_s:.1f} s, start-up {ref.start_up_s:.2f} s)", flush=True)
    mo, mt = (statistics.median(x.rate for x in side) for side in (ours, theirs))
    ups = [x.start_up_s for x in ours + theirs]
    print(f"Kafka {a.kafka_version}'s verifiable {a.role}, read by kchaos: {mo:,.0f} records/s; printing to "
          f"nowhere: {mt:,.0f} records/s (medians of {a.rounds}); ratio {mo / mt:.2f} (target >= 0.9)")
    print(f"start-up to startup_complete: {statistics.median(ups):.2f} s (median of {len(ups)}; "
          f"{min(ups):.2f} to {max(ups):.2f} s)")
    print(f"reading the events after the tool ended: {statistics.median(reading[1:]):.1f} s (median of {a.rounds})")


if __name__ == "__main__":
    main()
