"""A hunt's throughput: runs per hour and each run's overhead beyond its workload.

    python benchmarks/hunt.py [SCENARIO] [--runs N] [--out DIR]

Runs ``kchaos hunt SCENARIO --runs N`` (default: smoke, 5 drawn runs, into a fresh directory), then
reads hunt.json and every run's run.json: the overhead of a run is its wall time (cluster up,
workload, heal, read back, teardown, check) minus its workload, and each phase of it is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", default="smoke")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="kchaos-hunt-bench-")) / "hunt"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "harness", "hunt", a.scenario, "--runs", str(a.runs), "--out", str(out),
                        "--confirm", "1", "--shrink-runs", "0"], cwd=ROOT)
    wall = time.monotonic() - t0
    doc = json.loads((out / "hunt.json").read_text())
    runs = doc["runs"]
    overheads = [x["wall_s"] - x["workload_s"] for x in doc["spent"].values() if "error" not in x]
    phases: dict[str, list[float]] = {}
    for d in sorted((out / "runs").iterdir()):
        for k, v in json.loads((d / "run.json").read_text())["phases"].items():
            phases.setdefault(k, []).append(v)
    print(f"kchaos hunt {a.scenario} --runs {a.runs}: exit {r.returncode}; {runs} runs ({doc['drawn']} drawn) in "
          f"{doc['wall_s']:g} s of runs ({wall:.0f} s with start-up), {doc['workload_s']:g} s of workload")
    print(f"runs per hour: {3600 * runs / doc['wall_s']:.0f}; overhead per run beyond its workload: median "
          f"{statistics.median(overheads):.1f} s (min {min(overheads):.1f}, max {max(overheads):.1f})")
    inside = {k: statistics.median(v) for k, v in phases.items() if k != "workload"}
    print("phases inside a run (median s): " + ", ".join(f"{k} {v:.1f}" for k, v in inside.items())
          + f"; the rest (teardown, check, process) {statistics.median(overheads) - sum(inside.values()):.1f}")


if __name__ == "__main__":
    main()
