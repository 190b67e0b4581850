"""One run directory, from a started workload to its last file: the one path every run takes.

The scenario runner and the pytest plugin's hand-built workload both finish here, so a run judged
from a plugin test carries what a scenario run carries: the Kafka version and mode, every topic
with its settings, whether leader epochs and eligible leader replicas are on, the feature levels
the cluster finalized, the faults, and the scenario when there is one. run.json is checked against
the contract (``history.RunConfig``) before it is written.

The directory is written under a hidden ``.NAME.partial`` name and renamed only once every file is
complete, so a run that fails or is interrupted leaves nothing half-written behind. A run that could
not be carried out (a broker that exited on its own, a cluster that did not heal) is set aside as
``NAME.could-not-run``: every container's own log, the scenario and the error, because a broker
that will not come back after a fault may be Kafka's failure rather than kchaos's, and its log is
the only evidence of which.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from harness import history
from harness.cluster import KafkaCluster
from harness.cluster.features import finalized_features
from harness.faults import FAULTS, PlannedFault
from harness.history import EVENTS, RUN_JSON, read_events, write_json_atomic
from harness.history.events import EventLog, Fault, ToolFailed
from harness.run.recording import Recording, RecordingError
from harness.run.result import RunResult
from harness.scenario import Scenario
from harness.versions import leader_epochs_on

COULD_NOT_RUN = ".could-not-run"
ERROR_TXT = "error.txt"
SCENARIO_JSON = "scenario.json"


def could_not_run_dir(out: Path) -> Path:
    """Where a run that could not be carried out into ``out`` leaves its logs, scenario and error."""
    return Path(out).with_name(Path(out).name + COULD_NOT_RUN)


class RunError(RuntimeError):
    """The run itself could not be carried out (exit 3)."""


class RunDirectory:
    """The directory a run is written into: ``path`` (the partial one) until ``close`` renames it."""

    def __init__(self, out: Path):
        self.out = Path(out)
        if self.out.exists():
            raise RunError(f"{self.out} already exists; choose another --out")
        self.path = self.out.with_name(f".{self.out.name}.partial")
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)

    def close(self, result: RunResult) -> RunResult:
        """Rename the complete directory into place."""
        self.path.rename(self.out)
        result.path = self.out
        return result

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def set_aside(self, s: Scenario, error: BaseException) -> Path:
        """Keep what a run that could not be carried out left (its logs) with its scenario and error
        under ``could_not_run_dir``, in place of the partial directory; that path."""
        write_json_atomic(self.path / SCENARIO_JSON, s.model_dump(mode="json"))
        (self.path / ERROR_TXT).write_text(f"{type(error).__name__}: {error}\n")
        kept = could_not_run_dir(self.out)
        shutil.rmtree(kept, ignore_errors=True)
        self.path.rename(kept)
        return kept


def read_could_not_run(out: Path) -> tuple[dict, str] | None:
    """The scenario (as dumped) and error of a run set aside as could-not-run into ``out``, if any."""
    kept = could_not_run_dir(out)
    try:
        return json.loads((kept / SCENARIO_JSON).read_text()), (kept / ERROR_TXT).read_text().strip()
    except FileNotFoundError:
        return None


def finish(d: RunDirectory, cluster: KafkaCluster, s: Scenario, rec: Recording, events: EventLog,
           faults: list[PlannedFault], stop_faults: Callable[[], None], reproduce: str | None = None,
           source: str = "scenario", log: Callable[[str], None] = print) -> RunResult:
    """Stop sending, stop and heal every fault (``stop_faults``), wait for a healed cluster, read
    every partition and replica back, and write the history and run.json into ``d``."""
    try:
        with rec.phases.timed("workload"):
            rec.stop_producers()
            stop_faults()
        load = rec.load()  # once the producers stopped: what each achieved over the workload
        for row in load:
            log(load_line(row))
        log("workload done; healing and waiting for a full ISR")
        with rec.phases.timed("heal"):
            rec.heal_and_settle()
    except RecordingError as e:
        rec.abort()
        raise RunError(str(e)) from e
    except BaseException:
        rec.abort()
        raise
    log("final read of every partition from offset 0; every replica's log from its broker's files")
    counts = rec.read_back(d.path)
    if events.path.resolve() != (d.path / EVENTS).resolve():  # the plugin's events log is the test's
        (d.path / EVENTS).write_text(events.path.read_text())
    recorded = read_events(d.path)
    n_faults = sum(isinstance(e, Fault) for e in recorded)
    for e in recorded:
        if isinstance(e, ToolFailed):
            log(f"WARNING: {e.error}; the run lacks {e.lacks}")
    run = run_json(d.out.name, cluster, s, rec, faults, reproduce, source, load)
    history.check_run_config(d.path / RUN_JSON, run)  # the contract's shapes, before it is written
    write_json_atomic(d.path / RUN_JSON, run)
    return RunResult(d.path, counts.produced, counts.acked, counts.consumed_live, counts.final, counts.replicas,
                     n_faults, dict(rec.phases), list(rec.unsettled))


def load_line(row: dict) -> str:
    """One producer's load in words: what it was asked, what it did, and whether it fell short."""
    pct = round(100 * row["sent_per_s"] / row["asked_per_s"]) if row["asked_per_s"] else 100
    txn = (f"; {row['committed_txns_per_s']:g} of {row['asked_txns_per_s']:g} transactions/s committed"
           if "txns_per_s" in row else "")
    line = (f"producer {row['producer']}: {row['sent_per_s']:g} records/s sent, {row['acked_per_s']:g} acknowledged, "
            f"of {row['asked_per_s']:g} asked ({pct}%){txn}")
    if not row["short"]:
        return line
    line += " -- SHORT: the run tested less load than its scenario names"
    if row.get("txn_ms_median"):  # one transactional.id runs one transaction at a time
        line += (f" (a transaction took {row['txn_ms_median']} ms, median: more instances, `count`, or more "
                 "records per transaction reach the rate)")
    return line


