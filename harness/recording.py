"""The workload of one run on a live cluster, from start to run directory.

Recording producers and consumers on one topic, with a state sampler beside them. ``stop`` ends
the producers, heals the cluster, lets the live consumers see the healed high watermark, reads
every partition back from offset 0, reads every replica's log from its broker's files, and writes
the run directory's history files. The runner and the pytest plugin both record through this one
class, so a test built by hand from the plugin's fixtures gets what a scenario run gets.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from harness import history
from harness.cluster import KafkaCluster
from harness.nemesis import EventLog, StateSampler
from harness.replicas import read_checkpoints, read_replica_logs
from harness.scenario import ConsumerSpec, ProducerSpec, TopicSpec
from harness.workload import RecordingConsumer, RecordingProducer, final_read, now_ms

REPLICAS_WITH_EPOCH = history.REPLICAS_SCHEMA.append(pa.field("leader_epoch", pa.int32(), True))
SETTLE_S = 1.0  # after healing, how long live consumers keep reading so they see the healed high watermark


class Phases(dict):
    """Seconds per phase of a run, in the order they ran (run.json's "phases")."""

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self[name] = round(time.monotonic() - t0, 2)


class RecordingError(RuntimeError):
    """A producer, a consumer or the final read failed: the history would be incomplete."""


@dataclass
class Recorded:
    """What one recording wrote, counted."""

    produced: int
    acked: int
    consumed_live: int
    final: int
    replicas: int
    start_ms: int
    end_ms: int


class Recording:
    def __init__(self, cluster: KafkaCluster, topic: TopicSpec, producers: list[ProducerSpec], consumers: ConsumerSpec,
                 events: EventLog):
        self.cluster, self.topic, self.events, self.consumer_spec = cluster, topic, events, consumers
        self._stop_producers, self._stop_consumers = threading.Event(), threading.Event()
        self.producers = [RecordingProducer(f"{p.name}{i}" if p.count > 1 else p.name, p, cluster, topic.name,
                                            topic.partitions, self._stop_producers)
                          for p in producers for i in range(p.count)]
        self.consumers = [RecordingConsumer(f"c{i}", consumers, cluster, topic.name, topic.partitions,
                                            self._stop_consumers) for i in range(consumers.count)]
        self.sampler = StateSampler(cluster, topic.name, events)
        self.start_ms = self.end_ms = 0
        self.phases = Phases()

    def start(self) -> float:
        """Sampler and consumers first, then the producers; returns the monotonic start time."""
        self.sampler.start()
        for t in self.consumers:
            t.start()
        t0 = time.monotonic()
        self.start_ms = now_ms()
        self.events.write({"type": "workload_start", "ts_ms": self.start_ms})
        for t in self.producers:
            t.start()
        return t0

    def stop_producers(self) -> None:
        """Stop sending and wait for every delivery report (or its timeout)."""
        self._stop_producers.set()
        for t in self.producers:
            t.join(timeout=t.spec.delivery_timeout_ms / 1000 + 30)
        self.end_ms = now_ms()
        self.events.write({"type": "workload_end", "ts_ms": self.end_ms})

    def heal_and_settle(self) -> None:
        """Heal every fault, wait for the cluster and a full ISR, then stop the live consumers."""
        c = self.cluster
        c.heal()
        c.wait_ready(120)
        try:
            c.wait_full_isr(self.topic.name, timeout_s=120)
        except Exception as e:  # recorded: the final read still tells what survived
            self.events.write({"type": "note", "ts_ms": now_ms(), "msg": f"ISR not full after healing: {e}"})
        time.sleep(SETTLE_S)
        self._stop_consumers.set()
        for t in self.consumers:
            t.join(timeout=30)
        self.sampler.stop_event.set()
        self.sampler.join(timeout=5)
        for t in [*self.producers, *self.consumers]:
            if t.failure is not None:
                raise RecordingError(f"{t.name} failed: {t.failure!r}")

    def abort(self) -> None:
        """Stop every thread without reading anything back (a run that failed or a test that ended)."""
        for ev in (self._stop_producers, self._stop_consumers, self.sampler.stop_event):
            ev.set()

    def read_back(self, d: Path) -> Recorded:
        """The final read, the replica logs and checkpoints, and every container's log, written to ``d``
        with the live history."""
        c, topic = self.cluster, self.topic
        with self.phases.timed("final_read"):
            final = final_read(c, topic.name, topic.partitions)
        with self.phases.timed("replica_logs"):
            replica_rows = read_replica_logs(c, topic.name)
            checkpoints = read_checkpoints(c, topic.name)
        with self.phases.timed("container_logs"):
            for key in c.container_keys():  # every container's own log, for whoever explains an anomaly
                (d / "logs").mkdir(exist_ok=True)
                (d / "logs" / f"{key}.log").write_text(c.logs(key, tail="all"))
        produced: dict[str, list] = {f.name: [] for f in history.PRODUCED_SCHEMA}
        for p in self.producers:
            for k, v in p.columns().items():
                produced[k] += v
        live = [r for t in self.consumers for r in t.rows]
        history.write_table(d / history.PRODUCED, produced, history.PRODUCED_SCHEMA)
        history.write_table(d / history.CONSUMED, live + final, history.CONSUMED_SCHEMA)
        history.write_table(d / history.REPLICAS, replica_rows, REPLICAS_WITH_EPOCH)
        history.write_json_atomic(d / "checkpoints.json", {str(k): v for k, v in checkpoints.items()})
        return Recorded(len(produced["value"]), produced["status"].count("ok"), len(live), len(final),
                        len(replica_rows), self.start_ms, self.end_ms)

    def run_info(self) -> dict:
        """run.json's keys that describe the workload: topics, producers, consumers, its span."""
        t = self.topic
        return {
            "topics": [{"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
                        "config": t.topic_config()}],
            "producers": [{"name": p.pname, "topic": t.name, **{k: v for k, v in p.spec.model_dump().items()
                                                               if k not in ("name", "count")}}
                          for p in self.producers],
            "consumers": self.consumer_spec.model_dump(),
            "workload": {"start_ms": self.start_ms, "end_ms": self.end_ms},
        }
