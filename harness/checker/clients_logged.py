"""The clients' own account of their producers' epochs, from the run's logs/clients.log, and of their
groups' commits, from offsets.parquet.

A producer id's epoch moves on when an idempotent producer bumps it after a failure (librdkafka's
partition drain, KIP-360's bump in Apache Kafka's Java client) or when a transactional producer's
new instance fences the old: what librdkafka#4953's duplicates and several transaction anomalies
need, and what no broker sample shows. Each library's line for it is its registry record's
``epoch_bumped`` (harness/clients/registry.py); a library without one is not read.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from harness.clients.registry import LIBRARIES
from harness.history import OFFSETS

CLIENTS_LOG = Path("logs") / "clients.log"
_STAMP = re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
_BUMPED = re.compile("|".join(f"(?:{lib.epoch_bumped})" for lib in LIBRARIES.values() if lib.epoch_bumped))


def epoch_bumps(run_dir: Path) -> list[int]:
    """When (epoch ms, the machine's clock that wrote clients.log) a producer of the run took a new
    epoch, as its library's log says; [] without a clients.log."""
    path = run_dir / CLIENTS_LOG
    if not path.exists():
        return []
    with path.open(errors="replace") as lines:
        return [_epoch_ms(m["stamp"]) for line in lines if _BUMPED.search(line) and (m := _STAMP.match(line))]


def _epoch_ms(stamp: str) -> int:
    """clients.log's timestamp (Python's logging, the machine's local time) in epoch milliseconds."""
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)


def group_commits(run_dir: Path) -> list[tuple[str, int, int]]:
    """(group, partition, when acknowledged) of every commit that took effect during the run
    (offsets.parquet's live rows; none without the table)."""
    import pyarrow.parquet as pq

    path = run_dir / OFFSETS
    if not path.exists():
        return []
    cols = pq.read_table(path, columns=["group", "partition", "ts_ms", "phase"]).to_pydict()
    return [(g, p, ts) for g, p, ts, ph in zip(cols["group"], cols["partition"], cols["ts_ms"], cols["phase"],
                                                strict=True) if ph == "live"]
