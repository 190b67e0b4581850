"""PySpark reconciliation of produced, consumed and replica logs into verdicts."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.checker.anomaly import ANOMALIES
from harness.checker.excuses import client_label
from harness.checker.promises import Config, promise_table_markdown, promises
from harness.checker.verdict import GroupVerdict, Verdict, write
from harness.history import RunDir, find_run_dirs, validate

DEFAULT_UNAVAILABLE_MS = 1000

__all__ = ["ANOMALIES", "Config", "check_runs", "prestart", "promise_table_markdown", "promises", "summarize"]


def prestart() -> threading.Thread:
    """The warm Spark server started (warm.ensure_up) and the check's own modules loaded, in a thread:
    a run calls it while its cluster boots or its workload goes on, so the check that follows finds
    both ready."""

    def ready() -> None:
        from harness.checker import warm

        warm.ensure_up()
        from harness.checker import analysis, judge  # noqa: F401  (loaded here, off the check's clock)

    t = threading.Thread(target=ready, name="checker-prestart", daemon=True)
    t.start()
    return t


def check_runs(paths: list[Path], master: str | None = None, threshold_ms: int = DEFAULT_UNAVAILABLE_MS,
               examples: int = 10, write_verdicts: bool = True) -> list[Verdict]:
    """Validate every run directory, reconcile them all in one Spark session, write verdict.json each.
    ``master``: None for the warm local server, ``local[*]`` for an embedded driver, ``sc://HOST:PORT``
    for any Spark Connect endpoint, ``spark://...`` for a standalone cluster.

    Raises HistoryError (bad input) before anything is written.
    """
    from harness.checker.analysis import analyse
    from harness.checker.judge import build_verdict
    from harness.checker.session import checking

    runs: list[RunDir] = [validate(p) for p in find_run_dirs([Path(p) for p in paths])]
    with checking(master) as spark:
        job = analyse(spark, runs, n_examples=examples)
    verdicts = [build_verdict(i, rd, job, threshold_ms) for i, rd in enumerate(runs)]
    if write_verdicts:
        for rd, v in zip(runs, verdicts, strict=True):
            write(rd.path, v)
    return verdicts


def summarize(verdicts: list[Verdict]) -> list[dict]:
    """One row per configuration across runs: how many runs, how many broke a promise, total counts, and
    per anomaly the runs it was counted in and the runs it broke the promise in."""
    rows: dict[str, dict] = {}
    for v in verdicts:
        for c in v.by_config:
            r = rows.setdefault(c.config, {
                "config": c.config, "runs": 0, "failed": 0,
                "counts": dict.fromkeys(ANOMALIES, 0), "runs_with": dict.fromkeys(ANOMALIES, 0),
                "broke": dict.fromkeys(ANOMALIES, 0),
            })
            r["runs"] += 1
            r["failed"] += c.verdict == "fail"
            for a in ANOMALIES:
                r["counts"][a] += c.counts[a]
                r["runs_with"][a] += c.counts[a] > 0
                r["broke"][a] += a in c.broken
        for g in v.by_group:
            _add_group(rows, g)
    return list(rows.values())


def group_label(g: GroupVerdict) -> str:
    """A group's row label: what decides its promises and its behaviour (protocol, assignor, commit)."""
    st = g.settings
    words = [client_label(st.get("client")), *(str(st.get(k) or "") for k in ("protocol", "assignor"))]
    how = " ".join(w for w in words if w)
    return f"group {g.group}: {how} commit={st.get('commit', 'sync')}".replace(":  ", ": ")


def _add_group(rows: dict[str, dict], g: GroupVerdict) -> None:
    """A group's row beside the configurations': its commit anomalies, and what it returned twice."""
    label = group_label(g)
    r = rows.setdefault(label, {
        "config": label, "runs": 0, "failed": 0, "counts": dict.fromkeys(ANOMALIES, 0),
        "runs_with": dict.fromkeys(ANOMALIES, 0), "redelivered": 0, "broke": dict.fromkeys(ANOMALIES, 0)})
    r["runs"] += 1
    r["failed"] += g.verdict == "fail"
    r["redelivered"] += g.redelivered
    for a, n in g.counts.items():
        r["counts"][a] += n
        r["runs_with"][a] += n > 0
        r["broke"][a] += a in g.broken
