"""A matrix's throughput with one kept cluster against a cluster per run.

    python benchmarks/matrix.py [SCENARIO] [--seeds N] [--out DIR]

Runs ``kchaos matrix --scenarios SCENARIO --seeds N`` twice into fresh directories, first with
cells sharing a kept cluster (the default), then with ``--fresh-clusters``, and prints for each:
runs per hour over the runs themselves, each run's overhead beyond its workload (matrix.json's
seconds per cell: cluster up or reused, topic, workload, heal, read back, teardown) and the whole
command's wall time, the one Spark check of every run and the report included. The scenario must be
one whose runs may share a cluster (``harness/run/kept_cluster.py``), or both figures are the same.
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


def one(scenario: str, seeds: int, out: Path, fresh: bool) -> None:
    args = [sys.executable, "-m", "harness", "matrix", "--scenarios", scenario, "--seeds", str(seeds),
            "--out", str(out)]
    t0 = time.monotonic()
    r = subprocess.run(args + (["--fresh-clusters"] if fresh else []), cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    cells = [c for c in json.loads((out / "matrix.json").read_text())["cells"] if c["status"] == "done"]
    seconds = [c["seconds"] for c in cells]
    runs = [json.loads((out / "runs" / c["run_id"] / "run.json").read_text()) for c in cells]
    overheads = [c["seconds"] - run["workload"]["duration_s"] for c, run in zip(cells, runs, strict=True)]
    up = [run["phases"]["cluster_up"] for run in runs]
    print(f"{'a cluster per run' if fresh else 'one kept cluster'}: exit {r.returncode}; {len(cells)} runs in "
          f"{sum(seconds):.0f} s of runs, {wall:.0f} s to the report; "
          f"runs per hour {3600 * len(cells) / sum(seconds):.0f}; "
          f"overhead per run beyond its workload: median {statistics.median(overheads):.1f} s "
          f"(min {min(overheads):.1f}, max {max(overheads):.1f}); cluster up median {statistics.median(up):.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", default="acks1-leader-kill")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    root = a.out or Path(tempfile.mkdtemp(prefix="kchaos-matrix-bench-"))
    one(a.scenario, a.seeds, root / "kept", fresh=False)
    one(a.scenario, a.seeds, root / "fresh", fresh=True)


if __name__ == "__main__":
    main()
