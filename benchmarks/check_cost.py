"""What one check of a small run costs on the warm Spark server: its wall time, the CPU seconds of the
server's JVM and of this process, and the Spark Connect calls it made (each analysis, such as a
frame's schema, is a round trip and an analysis of the frame's whole plan on the server).

    python benchmarks/check_cost.py RUN_DIR [RUN_DIR ...] [--repeat 3] [--tree DIR]

Each repeat checks fresh copies of the run directories (no verdict.json), all in one call, as a
test or a hunt does. ``--tree DIR`` takes the harness from another checkout (a git worktree of an
older commit) so that two trees are measured on the same runs minutes apart. The warm server is
started first if it is not up, so no repeat pays for its start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid``, its waited-for children included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / HZ


def count_connect_calls(calls: Counter) -> None:
    """Count each Spark Connect analysis (by its kind: schema, persist, ...) and execution in ``calls``."""
    from pyspark.sql.connect.client.core import SparkConnectClient

    def counted(name: str, original: Callable) -> Callable:
        def call(self, *args, **kwargs):
            calls[f"analyze {kwargs.get('method', '')}".strip() if name == "_analyze" else "execute"] += 1
            return original(self, *args, **kwargs)
        return call

    for name in ("_analyze", "_execute_and_fetch"):
        setattr(SparkConnectClient, name, counted(name, getattr(SparkConnectClient, name)))


def fresh_copies(runs: list[Path]) -> list[Path]:
    """Copies of ``runs`` without their verdicts, in a directory of their own."""
    root = Path(tempfile.mkdtemp(prefix="kchaos-check-cost-"))
    copies = []
    for i, run in enumerate(runs):
        copy = root / f"{i}-{run.name}"
        shutil.copytree(run, copy)
        (copy / "verdict.json").unlink(missing_ok=True)
        copies.append(copy)
    return copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+", help="run directories")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", type=Path, help="the checkout whose harness checks (default: this one)")
    args = ap.parse_args()
    sys.path.insert(0, str((args.tree or Path(__file__).resolve().parent.parent).resolve()))
    from harness.checker import check_runs, warm

    calls: Counter = Counter()
    count_connect_calls(calls)
    warm_up = fresh_copies(args.runs)
    check_runs(warm_up)  # the warm server up, and this process's first plans made
    shutil.rmtree(warm_up[0].parent, ignore_errors=True)
    server = warm.read_info()
    if server is None or not warm.alive(server):
        sys.exit("the checks ran on no warm Spark server (is KCHAOS_SPARK_MASTER set?)")
    for i in range(args.repeat):
        copies = fresh_copies(args.runs)
        calls.clear()
        spark, own, t0 = cpu_seconds(server.pid), time.process_time(), time.monotonic()
        check_runs(copies)
        wall = time.monotonic() - t0
        spark, own = cpu_seconds(server.pid) - spark, time.process_time() - own
        shutil.rmtree(copies[0].parent, ignore_errors=True)
        made = ", ".join(f"{n} {kind}" for kind, n in sorted(calls.items()))
        print(f"check {i + 1}: {wall:.1f} s wall, Spark {spark:.1f} CPU s, this process {own:.1f} CPU s; calls: {made}")


if __name__ == "__main__":
    main()
