"""The report's upgrades table: each node a rolling upgrade moved (its versions, when it stopped,
started and was back in every ISR, and how long it was away) and each feature level raised, from
the fault lines of events.jsonl."""

from __future__ import annotations

from harness.history.events import Fault


def _s(ms: int | None, t0: int) -> float | None:
    return round((ms - t0) / 1000, 2) if ms is not None else None


def upgrade_rows(faults: list[Fault], t0: int) -> list[dict]:
    """One row per node a roll moved, in the order it moved them, and one per feature upgrade."""
    rows = []
    for f in faults:
        for step in f.upgrade or []:
            back = step.rejoined_ms
            rows.append({"what": f"{step.node}: Kafka {step.before} -> {step.after}",
                         "begin_s": _s(step.begin_ms, t0), "stopped_s": _s(step.stopped_ms, t0),
                         "started_s": _s(step.started_ms, t0), "back_s": _s(back, t0),
                         "away_s": round((back - step.begin_ms) / 1000, 2) if back is not None else None})
        if f.upgrade_error:
            rows.append({"what": f"the roll stopped: {f.upgrade_error}", "begin_s": None, "stopped_s": None,
                         "started_s": None, "back_s": None, "away_s": None})
        change = f.feature_change
        if change:
            rows.append({"what": f"{change.feature}: {change.before} -> {change.after} (asked "
                                 f"{change.asked})", "begin_s": _s(f.start_ms, t0), "stopped_s": None,
                         "started_s": None, "back_s": _s(f.end_ms, t0), "away_s": None})
    return rows
