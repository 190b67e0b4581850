"""Where a run's time goes: one scenario run end to end, each phase timed, then its check.

Runs the scenario in this process (as `kchaos run` does), reads the phases it recorded in run.json,
then times `kchaos check` of the run directory in a fresh process (a cold Spark driver, as a user's
first check is). Prints every phase, the check, the wall time and its ratio to the scenario's
`duration_s`. Images must be built.

Usage: python benchmarks/run_phases.py [scenarios/acks1-leader-kill.toml] [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import logs, reaper, runner
from harness import scenario as scenario_mod


def one_run(path: Path, out: Path) -> dict[str, float]:
    s = scenario_mod.load(path)
    t0 = time.monotonic()
    res = runner.execute(s, out, scenario_file=str(path), log=lambda m: None)
    run_s = time.monotonic() - t0
    t1 = time.monotonic()
    subprocess.run([sys.executable, "-m", "harness", "check", str(res.path)], capture_output=True, check=False)
    check_s = time.monotonic() - t1
    phases = json.loads((res.path / "run.json").read_text())["phases"]
    return {**phases, "other": round(run_s - sum(phases.values()), 2), "check": round(check_s, 2),
            "wall": round(run_s + check_s, 2), "duration_s": s.duration_s}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", type=Path, default=Path("scenarios/acks1-leader-kill.toml"))
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    reaper.install_signal_handlers()
    logs.quiet_clients()  # client lines go to each run's logs/clients.log, as under the CLI
    with tempfile.TemporaryDirectory(prefix="kchaos-phases-") as d:
        for i in range(a.runs):
            fig = one_run(a.scenario, Path(d) / f"run{i}")
            wall, duration = fig.pop("wall"), fig.pop("duration_s")
            print(f"{a.scenario.stem} run {i + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in fig.items())
                  + f"; wall {wall:.1f} s for a {duration:g} s workload (ratio {wall / duration:.2f})")


if __name__ == "__main__":
    main()
