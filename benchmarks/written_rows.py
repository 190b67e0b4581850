"""Re-check run directories recorded before offsets.parquet had the coordinator's ``written`` rows:
how many regressions ``coordinator_regression`` finds that ``offset_regression`` does not.

    python -m benchmarks.written_rows OUT RUN_DIR [RUN_DIR ...]

Each run with a ``logs/group-coordinator.log`` is copied to OUT (the original is left as it was),
its ``written`` rows are built from that log as a run now records them
(``coordinator_log.written_offsets``, each group by its id on the cluster), and the copies are
checked together. Prints each run that regressed in either class, with its counts and whether
kchaos-F1's mechanism shows in its logs, then how many runs regressed in both, in the coordinator's
log only and in the acknowledged commits only.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq

from harness.checker import check_runs
from harness.history import OFFSETS, OFFSETS_WRITTEN_SCHEMA, read_run_config, write_table
from harness.run import coordinator_log


def with_written_rows(src: Path, out: Path) -> Path | None:
    """A copy of run ``src`` under ``out`` with its coordinator's written rows; None when the run has
    no coordinator log (no groups, or it was not read)."""
    log = src / "logs" / coordinator_log.FILE
    if not log.exists() or not (src / OFFSETS).exists():
        return None
    dst = out / f"{src.parent.parent.name}-{src.name}"
    if not dst.exists():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("report.html"))
    rows = [r for r in pq.read_table(dst / OFFSETS).to_pylist() if r["phase"] != "written"]
    entries = coordinator_log.parse(log.read_text())
    for g in read_run_config(dst).groups:
        rows += [{**r, "group": g.name} for r in coordinator_log.written_offsets(entries, g.id or g.name)]
    write_table(dst / OFFSETS, rows, OFFSETS_WRITTEN_SCHEMA)
    return dst


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    runs = [d for d in (with_written_rows(Path(a), out) for a in argv[1:]) if d is not None]
    tally = {"both": 0, "coordinator's log only": 0, "acknowledged commits only": 0}
    for d, v in zip(runs, check_runs(runs), strict=True):
        acked, written = v.anomalies.get("offset_regression", 0), v.anomalies.get("coordinator_regression", 0)
        if not (acked or written):
            continue
        f1 = any(k.issue == "kchaos-F1" and k.shown for k in v.known_issues)
        print(f"{d.name}: offset_regression {acked}, coordinator_regression {written}"
              + (", kchaos-F1's mechanism in its logs" if f1 else ""))
        where = "both" if acked and written else "coordinator's log only" if written else "acknowledged commits only"
        tally[where] += 1
    print(f"{len(runs)} runs; regressed: " + ", ".join(f"{k} {n}" for k, n in tally.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
