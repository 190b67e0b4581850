"""One chaos run: scenario -> cluster + workload + nemesis -> run directory.

The run directory is written under a hidden ``.NAME.partial`` name and renamed only once every
file is complete, so an interrupted or failed run leaves nothing half-written behind.
"""

from __future__ import annotations

import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import logs, schedule
from harness.cluster import KafkaCluster
from harness.history import EVENTS, RUN_JSON, read_events, write_json_atomic
from harness.nemesis import EventLog, Nemesis
from harness.recording import Phases, Recorded, Recording, RecordingError
from harness.scenario import Scenario
from harness.setup import cluster_images


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
    phases: dict[str, float]  # seconds per phase, as in run.json


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
    repro = reproduce_command(scenario_file, s, overrides)
    log(f"schedule ({len(plan)} faults, seed {s.seed}): " + "; ".join(
        f"{f.at_s:g}s {f.kind} {f.target} for {f.duration_s:g}s" + (f" ({f.stream} only)" if f.stream != "both" else "")
        + (f" on {f.on}" if f.on else "") for f in plan))
    log(f"repeat with: {repro}")
    events = EventLog(d / EVENTS)
    settings, imgs = s.cluster_settings(), cluster_images(s.kafka_version)
    t_cluster = time.monotonic()
    try:
        with logs.clients_to(d / "logs" / logs.CLIENTS_LOG), KafkaCluster(settings, imgs) as c:
            up_s = round(time.monotonic() - t_cluster, 2)
            log(f"cluster {c.name} up in {up_s:g} s: Kafka {s.kafka_version} {s.mode}, {s.brokers} brokers")
            rec, counts = _record(s, plan, c, events, d, log)
            rec.phases = Phases({"cluster_up": up_s, **rec.phases})
            cluster_info = c.describe_settings()
    finally:
        events.close()
    n_faults = sum(e.get("type") == "fault" for e in read_events(d))
    write_json_atomic(d / RUN_JSON, {
        "run_id": out.name, "scenario": s.name, "description": s.description, "kafka_version": s.kafka_version,
        "mode": s.mode, "brokers": s.brokers, "racks": s.racks, "seed": s.seed, "reproduce": repro,
        "images": {"kafka": imgs.kafka, "toxiproxy": imgs.toxiproxy},
        "broker_config": s.broker_config, **rec.run_info(),
        "eligible_leader_replicas": settings.elr_enabled,
        "faults": [f.to_dict() for f in plan],
        "workload": {"start_ms": counts.start_ms, "end_ms": counts.end_ms, "duration_s": s.duration_s},
        "cluster": cluster_info, "scenario_config": s.model_dump(), "phases": rec.phases,
    })
    return RunResult(d, counts.produced, counts.acked, counts.consumed_live, counts.final, counts.replicas, n_faults,
                     dict(rec.phases))


def _record(s: Scenario, plan: list, c: KafkaCluster, events: EventLog, d: Path,
            log: Callable[[str], None]) -> tuple[Recording, Recorded]:
    """The workload under the fault schedule, then healing and reading back into ``d``."""
    topic = s.topic
    rec = Recording(c, topic, s.producers, s.consumers, events, s.copier, s.seed, groups=s.groups, work=d)
    with rec.phases.timed("topic_ready"):
        rec.create_topics()
    nemesis = Nemesis(c, topic.name, events, rec.client, first_client=s.transactional_clients[0]
                      if s.transactional_clients else "", members=rec.member,
                      first_group=s.groups[0].name if s.groups else "")
    nemesis.acks = rec.acked
    try:
        with rec.phases.timed("workload"):
            t0 = rec.start()
            nemesis.start(plan, t0)
            time.sleep(max(0.0, t0 + s.duration_s - time.monotonic()))
            rec.stop_producers()
            nemesis.stop()
        log("workload done; healing and waiting for a full ISR")
        with rec.phases.timed("heal"):
            rec.heal_and_settle()
    except RecordingError as e:
        rec.abort()
        raise RunError(str(e)) from e
    except BaseException:
        rec.abort()
        raise
    if nemesis.error is not None:
        raise RunError(f"nemesis failed: {nemesis.error!r}")
    log("final read of every partition from offset 0; every replica's log from its broker's files")
    return rec, rec.read_back(d)
