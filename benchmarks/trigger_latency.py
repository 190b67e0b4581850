"""How late triggered faults fire: from the moment the nemesis saw a trigger's event (plus the
trigger's delay) to the moment the fault started being applied, over every triggered fault of the
run directories given (a matrix's OUT/runs, or single runs).

For a trigger on another fault's start or end, whose own time is in events.jsonl, it also prints
the time from that fault's start (or end) to the trigger being seen. A fault's start is logged when
its application begins and a trigger on it is seen once the application is done, so that figure
includes the other fault's own apply time (a container kill takes a few hundred ms). Reads only
events.jsonl and run.json; starts nothing.

Usage: python benchmarks/trigger_latency.py RUN_DIR_OR_PARENT [...]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path

from harness.history import find_run_dirs


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]


def schedule(run_dir: Path) -> dict[int, dict]:
    """The run's planned faults by number, as run.json records them."""
    faults = json.loads((run_dir / "run.json").read_text()).get("faults", [])
    return {f["number"]: f for f in faults if "number" in f}


def latencies(run_dir: Path) -> tuple[list[float], list[float]]:
    """(trigger seen + delay -> fault applied, other fault's start or end -> trigger seen), in ms."""
    evs, plan = events(run_dir), schedule(run_dir)
    faults = [e for e in evs if e.get("type") == "fault"]
    delay_at = {e["ts_ms"]: e.get("delay_s", 0.0) for e in evs if e.get("type") == "trigger"}
    apply_ms, detect_ms = [], []
    for f in (f for f in faults if f.get("trigger_ms") is not None):
        apply_ms.append(f["start_ms"] - f["trigger_ms"] - 1000 * delay_at.get(f["trigger_ms"], 0.0))
        on = str(f.get("trigger", ""))
        if not on.startswith(("fault_start", "fault_end")):
            continue
        other = plan.get(int(on.split("fault=")[1].split()[0]))
        match = [g for g in faults if other and g is not f and g["kind"] == other["kind"]
                 and g.get("planned_at_s") == other.get("at_s")]
        if match:
            detect_ms.append(f["trigger_ms"] - match[0]["start_ms" if on.startswith("fault_start") else "end_ms"])
    return apply_ms, detect_ms


def summary(xs: list[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    return (f"{len(xs)} faults: median {statistics.median(xs):.0f} ms, p95 {xs[int(0.95 * (len(xs) - 1))]:.0f} ms, "
            f"max {xs[-1]:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=Path)
    args = ap.parse_args()
    runs = find_run_dirs(args.paths)
    apply_ms, detect_ms = [], []
    for rd in runs:
        a, d = latencies(rd)
        apply_ms += a
        detect_ms += d
    print(f"{platform.node()} {platform.machine()}, {len(runs)} run directories")
    print(f"trigger seen (+ delay) -> fault applied: {summary(apply_ms)}")
    print(f"other fault started/ended -> trigger seen (includes that fault's apply time): {summary(detect_ms)}")


if __name__ == "__main__":
    main()
