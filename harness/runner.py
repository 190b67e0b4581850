"""One chaos run: scenario -> cluster + workload + nemesis -> run directory.

The run directory is written under a hidden ``.NAME.partial`` name and renamed only once every
file is complete, so an interrupted or failed run leaves nothing half-written behind.
"""

from __future__ import annotations

import shlex
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from harness import images, logs, schedule
from harness.cluster import KafkaCluster
from harness.history import (
    CONSUMED,
    CONSUMED_SCHEMA,
    EVENTS,
    PRODUCED,
    PRODUCED_SCHEMA,
    REPLICAS,
    REPLICAS_SCHEMA,
    RUN_JSON,
    write_json_atomic,
    write_table,
)
from harness.nemesis import EventLog, Nemesis, StateSampler
from harness.replicas import read_checkpoints, read_replica_logs
from harness.scenario import Scenario
from harness.workload import RecordingConsumer, RecordingProducer, final_read, now_ms

REPLICAS_WITH_EPOCH = REPLICAS_SCHEMA.append(pa.field("leader_epoch", pa.int32(), True))


class RunError(RuntimeError):
    """The run itself could not be carried out (exit 3)."""


@dataclass
class RunResult:
    path: Path
    produced: int
    acked: int
    consumed_live: int
    final: int
    replicas: int
    faults: int


def reproduce_command(scenario_file: str | None, s: Scenario, overrides: list[str]) -> str:
    parts = ["kchaos", "run", scenario_file or f"scenarios/{s.name}.toml", "--seed", str(s.seed),
             "--kafka-version", s.kafka_version, "--mode", s.mode]
    for o in overrides:
        parts += ["--set", o]
    return " ".join(shlex.quote(p) for p in parts)


def default_out(s: Scenario) -> Path:
    return Path("runs") / f"{s.name}-{s.kafka_version}-{s.mode}-s{s.seed}-{time.strftime('%Y%m%d-%H%M%S')}"


