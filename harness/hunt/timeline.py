"""A run's steps as a tracker's timeline: what kchaos did and what the cluster showed, each with its
time since the workload started and its wall-clock time, from the run's events.jsonl (the faults
as they were applied and healed, the triggers that fired them, the partitions' leaders and ISRs as
the cluster answered, the partitions whose ISR was not whole again)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from harness.history import EVENTS

MAX_STATE_CHANGES = 30


def _wall(ts_ms: int) -> str:
    return datetime.datetime.fromtimestamp(ts_ms / 1000, datetime.UTC).strftime("%H:%M:%S.%f")[:-3]


def _fault_steps(e: dict) -> list[tuple[int, str]]:
    where = ", ".join(e.get("nodes") or []) or e.get("target", "?")
    what = f"{e['kind']} of {where} ({e.get('name', e['kind'])})"
    cause = f", {e['trigger']} (the cluster showed {e['observed']})" if e.get("trigger") else ""
    steps = [(int(e["start_ms"]), f"kchaos: {what} begins{cause}")]
    if e.get("end_ms"):
        steps.append((int(e["end_ms"]), f"kchaos: {what} healed"))
    return steps


def _state_steps(states: list[dict]) -> list[tuple[int, str]]:
    """Each change of a partition's leader or ISR, as the cluster's metadata answered kchaos's polls."""
    seen: dict[int, tuple] = {}
    out = []
    for e in states:
        for p in e.get("partitions") or []:
            now = (p.get("leader"), tuple(p.get("isr") or ()))
            if seen.get(p["partition"]) != now:
                seen[p["partition"]] = now
                out.append((int(e["ts_ms"]), f"cluster: partition {p['partition']} leader {now[0]}, ISR "
                                             f"{list(now[1])}"))
    return out[:MAX_STATE_CHANGES]


def steps(run_dir: Path) -> list[str]:
    """The run's timeline as markdown table rows (header included); empty when it has no events."""
    path = run_dir / EVENTS
    if not path.exists():
        return []
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    start = next((e["ts_ms"] for e in events if e.get("type") == "workload_start"), None)
    if start is None:
        return []
    rows: list[tuple[int, str]] = [(start, "kchaos: producers and readers start")]
    for e in events:
        kind = e.get("type")
        if kind == "fault" and e.get("start_ms"):
            rows += _fault_steps(e)
        elif kind == "workload_end":
            rows.append((int(e["ts_ms"]), "kchaos: producers stop; then every fault is healed and every partition "
                                          "read back from offset 0"))
        elif kind == "isr_not_restored":
            rows.append((int(e.get("ts_ms", start)), f"cluster: ISR not whole again: {json.dumps(e, default=str)}"))
    rows += _state_steps([e for e in events if e.get("type") == "state"])
    rows.sort(key=lambda r: r[0])
    return ["| since start | UTC | step |", "|---|---|---|",
            *[f"| {(ts - start) / 1000:+.2f} s | {_wall(ts)} | {text} |" for ts, text in rows]]
