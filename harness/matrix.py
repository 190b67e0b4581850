"""The matrix: the cross product of scenarios, Kafka versions, modes, acks levels and seeds.

Every cell is one run directory named for its coordinates under ``OUT/runs``; a cell whose
directory exists is finished (runs are renamed into place only when complete), so an interrupted
matrix resumes where it stopped. ``OUT/matrix.json`` records each cell's status, including cells
that could not be carried out and why. All runs are checked together, in one Spark session.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import scenario as scenario_mod
from harness.history import write_json_atomic
from harness.versions import KAFKA_VERSIONS

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


@dataclass(frozen=True)
class Cell:
    scenario: str  # name of scenarios/NAME.toml (or a path)
    kafka_version: str
    mode: str
    seed: int
    acks: str | None = None  # override every producer's acks

    @property
    def run_id(self) -> str:
        acks = f"-acks{self.acks}" if self.acks else ""
        return f"{Path(self.scenario).stem}-{self.kafka_version}-{self.mode}{acks}-s{self.seed}"

    def overrides(self, s: scenario_mod.Scenario) -> list[str]:
        if not self.acks:
            return []
        out = []
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


def parse_target(spec: str) -> tuple[str, str | None, str | None]:
    """``name``, ``name@VERSION`` or ``name@VERSION:MODE``."""
    name, _, where = spec.partition("@")
    version, _, mode = where.partition(":")
    return name, version or None, mode or None


def plan(scenarios: list[str], versions: list[str] | None, modes: list[str] | None, acks: list[str] | None,
         seeds: list[int]) -> Plan:
    """Every cell of the cross product, validated; raises ScenarioError on bad input, before any run."""
    for v in versions or []:
        if v not in KAFKA_VERSIONS:
            raise scenario_mod.ScenarioError(f"--versions: {v!r} has no image (allowed: {', '.join(KAFKA_VERSIONS)})")
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
                for a in acks or [None]:
                    for seed in seeds:
                        cell = Cell(str(path) if path.parent != SCENARIO_DIR else name, v, m, seed, a)
                        ov = cell.overrides(base)
                        try:
                            s = scenario_mod.load(path, ov, seed=seed, kafka_version=v, mode=m)
                        except scenario_mod.ScenarioError as e:
                            if pin_v or not versions:
                                raise
                            out.skipped.append((cell, str(e)))  # e.g. a mode this version lacks
                            continue
                        out.cells.append((cell, s, ov, path))
    return out


class Status:
    """matrix.json: each cell's coordinates, status and reason, rewritten atomically after every run."""

    def __init__(self, out: Path):
        self.path = out / "matrix.json"
        self.cells: dict[str, dict] = {}
        if self.path.exists():
            self.cells = {c["run_id"]: c for c in json.loads(self.path.read_text()).get("cells", [])}

    def set(self, cell: Cell, status: str, **extra) -> None:
        self.cells[cell.run_id] = {"run_id": cell.run_id, **asdict(cell), "status": status, **extra}
        write_json_atomic(self.path, {"cells": list(self.cells.values())})


def known_results(verdicts: list[dict], runs: dict[str, dict]) -> list[dict]:
    """Per scenario, version and mode: in how many runs each anomaly showed, and how many broke a promise."""
    rows: dict[tuple, dict] = {}
    for v in verdicts:
        run = runs.get(v["run_id"], {})
        key = (run.get("scenario", "?"), run.get("kafka_version", "?"), run.get("mode", "?"),
               "elr" if run.get("eligible_leader_replicas") else "")
        r = rows.setdefault(key, {"scenario": key[0], "kafka_version": key[1], "mode": key[2], "elr": bool(key[3]),
                                  "runs": 0, "broke_promise": 0, "any_anomaly": 0, "loss_or_divergence": 0,
                                  "with": {}})
        r["runs"] += 1
        r["broke_promise"] += v["verdict"] == "fail"
        counts = v["anomalies"]
        r["any_anomaly"] += any(n > 0 for n in counts.values())
        r["loss_or_divergence"] += counts["lost"] > 0 or counts["divergence"] > 0
        for a, n in counts.items():
            r["with"][a] = r["with"].get(a, 0) + (n > 0)
    return list(rows.values())


def known_results_markdown(rows: list[dict]) -> str:
    head = ("| scenario | Kafka | runs | runs with loss | runs with divergence | runs with loss or divergence "
            "| runs with any anomaly | runs that broke a promise |")
    out = [head, "|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["scenario"], r["kafka_version"], r["mode"])):
        n = r["runs"]

        def pct(k: int, n: int = n) -> str:
            return f"{k}/{n} ({100 * k / n:.0f}%)"

        kafka = f"{r['kafka_version']} {r['mode']}" + (" ELR" if r["elr"] else "")
        out.append(f"| {r['scenario']} | {kafka} | {n} | {pct(r['with'].get('lost', 0))} | "
                   f"{pct(r['with'].get('divergence', 0))} | {pct(r['loss_or_divergence'])} | "
                   f"{pct(r['any_anomaly'])} | {pct(r['broke_promise'])} |")
    return "\n".join(out)