def execute(s: Scenario, out: Path, scenario_file: str | None = None, overrides: list[str] | None = None,
            log: Callable[[str], None] = print) -> RunResult:
    out = Path(out)
    if out.exists():
        raise RunError(f"{out} already exists; choose another --out")
    partial = out.with_name(f".{out.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        result = _execute(s, out, partial, scenario_file, overrides or [], log)
        partial.rename(out)
        result.path = out
        return result
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _execute(s: Scenario, out: Path, d: Path, scenario_file: str | None, overrides: list[str],
             log: Callable[[str], None]) -> RunResult:
    plan = schedule.plan(s)
    topic = s.topic
    repro = reproduce_command(scenario_file, s, overrides)
    log(f"schedule ({len(plan)} faults, seed {s.seed}): " + "; ".join(
        f"{f.at_s:g}s {f.kind} {f.target} for {f.duration_s:g}s" for f in plan))
    log(f"repeat with: {repro}")
    events = EventLog(d / EVENTS)
    settings = s.cluster_settings()
    try:
        with logs.clients_to(d / "logs" / logs.CLIENTS_LOG), KafkaCluster(settings) as c:
            log(f"cluster {c.name} up: Kafka {s.kafka_version} {s.mode}, {s.brokers} brokers")
            c.create_topic(topic.name, topic.partitions, topic.replication_factor, topic.topic_config())
            c.wait_full_isr(topic.name, timeout_s=60)
            stop_producers, stop_consumers = threading.Event(), threading.Event()
            producers = [RecordingProducer(f"{p.name}{i}" if p.count > 1 else p.name, p, c, topic.name,
                                           topic.partitions, stop_producers)
                         for p in s.producers for i in range(p.count)]
            consumers = [RecordingConsumer(f"c{i}", s.consumers, c, topic.name, topic.partitions, stop_consumers)
                         for i in range(s.consumers.count)]
            sampler = StateSampler(c, topic.name, events)
            nemesis = Nemesis(c, topic.name, events)
            sampler.start()
            for t in consumers:
                t.start()
            t0 = time.monotonic()
            start_ms = now_ms()
            events.write({"type": "workload_start", "ts_ms": start_ms})
            for t in producers:
                t.start()
            nemesis.start(plan, t0)
            time.sleep(max(0.0, t0 + s.duration_s - time.monotonic()))
            stop_producers.set()
            for t in producers:
                t.join(timeout=s.producers[0].delivery_timeout_ms / 1000 + 30)
            end_ms = now_ms()
            events.write({"type": "workload_end", "ts_ms": end_ms})
            nemesis.stop()
            log("workload done; healing and waiting for a full ISR")
            c.heal()
            c.wait_ready(120)
            try:
                c.wait_full_isr(topic.name, timeout_s=120)
            except Exception as e:  # recorded: the final read still tells what survived
                events.write({"type": "note", "ts_ms": now_ms(), "msg": f"ISR not full after healing: {e}"})
            time.sleep(1.0)  # let live consumers see the healed HW
            stop_consumers.set()
            for t in consumers:
                t.join(timeout=30)
            sampler.stop_event.set()
            sampler.join(timeout=5)
            for t in [*producers, *consumers]:
                if t.failure is not None:
                    raise RunError(f"{t.name} failed: {t.failure!r}")
            if nemesis.error is not None:
                raise RunError(f"nemesis failed: {nemesis.error!r}")
            log("final read of every partition from offset 0")
            final = final_read(c, topic.name, topic.partitions)
            log("reading every replica's log from its broker's files")
            replica_rows = read_replica_logs(c, topic.name)
            checkpoints = read_checkpoints(c, topic.name)
            cluster_info = c.describe_settings()
            # Every container's own log, for whoever has to explain an anomaly.
            for key in c.container_keys():
                (d / "logs" / f"{key}.log").write_text(c.logs(key, tail="all"))
    finally:
        events.close()

    produced_cols: dict[str, list] = {f.name: [] for f in PRODUCED_SCHEMA}
    for p in producers:
        for k, v in p.columns().items():
            produced_cols[k] += v
    live_rows = [r for t in consumers for r in t.rows]
    write_table(d / PRODUCED, produced_cols, PRODUCED_SCHEMA)
    write_table(d / CONSUMED, live_rows + final, CONSUMED_SCHEMA)
    write_table(d / REPLICAS, replica_rows, REPLICAS_WITH_EPOCH)
    write_json_atomic(d / "checkpoints.json", {str(k): v for k, v in checkpoints.items()})
    n_faults = sum(1 for line in (d / EVENTS).read_text().splitlines() if '"type": "fault"' in line)
    run = {
        "run_id": out.name,
        "scenario": s.name,
        "description": s.description,
        "kafka_version": s.kafka_version,
        "mode": s.mode,
        "brokers": s.brokers,
        "racks": s.racks,
        "seed": s.seed,
        "reproduce": repro,
        "images": {"kafka": images.kafka_ref(s.kafka_version).tag, "toxiproxy": images.toxiproxy_ref().tag},
        "topics": [{"name": topic.name, "partitions": topic.partitions, "replication_factor": topic.replication_factor,
                    "config": topic.topic_config()}],
        "broker_config": s.broker_config,
        "producers": [{"name": p.pname, "topic": topic.name, **{k: v for k, v in p.spec.model_dump().items()
                                                                if k not in ("name", "count")}}
                      for p in producers],
        "consumers": s.consumers.model_dump(),
        "eligible_leader_replicas": s.cluster_settings().elr_enabled,
        "faults": [f.to_dict() for f in plan],
        "workload": {"start_ms": start_ms, "end_ms": end_ms, "duration_s": s.duration_s},
        "cluster": cluster_info,
        "scenario_config": s.model_dump(),
    }
    write_json_atomic(d / RUN_JSON, run)
    return RunResult(d, len(produced_cols["value"]), produced_cols["status"].count("ok"),
                     len(live_rows), len(final), len(replica_rows), n_faults)
