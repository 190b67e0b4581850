"""The matrix: the cross product of scenarios, Kafka versions, modes, client libraries, acks levels and seeds.

Every cell is one run directory named for its coordinates under ``OUT/runs``; a cell whose
directory exists is finished (runs are renamed into place only when complete), so an interrupted
matrix resumes where it stopped. ``OUT/matrix.json`` records each cell's status, including cells
that could not be carried out and why. Each finished run is checked while the next one runs, and
its verdict is printed and written (its verdict.json, its cell in matrix.json) as soon as it is
known, so a matrix stopped halfway keeps the verdicts of the runs it finished; the runs still
unchecked at the end (an earlier, interrupted matrix's) are checked together in one Spark session.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness import history
from harness import scenario as scenario_mod
from harness.clients.registry import LIBRARIES, canonical, names
from harness.history import write_json_atomic
from harness.run.kept_cluster import KeptCluster, may_share_a_cluster, on_a_topic_of_its_own
from harness.versions import KAFKA_VERSIONS

if TYPE_CHECKING:
    from harness.checker.verdict import Verdict

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


@dataclass(frozen=True)
class Cell:
    scenario: str  # name of scenarios/NAME.toml (or a path)
    kafka_version: str
    mode: str
    seed: int
    acks: str | None = None  # override every producer's acks
    sets: tuple[str, ...] = ()  # KEY=VALUE overrides of every scenario (--set)
    client: str | None = None  # the scenario's client library (--clients): every table that names none

    @property
    def run_id(self) -> str:
        acks = f"-acks{self.acks}" if self.acks else ""
        client = f"-{self.client}" if self.client else ""
        sets = "-" + re.sub(r"[^A-Za-z0-9.=_-]", "_", ",".join(self.sets)) if self.sets else ""
        return f"{Path(self.scenario).stem}-{self.kafka_version}-{self.mode}{client}{acks}{sets}-s{self.seed}"

    def overrides(self, s: scenario_mod.Scenario) -> list[str]:
        out = list(self.sets)
        if not self.acks:
            return out
        for i in range(len(s.producers)):
            out.append(f'producers.{i}.acks="{self.acks}"')
            if self.acks != "all":
                out.append(f"producers.{i}.idempotence=false")
        return out


@dataclass
class Plan:
    cells: list[tuple[Cell, scenario_mod.Scenario, list[str], Path]] = field(default_factory=list)
    skipped: list[tuple[Cell, str]] = field(default_factory=list)


def scenario_path(name: str) -> Path:
    p = Path(name)
    if p.suffix == ".toml" or p.exists():
        return p
    return SCENARIO_DIR / f"{name}.toml"


def _as_given(path: Path) -> str:
    """A catalogue scenario as ``scenarios/NAME.toml`` (the repeat command works from any checkout),
    any other file as it was named."""
    return f"scenarios/{path.name}" if path.parent == SCENARIO_DIR else str(path)


def parse_target(spec: str) -> tuple[str, str | None, str | None]:
    """``name``, ``name@VERSION`` or ``name@VERSION:MODE``."""
    name, _, where = spec.partition("@")
    version, _, mode = where.partition(":")
    return name, version or None, mode or None


def plan(scenarios: list[str], versions: list[str] | None, modes: list[str] | None, acks: list[str] | None,
         seeds: list[int], sets: list[str] | None = None, clients: list[str] | None = None) -> Plan:
    """Every cell of the cross product, validated; raises ScenarioError on bad input, before any run."""
    clients = [canonical(c) for c in clients or []]
    for c in clients:
        if c not in LIBRARIES:
            raise scenario_mod.ScenarioError(f"--clients: {c!r} has no driver (allowed: {names()})")
    for v in versions or []:
        if v not in KAFKA_VERSIONS:
            raise scenario_mod.ScenarioError(
                f"--versions: {v!r} has no image recipe (allowed: {', '.join(KAFKA_VERSIONS)})")
    for m in modes or []:
        if m not in ("zk", "kraft"):
            raise scenario_mod.ScenarioError(f"--modes: {m!r} (allowed: zk, kraft)")
    for a in acks or []:
        if a not in ("0", "1", "all"):
            raise scenario_mod.ScenarioError(f"--acks: {a!r} (allowed: 0, 1, all)")
    out = Plan()
    for spec in scenarios:
        name, pin_v, pin_m = parse_target(spec)
        path = scenario_path(name)
        base = scenario_mod.load(path)  # raises ScenarioError naming the file
        vs = [pin_v] if pin_v else (versions or [base.kafka_version])
        for v in vs:
            ms = [pin_m] if pin_m else (modes or ([base.mode] if not versions else list(KAFKA_VERSIONS.get(v, ()))))
            for m in ms:
                for a, client, seed in itertools.product(acks or [None], clients or [None], seeds):
                    cell = Cell(str(path) if path.parent != SCENARIO_DIR else name, v, m, seed, a,
                                tuple(sets or ()), client)
                    ov = cell.overrides(base)
                    try:
                        s = scenario_mod.load(path, ov, seed=seed, kafka_version=v, mode=m, client=client)
                    except scenario_mod.ScenarioError as e:
                        if pin_v or not versions:
                            raise
                        out.skipped.append((cell, str(e)))  # e.g. a mode this version lacks
                        continue
                    out.cells.append((cell, s, ov, path))
    return out


class Status:
    """matrix.json: each cell's coordinates, status and reason, rewritten atomically after every run
    and every check (the runs and their checks are two threads)."""

    def __init__(self, out: Path):
        self.path = out / "matrix.json"
        self.cells: dict[str, dict] = {}
        self._lock = threading.Lock()
        if self.path.exists():
            self.cells = {c["run_id"]: c for c in json.loads(self.path.read_text()).get("cells", [])}

    def set(self, cell: Cell, status: str, **extra) -> None:
        with self._lock:
            self.cells[cell.run_id] = {"run_id": cell.run_id, **asdict(cell), "status": status, **extra}
            write_json_atomic(self.path, {"cells": list(self.cells.values())})

    def add(self, cell: Cell, **extra) -> None:
        """More about a cell already set (its verdict, once checked)."""
        with self._lock:
            self.cells[cell.run_id] = {**self.cells.get(cell.run_id, {}), **extra}
            write_json_atomic(self.path, {"cells": list(self.cells.values())})


# (what happened: "start", "done" or "error" of a run, "verdict" or "check_error" of its check, the
# line to show); the check's come from the thread that checks while the next run goes on.
Announce = Callable[[str, str], None]
Check = Callable[[Path], "Verdict"]  # one finished run's check: its verdict, verdict.json written


def verdict_line(v: Verdict) -> str:
    """A verdict in one line, as the matrix prints it when a run's check ends."""
    broken = ", ".join(f"{a} {n:,} ({where})" for where, a, n in v.broken())
    return v.verdict + (f": broke {broken}" if broken else "")


