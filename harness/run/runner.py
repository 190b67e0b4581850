"""One chaos run of a scenario: cluster + workload + nemesis -> run directory (run_directory.py)."""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from docker.errors import DockerException

from harness.cluster import ClusterError, KafkaCluster
from harness.history import EVENTS
from harness.history.events import EventLog, Formation
from harness.run import logs, schedule
from harness.run.directory import RunDirectory, RunError, RunResult, finish
from harness.run.epochs import drive_epochs
from harness.run.nemesis import Nemesis
from harness.run.recording import Recording
from harness.run.result import default_out
from harness.scenario import Scenario
from harness.setup import cluster_images
from harness.setup.engine import EngineError

__all__ = ["RunError", "RunResult", "default_out", "execute", "reproduce_command"]

# What a run that could not be carried out raises: the run failed (RunError), the cluster did not
# come up or heal, the engine is missing, a wait ran out, or the engine refused a call (a container
# that exited under it). A matrix, a hunt or `kchaos run` records it and goes on or exits 3.
NOT_CARRIED_OUT = (RunError, ClusterError, EngineError, TimeoutError, DockerException)


def reproduce_command(scenario_file: str | None, s: Scenario, overrides: list[str]) -> str:
    parts = ["kchaos", "run", scenario_file or f"scenarios/{s.name}.toml", "--seed", str(s.seed),
             "--kafka-version", s.kafka_version, "--mode", s.mode]
    for o in overrides:
        parts += ["--set", o]
    return " ".join(shlex.quote(p) for p in parts)


def execute(s: Scenario, out: Path, scenario_file: str | None = None, overrides: list[str] | None = None,
            log: Callable[[str], None] = print, cluster: KafkaCluster | None = None) -> RunResult:
    """Run ``s`` into ``out``: on a cluster of its own, booted and removed here, or on ``cluster``, a
    running, healed cluster of the scenario's settings that the caller owns (a hunt reuses one
    between runs on fresh topics)."""
    d = RunDirectory(out)
    try:
        return d.close(_execute(s, d, reproduce_command(scenario_file, s, overrides or []), log, cluster))
    except NOT_CARRIED_OUT as e:
        log(f"could not run; its logs, scenario and error kept in {d.set_aside(s, e)}")
        raise
    except BaseException:
        d.discard()
        raise


def formation_event(done: dict) -> Formation:
    """The cluster's record of its faulted formation as the history's event, stamped with the fault's start."""
    return Formation(ts_ms=done["fault_ms"], **{k: v for k, v in done.items() if k != "fault_ms"})


@contextlib.contextmanager
def _container_logs_kept(c: KafkaCluster, logs_dir: Path) -> Iterator[None]:
    """A run that cannot be carried out writes every container's own log before its cluster goes
    (RunDirectory.set_aside keeps them); a run that can writes them itself, after the heal."""
    try:
        yield
    except NOT_CARRIED_OUT:
        c.write_logs(logs_dir, missing_ok=True)
        raise


@contextlib.contextmanager
def _cluster(s: Scenario, given: KafkaCluster | None, logs_dir: Path) -> Iterator[KafkaCluster]:
    """The cluster to run on: ``given``, or one of the scenario's own (its containers' logs written to
    ``logs_dir`` if it does not come up, before it is removed)."""
    if given is None:
        settings = s.cluster_settings()
        images = cluster_images(s.kafka_version, upgrades=s.upgrades, disks=settings.faultable_disks)
        with KafkaCluster(settings, images, logs_on_failure=logs_dir) as c:
            yield c
        return
    if given.settings != s.cluster_settings():
        raise RunError("the cluster given to run on has other settings than the scenario's")
    yield given


def _execute(s: Scenario, d: RunDirectory, repro: str, log: Callable[[str], None],
             given: KafkaCluster | None = None) -> RunResult:
    plan = schedule.plan(s)
    log(f"schedule ({len(plan)} faults, seed {s.seed}): " + "; ".join(
        f"{f.at_s:g}s {f.kind} {f.target} for {f.duration_s:g}s" + (f" ({f.stream} only)" if f.stream != "both" else "")
        + (f" on {f.on}" if f.on else "") for f in plan))
    log(f"repeat with: {repro}")
    events = EventLog(d.path / EVENTS)
    t_cluster = time.monotonic()
    try:
        with logs.clients_to(d.path / "logs" / logs.CLIENTS_LOG), _cluster(s, given, d.path / "logs") as c, \
                _container_logs_kept(c, d.path / "logs"):
            up_s = round(time.monotonic() - t_cluster, 2)
            c.runs += 1
            if c.formation is not None and c.runs == 1:
                formed = formation_event(c.formation)
                events.write(formed)
                moment = "its election" if formed.after == "elected" else \
                    f"the first broker registered ({formed.brokers_serving} serving)"
                log(f"formation: the first quorum leader, node {formed.leader} (epoch {formed.epoch}, elected "
                    f"{formed.elected_after_s:g} s after the first node's start), {formed.kind} for "
                    f"{formed.duration_s:g} s from {formed.delay_s:g} s after {moment}; once every broker had "
                    f"registered, node {formed.leader_after} led in epoch {formed.epoch_after}")
            log(f"cluster {c.name} {'up' if given is None else 'reused'} in {up_s:g} s: Kafka {s.kafka_version} "
                f"{s.mode}, {s.brokers} brokers")
            t_epochs = time.monotonic()
            drive_epochs(c, s, events, log)  # before the clients are made: it fences whoever holds the id
            epochs_s = round(time.monotonic() - t_epochs, 2)
            rec = Recording.of(c, s, events, d.path)
            rec.phases["cluster_up"] = up_s
            if any(p.epoch_from is not None for p in s.producers):
                rec.phases["epochs"] = epochs_s
            try:  # clients in processes of their own are started already: stopped if the run ends here
                with rec.phases.timed("topic_ready"):
                    rec.create_topics()
                nemesis = Nemesis(c, s.topic.name, events, **rec.handles())
            except BaseException:
                rec.abort()
                raise

            def stop_faults() -> None:
                nemesis.stop()
                if nemesis.error is not None:
                    raise RunError(f"nemesis failed: {nemesis.error!r}")

            try:
                with rec.phases.timed("workload"):
                    t0 = rec.start()
                    nemesis.start(plan, t0)
                    time.sleep(max(0.0, t0 + s.duration_s - time.monotonic()))
            except BaseException:
                nemesis.abandon()  # no heal fires on the cluster as it is removed
                rec.abort()
                raise
            return finish(d, c, s, rec, events, plan, stop_faults, reproduce=repro, log=log)
    finally:
        events.close()
