"""``kchaos hunt --parallel N``: N shards of one hunt at once on one machine, each a ``kchaos hunt
--shard K/N`` process with a cluster of its own, merged when they end (merge.py).

Shards rather than threads: each process owns its cluster, its watchdog (reaper.py) and its
members, exactly as a hunt on its own does, so N at once clean up as one does, killed or not; and
the same command again resumes every shard. The shards live in ``OUT/shards/K-of-N``; ``OUT``
holds the merged account.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from pathlib import Path

from harness.cluster import reaper
from harness.hunt.loop import HuntOptions


def shard_dir(out: Path, k: int, n: int) -> Path:
    return out / "shards" / f"{k}-of-{n}"


def shard_commands(opts: HuntOptions, n: int) -> list[list[str]]:
    """The ``kchaos hunt`` command of each of ``n`` shards: the same hunt, ``--shard K/N``, its own
    directory. ``--runs R`` is the whole hunt's: each shard draws ceil(R/N); ``--budget`` is each
    shard's wall time, as it is the hunt's."""
    base = [sys.executable, "-m", "harness", "hunt", *opts.scenarios, "--seed", str(opts.seed),
            "--confirm", str(opts.confirm), "--shrink-runs", str(opts.shrink_runs)]
    if opts.measure is not None:
        base += ["--measure", str(opts.measure)]
    if opts.budget_s is not None:
        base += ["--budget", f"{opts.budget_s:g}"]
    if opts.runs is not None:
        base += ["--runs", str(math.ceil(opts.runs / n))]
    if opts.goal.anomalies is not None:
        base += ["--anomaly", ",".join(sorted(opts.goal.anomalies))]
    for flag, values in (("--versions", opts.versions), ("--modes", opts.modes), ("--set", opts.sets),
                         ("--clients", opts.clients)):
        for v in values:
            base += [flag, v]
    if opts.spark_master:
        base += ["--spark-master", opts.spark_master]
    if opts.guide != "precursors":
        base += ["--guide", opts.guide]
    if opts.until_found:
        base += ["--until-found"]
    if opts.fresh_findings:
        base += ["--fresh-findings"]
    return [[*base, "--shard", f"{k}/{n}", "--out", str(shard_dir(opts.out, k, n))] for k in range(1, n + 1)]


def run_shards(commands: list[list[str]], cwd: Path | None = None) -> list[int]:
    """Run every shard at once and wait for all; a Ctrl-C or SIGTERM is passed on to each (each
    stops where it stands, keeps what it found and removes its cluster). Their exit codes."""
    procs = [subprocess.Popen(c, cwd=cwd, preexec_fn=reaper.die_with_parent) for c in commands]
    try:
        return [p.wait() for p in procs]
    except BaseException:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            p.wait()
        raise