def _check_one(check: Check, cell: Cell, path: Path, status: Status, announce: Announce) -> None:
    """Check one finished run and say its verdict; a check that fails is said, and the run is left
    for the check at the end."""
    try:
        v = check(path)
    except Exception as e:
        announce("check_error", f"{cell.run_id}: its check failed ({str(e).splitlines()[0][:200]}); checked again at "
                          "the end")
        return
    status.add(cell, verdict=v.verdict, broken=[list(b) for b in v.broken()])
    announce("verdict", f"{cell.run_id}: {verdict_line(v)}")


def run_cells(p: Plan, out: Path, announce: Announce, fresh: bool = False,
              image_ready: Callable[[str], None] | None = None, check: Check | None = None) -> list[Path]:
    """Run every cell of ``p`` whose run directory does not exist yet, recording each one's status in
    matrix.json; a cell that cannot be carried out is recorded as an error and the next one runs.
    Cells that may share a cluster (``kept_cluster``) run one after another on one kept cluster,
    each on a topic of its own, unless ``fresh``. ``image_ready(version)`` returns once a cell's
    Kafka image is built (images.Prefetch.wait). With ``check``, each finished run is checked in a
    thread of its own while the next one runs, and its verdict announced; the call returns once
    every check has ended (an interrupted matrix waits for the check under way). Returns the run
    directories of every finished cell (this call's and earlier calls')."""
    from harness.run import runner
    from harness.setup.images import ImageError

    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    status = Status(out)
    with KeptCluster() as kept, ThreadPoolExecutor(max_workers=1, thread_name_prefix="kchaos-matrix-check") as checks:
        for number, (cell, s, ov, path) in enumerate(p.cells):
            if (runs_dir / cell.run_id).exists():
                continue
            reuse = not fresh and may_share_a_cluster(s)
            if reuse:
                _boot_the_next_cluster(p, number, runs_dir, kept, image_ready)
            if reuse:  # the topic's name goes into the run's repeat command too
                s = on_a_topic_of_its_own(s, f"m{number}")
                ov = [*ov, f'topic.name="{s.topic.name}"']
            announce("start", cell.run_id)
            t0 = time.monotonic()
            try:
                if image_ready is not None:
                    image_ready(s.kafka_version)
                res = kept.execute(s, runs_dir / cell.run_id, reuse, scenario_file=_as_given(path), overrides=ov,
                                   log=lambda m: None)
                status.set(cell, "done", seconds=round(time.monotonic() - t0, 1), acknowledged=res.acked,
                           final=res.final)
                announce("done", f"{cell.run_id}: {res.acked} acknowledged, {res.final} in the final read "
                                 f"({time.monotonic() - t0:.0f} s)")
                if check is not None:
                    checks.submit(_check_one, check, cell, runs_dir / cell.run_id, status, announce)
            except (*runner.NOT_CARRIED_OUT, ImageError) as e:
                status.set(cell, "error", reason=str(e)[:2000])
                announce("error", f"{cell.run_id}: {str(e).splitlines()[0][:200]}")
    return [runs_dir / c.run_id for c, *_ in p.cells if (runs_dir / c.run_id).exists()]


