"""Precursors: what a run's brokers did that is one step short of a broken promise.

A run that passes may still have come close: with leader epochs off, a follower that truncates to
its own high watermark drops records the leader has already acknowledged (its HW lags the
leader's by a fetch), and those records are lost only if that follower is elected before it fetches
them again (KIP-101). A uniform draw rarely lines up the two; a draw that showed the first step is
a schedule worth building on (harness/hunt/guide.py). Each precursor is read from the run's own
files after it ran: the brokers' logs (``logs/kafka-N.log``) and ``produced.parquet``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from harness import history
from harness.cluster.broker_log import Truncation, truncation

BROKER_LOG = re.compile(r"^kafka-(\d+)\.log$")


@dataclass(frozen=True)
class Precursor:
    """A replica dropped records the producer had been told were written (``acknowledged``), at
    ``at_s`` seconds into the workload: the first half of a loss by truncation."""

    broker: int
    partition: int
    at_s: float
    acknowledged: int


def truncations(run_dir: Path, topic: str) -> list[Truncation]:
    """Every truncation the brokers' logs record for ``topic``'s partitions, in log order."""
    out = []
    logs = run_dir / "logs"
    for path in sorted(logs.iterdir()) if logs.is_dir() else []:
        m = BROKER_LOG.match(path.name)
        if not m:
            continue
        for line in path.read_text(errors="replace").splitlines():
            t = truncation(int(m[1]), line)
            if t is not None and t.topic == topic:
                out.append(t)
    return out


def acknowledged_truncated(produced: dict[str, list], cuts: list[Truncation], start_ms: int) -> list[Precursor]:
    """The truncations that removed an acknowledged record: one whose acknowledgement arrived before
    the truncation, at an offset at or past where the replica truncated. ``produced`` holds the
    history's columns; ``start_ms`` is the workload's start."""
    out = []
    for cut in cuts:
        n = sum(1 for topic, part, status, offset, ack in zip(
            produced["topic"], produced["partition"], produced["status"], produced["offset"], produced["ack_ts_ms"],
            strict=True)
            if topic == cut.topic and part == cut.partition and status == "ok" and offset is not None
            and offset >= cut.offset and ack is not None and ack <= cut.ts_ms)
        if n:
            out.append(Precursor(cut.broker, cut.partition, round((cut.ts_ms - start_ms) / 1000, 1), n))
    return out


def read(run_dir: Path, topic: str) -> list[Precursor]:
    """The precursors of one finished run directory on ``topic`` (none when it kept no broker logs,
    history or workload start)."""
    cuts = truncations(run_dir, topic)
    path = run_dir / history.PRODUCED
    if not cuts or not path.exists() or not (run_dir / history.RUN_JSON).exists():
        return []
    start_ms = history.read_run_config(run_dir).workload.start_ms
    if start_ms is None:
        return []
    cols = ["topic", "partition", "status", "offset", "ack_ts_ms"]
    return acknowledged_truncated(pq.read_table(path, columns=cols).to_pydict(), cuts, start_ms)
