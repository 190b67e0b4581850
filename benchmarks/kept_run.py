"""`kchaos run` on a kept cluster (`kchaos up SCENARIO`) against a run that boots its own: each run's
wall time as a user sees it (the command's start to its exit, the check included) and its ratio to
the scenario's workload.

    python benchmarks/kept_run.py [SCENARIO] [--runs 5] [--set K=V ...]

Starts `kchaos up SCENARIO`, waits for it to be ready, runs `kchaos run SCENARIO` --runs times (each
on a topic of its own on that cluster), stops it with Ctrl-C, then runs the scenario once more on a
cluster of its own for comparison. The warm Spark server is started first, so no run pays for it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_run(args: list[str], out: Path, env: dict) -> tuple[float, dict]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "harness", "run", *args, "--out", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode not in (0, 1):
        sys.exit(f"kchaos run exited {r.returncode}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return wall, json.loads((out / "run.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", default="acks1-leader-kill")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--set", action="append", default=[], dest="sets")
    a = ap.parse_args()
    args = [a.scenario, *[x for kv in a.sets for x in ("--set", kv)]]
    tmp = Path(tempfile.mkdtemp(prefix="kchaos-kept-run-"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    subprocess.run([sys.executable, "-c", "from harness.checker import warm; warm.ensure_up()"], cwd=ROOT, env=env,
                   check=True)
    up = subprocess.Popen([sys.executable, "-m", "harness", "up", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=False)
    t0 = time.monotonic()
    while "ready" not in (line := up.stdout.readline()):
        if up.poll() is not None:
            sys.exit(f"kchaos up exited {up.returncode}: {line}{up.stdout.read()}")
    boot = time.monotonic() - t0
    kept = []
    try:
        for i in range(a.runs):
            kept.append(timed_run(args, tmp / f"kept-{i}", env))
    finally:
        up.send_signal(signal.SIGINT)
        up.communicate(timeout=60)
    fresh = timed_run(args, tmp / "fresh", env)
    workload = kept[0][1]["scenario_config"]["duration_s"]
    walls = [w for w, _ in kept]
    print(f"kchaos up {a.scenario}: ready in {boot:.1f} s")
    median = statistics.median(walls)
    print(f"kchaos run on the kept cluster, {a.runs} runs: wall median {median:.1f} s (min {min(walls):.1f}, "
          f"max {max(walls):.1f}), {median / workload:.2f}x its {workload:g} s workload, the check included")
    print("  phases (median s): " + ", ".join(
        f"{k} {statistics.median(r['phases'][k] for _, r in kept):.1f}" for k in kept[0][1]["phases"]))
    print(f"kchaos run on a cluster of its own: wall {fresh[0]:.1f} s, {fresh[0] / workload:.2f}x its workload")


if __name__ == "__main__":
    main()