def _boot_the_next_cluster(p: Plan, number: int, runs_dir: Path, kept: KeptCluster,
                           image_ready: Callable[[str], None] | None) -> None:
    """While cell ``number`` runs, boot the cluster of the next cell still to run, when that one
    shares a cluster of other settings (the next Kafka version or mode): its 15-25 s of boot then
    overlap this run instead of following it."""
    current = p.cells[number][1].cluster_settings()
    for cell, s, _, _ in p.cells[number + 1:]:
        if (runs_dir / cell.run_id).exists():
            continue
        if may_share_a_cluster(s) and s.cluster_settings() != current:
            ready = functools.partial(image_ready, s.kafka_version) if image_ready is not None else None
            kept.boot_ahead(s, before=ready)
        return


@dataclass
class Outcome:
    verdicts: list[dict]
    known_markdown: str
    report: Path
    errors: list[dict]


def check(spark_master: str | None = None) -> Check:
    """A check of one run on the warm Spark server (or ``spark_master``), for ``run_cells``: the
    same one-run check the hunt makes beside its next run (hunt/trials.check)."""

    from harness.hunt.trials import check as check_one

    return functools.partial(check_one, spark_master=spark_master)


def check_and_report(finished: list[Path], out: Path, spark_master: str | None = None) -> Outcome:
    """Check the finished runs that have no verdict yet (all in one Spark session), then write
    known-results.md and the report from every run's verdict."""
    from harness.checker import check_runs
    from harness.checker.verdict import read as read_verdict
    from harness.report import known_results
    from harness.report import page as report

    checked = {d: v for d in finished if (v := read_verdict(d)) is not None}
    unchecked = [d for d in finished if d not in checked]
    checked.update(zip(unchecked, check_runs(unchecked, master=spark_master) if unchecked else [], strict=True))
    verdicts = [checked[d] for d in finished]
    runs = {d.name: history.read_run_config(d) for d in finished}
    known = known_results.markdown(known_results.rows(verdicts, runs))
    coordination = known_results.coordination_rows(verdicts, runs)
    if coordination:
        known += "\n\nFaults on the coordination layer (seconds: median (worst) over those faults):\n\n" + \
            known_results.coordination_markdown(coordination)
    (out / "known-results.md").write_text(known + "\n")
    status = Status(out)
    html = report.write_report(finished, out / "index.html", title="kchaos durability matrix",
                               matrix_status=status.cells)
    return Outcome(verdicts, known, html, [c for c in status.cells.values() if c["status"] == "error"])
