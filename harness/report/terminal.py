"""The verdict as terminal tables a person reads at 120 columns: what broke a promise first, then
what else was counted; every anomaly class's count per run is in verdict.json and the report.

A cell names anomalies by their class's short label (harness/checker/anomaly/), so the tables keep
five columns however many classes a run has.
"""

from __future__ import annotations

from rich.table import Table

from harness.checker.anomaly import BY_NAME
from harness.checker.verdict import Verdict


def label(anomaly: str) -> str:
    c = BY_NAME.get(anomaly)
    return c.label if c is not None else anomaly.replace("_", " ")


def _listing(counts: dict[str, int], runs: dict[str, int] | None = None) -> str:
    """One anomaly a line: ``lost 823``; with runs: ``lost 16,482 (20 runs)``."""
    parts = []
    for a, n in counts.items():
        seen = f" ({runs[a]} run{'s' if runs[a] != 1 else ''})" if runs is not None else ""
        parts.append(f"{label(a)} {n:,}{seen}")
    return "\n".join(parts) or "-"


def run_cells(v: Verdict) -> tuple[dict[str, int], dict[str, int]]:
    """(anomalies that broke a promise, the other anomalies counted) of one run, with their counts."""
    broke = {a for _, a, _ in v.broken()}
    counted = {a: n for a, n in v.anomalies.items() if n}
    return ({a: n for a, n in counted.items() if a in broke}, {a: n for a, n in counted.items() if a not in broke})


def reached(v: Verdict) -> str:
    """The protocol states the run entered, with how often: "leader_change 2, isr_leader_alone 1", or
    "none of the protocol states" (a run whose faults moved nothing)."""
    return ", ".join(f"{k} {n}" for k, n in v.coverage.items() if n) or "none of the protocol states"


def runs_table(verdicts: list[Verdict]) -> Table:
    t = Table(title="runs", header_style="bold", expand=False)
    t.add_column("run", overflow="fold", ratio=3)
    t.add_column("verdict", no_wrap=True)
    t.add_column("broke a promise", style="red", overflow="fold", ratio=2)
    t.add_column("also counted (expected)", overflow="fold", ratio=2)
    for v in verdicts:
        colour = "red" if v.failed else ("green" if v.exercised else "yellow")
        broke, other = run_cells(v)
        broke_cell = [_listing(broke)] if broke else []
        broke_cell += [f"not healed: {x.describe()}" for x in v.not_healed]
        other_cell = _listing(other) + "".join(f"\n[yellow]read with care: {a}[/yellow]" for a in v.assumptions)
        other_cell += "".join(f"\n[yellow]not judged ({n.extent}): {n.unjudged}, {n.client}: {n.why}[/yellow]"
                              for n in v.not_judged)
        other_cell += f"\n[dim]reached: {reached(v)}[/dim]" if v.coverage else ""
        other_cell += f"\n[dim]at risk: {words}[/dim]" if (words := v.exposure_words()) else ""
        t.add_row(v.run_id, f"[{colour}]{v.verdict}[/{colour}]", "\n".join(broke_cell) or "-", other_cell)
    return t


def configs_table(summary: list[dict]) -> Table:
    t = Table(title="per configuration", header_style="bold", expand=False)
    t.add_column("configuration", overflow="fold", ratio=3)
    t.add_column("runs", justify="right", no_wrap=True)
    t.add_column("failed", justify="right", no_wrap=True)
    t.add_column("broke a promise", style="red", overflow="fold", ratio=2)
    t.add_column("expected", overflow="fold", ratio=2)
    for r in summary:
        broke = {a: n for a, n in r["counts"].items() if n and r["broke"][a]}
        expected = {a: n for a, n in r["counts"].items() if n and not r["broke"][a]}
        t.add_row(r["config"], str(r["runs"]), str(r["failed"]), _listing(broke, r["broke"]),
                  _listing(expected, r["runs_with"]))
    return t
