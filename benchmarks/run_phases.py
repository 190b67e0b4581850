"""Where a run's time goes: one scenario run end to end, each phase timed, then its check on a cold
embedded driver and on the warm server; and the quick matrix's wall time.

The scenario runs in this process as `kchaos run` does (the warm Spark server is started while the
cluster boots, unless one is up). Then three checks of the run directory, each in a fresh process
as a user's are: `kchaos check --spark-master local[*]` (a cold embedded driver), and `kchaos check`
twice on the warm server (the first is the check `kchaos run` would do). Prints every phase, the
checks, the wall time of run plus warm check and its ratio to the scenario's `duration_s`. With
`--matrix`, also times `kchaos matrix --quick` in a fresh process (its runs and its check). Images
must be built.

Usage: python benchmarks/run_phases.py [scenarios/acks1-leader-kill.toml] [--runs 1] [--matrix]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import checker
from harness import scenario as scenario_mod
from harness.cluster import reaper
from harness.run import logs, runner


def timed_check(run_dir: Path, *args: str) -> float:
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "harness", "check", *args, str(run_dir)], capture_output=True, check=False)
    return round(time.monotonic() - t, 2)


def one_run(path: Path, out: Path) -> dict[str, float]:
    s = scenario_mod.load(path)
    starting = checker.prestart()  # as `kchaos run` does
    t0 = time.monotonic()
    res = runner.execute(s, out, scenario_file=str(path), log=lambda m: None)
    run_s = time.monotonic() - t0
    waited = time.monotonic()
    starting.join()
    server_wait = round(time.monotonic() - waited, 2)
    phases = json.loads((res.path / "run.json").read_text())["phases"]
    fig = {**phases, "other": round(run_s - sum(phases.values()), 2), "waiting for the server": server_wait}
    fig["warm check"] = timed_check(res.path)
    fig["warm check again"] = timed_check(res.path)
    fig["cold embedded check"] = timed_check(res.path, "--spark-master", "local[*]")
    fig["wall"] = round(run_s + server_wait + fig["warm check"], 2)
    return {**fig, "duration_s": s.duration_s}


def quick_matrix(out: Path) -> tuple[float, float]:
    """Seconds of `kchaos matrix --quick`, and of its check and report (from its own log lines)."""
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "harness", "matrix", "--quick", "--out", str(out)],
                       capture_output=True, text=True, check=False)
    wall = time.monotonic() - t
    stamps = [(m.group(1), line) for line in p.stdout.splitlines() if (m := re.match(r"(\d\d:\d\d:\d\d) ", line))]
    check_at = next((ts for ts, line in stamps if "checking" in line), None)
    if check_at is None or not stamps:
        return round(wall, 1), float("nan")
    return round(wall, 1), float(_seconds(stamps[-1][0]) - _seconds(check_at))


def _seconds(hms: str) -> int:
    h, m, s = map(int, hms.split(":"))
    return h * 3600 + m * 60 + s


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", type=Path, default=Path("scenarios/acks1-leader-kill.toml"))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--matrix", action="store_true", help="also time `kchaos matrix --quick`")
    a = ap.parse_args()
    reaper.install_signal_handlers()
    logs.quiet_clients()  # client lines go to each run's logs/clients.log, as under the CLI
    with tempfile.TemporaryDirectory(prefix="kchaos-phases-") as d:
        for i in range(a.runs):
            fig = one_run(a.scenario, Path(d) / f"run{i}")
            wall, duration = fig.pop("wall"), fig.pop("duration_s")
            print(f"{a.scenario.stem} run {i + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in fig.items())
                  + f"; wall (run and warm check) {wall:.1f} s for a {duration:g} s workload (ratio "
                  f"{wall / duration:.2f}; target <= 2)", flush=True)
        if a.matrix:
            wall, check = quick_matrix(Path(d) / "matrix")
            print(f"kchaos matrix --quick: {wall:.1f} s, of which check and report {check:.0f} s (target < 120 s)")


if __name__ == "__main__":
    main()