def feature_levels(cluster: KafkaCluster) -> dict[str, int]:
    """The feature levels the cluster finalized, from the first broker that answers ({} in ZooKeeper
    mode and on versions without features)."""
    for port in cluster.client_ports.values():
        try:
            return finalized_features(port)
        except (OSError, ValueError):
            continue
    return {}


def run_json(run_id: str, cluster: KafkaCluster, s: Scenario, rec: Recording, faults: list[PlannedFault],
             reproduce: str | None, source: str, load: list[dict]) -> dict:
    """Everything the checker judges a run by, and what repeats it."""
    settings = cluster.settings
    return {
        "run_id": run_id, "source": source, "scenario": s.name if source == "scenario" else None,
        "description": s.description, "kafka_version": settings.kafka_version, "mode": settings.mode,
        "brokers": settings.brokers, "racks": settings.racks, "seed": s.seed, "reproduce": reproduce,
        "images": {"kafka": cluster.kafka_image, "toxiproxy": cluster.toxiproxy_image},
        "broker_config": settings.broker_config,
        "leader_epochs": leader_epochs_on(settings.kafka_version, settings.broker_config),
        "eligible_leader_replicas": settings.elr_enabled,
        "features": feature_levels(cluster),
        **rec.run_info(),
        # an operator's action names the topic it acted on (the run's), which its promise effect concerns
        "faults": [{**f.to_dict(), **({"topic": rec.topic.name} if FAULTS[f.kind].operation else {})}
                   for f in faults],
        "load": load,
        "workload": {"start_ms": rec.start_ms, "end_ms": rec.end_ms, "duration_s": s.duration_s},
        "cluster": cluster.describe_settings(),
        "cluster_run": cluster.runs,  # 1: a cluster of its own; n: the n-th run on a kept cluster
        "scenario_config": s.model_dump(),
        "phases": dict(rec.phases),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
