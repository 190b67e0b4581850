"""The matrix: the cross product of scenarios, Kafka versions, modes, client libraries, acks levels and seeds.

Every cell is one run directory named for its coordinates under ``OUT/runs``; a cell whose
directory exists is finished (runs are renamed into place only when complete), so an interrupted
matrix resumes where it stopped. ``OUT/matrix.json`` records each cell's status, including cells
that could not be carried out and why. Finished runs are checked while the next ones run (those
that finished during a check together, in the next), and each verdict is printed and written (its
verdict.json, its cell in matrix.json) as soon as it is known, so a matrix stopped halfway keeps
the verdicts of the runs it finished; the runs still unchecked at the end (an earlier, interrupted
matrix's) are checked together in one Spark session.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness import history
from harness import scenario as scenario_mod
from harness.clients.registry import LIBRARIES, canonical, names
from harness.history import write_json_atomic
from harness.run import lanes
from harness.run.kept_cluster import KeptCluster
from harness.scenario import catalogue
from harness.versions import KAFKA_VERSIONS

if TYPE_CHECKING:
    from harness.checker.verdict import Verdict

SCENARIO_DIR = catalogue.DIR


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
        return (f"{Path(self.scenario).name.removesuffix('.toml')}-{self.kafka_version}-{self.mode}{client}{acks}{sets}"
                f"-s{self.seed}")

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
    """A path, or a catalogue name (catalogue.find)."""
    return catalogue.find(name)


def _as_given(path: Path) -> str:
    """A catalogue scenario as ``scenarios/NAME.toml`` (the repeat command works from anywhere), any
    other file as it was named."""
    return f"scenarios/{path.name}" if catalogue.is_catalogued(path) else str(path)


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
                    cell = Cell(path.stem if catalogue.is_catalogued(path) else str(path), v, m, seed, a,
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
# line to show); the check's come from the thread that checks while the runs go on.
Announce = Callable[[str, str], None]
# The check of finished runs, in one Spark job: their verdicts, in order, each verdict.json written.
Check = Callable[[list[Path]], list["Verdict"]]


def verdict_line(v: Verdict) -> str:
    """A verdict in one line, as the matrix prints it when a run's check ends."""
    broken = ", ".join(f"{a} {n:,} ({where})" for where, a, n in v.broken())
    return v.verdict + (f": broke {broken}" if broken else "")


class _Checks:
    """Finished runs checked in a thread of their own while the runs go on. Each check takes every
    run that finished since the last one began, in one Spark job: a small run's check costs its job
    more than its records, so runs that finish while a check goes on wait for one job, not one each.
    A check that fails is said, and its runs are left for the check at the end. ``close`` returns
    once every run handed over is checked (an interrupted matrix too)."""

    def __init__(self, check: Check, status: Status, announce: Announce) -> None:
        self.check, self.status, self.announce = check, status, announce
        self._waiting: list[tuple[Cell, Path]] = []
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="kchaos-matrix-check", daemon=True)
        self._thread.start()

    def submit(self, cell: Cell, path: Path) -> None:
        with self._cond:
            self._waiting.append((cell, path))
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._waiting or self._closed)
                batch, self._waiting = self._waiting, []
            if not batch:
                return
            self._check(batch)

    def _check(self, batch: list[tuple[Cell, Path]]) -> None:
        try:
            verdicts = self.check([path for _, path in batch])
        except Exception as e:
            for cell, _ in batch:
                self.announce("check_error", f"{cell.run_id}: its check failed ({str(e).splitlines()[0][:200]}); "
                                             "checked again at the end")
            return
        for (cell, _), v in zip(batch, verdicts, strict=True):
            self.status.add(cell, verdict=v.verdict, broken=[list(b) for b in v.broken()])
            self.announce("verdict", f"{cell.run_id}: {verdict_line(v)}")


def run_cells(p: Plan, out: Path, announce: Announce, fresh: bool = False,
              image_ready: Callable[[str], None] | None = None, check: Check | None = None,
              side_by_side: int = 1, kept_cluster: Callable[[], KeptCluster] | None = None) -> list[Path]:
    """Run every cell of ``p`` whose run directory does not exist yet, recording each one's status in
    matrix.json; a cell that cannot be carried out is recorded as an error and the next one runs.
    Cells that may share a cluster (``kept_cluster``) run one after another on one kept cluster,
    each on a topic of its own, unless ``fresh``. With ``side_by_side`` above 1, the cells of
    different cluster settings (Kafka version, mode, ...) run as that many lanes at once, each in a
    process of its own (run/lanes.py); else one after another in this process, the next cluster
    booting while a run goes on. ``image_ready(version)`` returns once a Kafka image is built
    (images.Prefetch.wait). With ``check``, each finished run is checked in a thread of its own
    while the runs go on, and its verdict announced; the call returns once every check has ended
    (an interrupted matrix waits for the check under way). Returns the run directories of every
    finished cell (this call's and earlier calls')."""
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    status = Status(out)
    todo = [lanes.LaneCell(number, cell.run_id, s, tuple(ov), _as_given(path), s.kafka_version)
            for number, (cell, s, ov, path) in enumerate(p.cells) if not (runs_dir / cell.run_id).exists()]
    kept = kept_cluster or KeptCluster  # looked up here: the unit tests put a fake in its place
    checks = _Checks(check, status, announce) if check is not None else None
    report = _Reporter(p, runs_dir, status, announce, checks).report
    try:
        by_settings = lanes.by_cluster_settings(todo)
        if side_by_side > 1 and len(by_settings) > 1:
            lanes.SideBySide(side_by_side, report, image_ready, kept).run(by_settings, runs_dir, fresh)
        elif todo:
            lanes.run_lane(lanes.Lane(todo), runs_dir, fresh, report, image_ready, kept)
    finally:
        if checks is not None:
            checks.close()
    return [runs_dir / c.run_id for c, *_ in p.cells if (runs_dir / c.run_id).exists()]


@dataclass
class _Reporter:
    """What a lane says of a cell, announced and written to matrix.json; a finished run's check
    submitted to run beside the next runs."""

    p: Plan
    runs_dir: Path
    status: Status
    announce: Announce
    checks: _Checks | None

    def report(self, what: str, number: int, extra: dict) -> None:
        cell = self.p.cells[number][0]
        if what == "start":
            self.announce("start", cell.run_id)
        elif what == "done":
            self.status.set(cell, "done", seconds=extra["seconds"], acknowledged=extra["acked"], final=extra["final"])
            self.announce("done", f"{cell.run_id}: {extra['acked']} acknowledged, {extra['final']} in the final read "
                                  f"({extra['seconds']:.0f} s)")
            if self.checks is not None:
                self.checks.submit(cell, self.runs_dir / cell.run_id)
        else:
            self.status.set(cell, "error", reason=extra["reason"])
            self.announce("error", f"{cell.run_id}: {extra['reason'].splitlines()[0][:200]}")


@dataclass
class Outcome:
    verdicts: list[dict]
    known_markdown: str
    report: Path
    errors: list[dict]


def check(spark_master: str | None = None) -> Check:
    """The check of finished runs on the warm Spark server (or ``spark_master``), for ``run_cells``."""
    from harness.checker import check_runs

    return functools.partial(check_runs, master=spark_master)


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
