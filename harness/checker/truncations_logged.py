"""The replicas' own account of the records they removed, from the run's container logs, beside the
high watermarks the run's live readers saw.

A broker writes ``Truncating to offset N`` (Kafka's Log / UnifiedLog, at INFO) only when a replica
of its removes records: a follower dropping what its new leader does not have, or, with leader
epochs off (KIP-101's case), a restarted follower going back to the high watermark it had
checkpointed. Where the offset is below the highest high watermark a live reader had seen on that
partition before the line, records that had been committed were removed from that replica: what
a later election of that replica loses, and what the samples every 250 ms cannot show.

The brokers' logs of a kept cluster hold earlier runs' lines too: only the run's own topics are
read (each run on a kept cluster has a topic of its own).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.broker_log import Truncation, truncation
from harness.history import CONSUMED

LOGS = "logs"
_BROKER_LOG = re.compile(r"kafka-(?P<broker>\d+)\.log")


@dataclass(frozen=True)
class LoggedTruncation:
    """A replica's truncation, and the highest high watermark a live reader had seen on its
    partition before it (None: none had, or the brokers' clocks were moved so the two cannot be
    put in order)."""

    truncation: Truncation
    hw_seen: int | None

    @property
    def below_hw(self) -> bool:
        return self.hw_seen is not None and self.truncation.offset < self.hw_seen


@dataclass(frozen=True)
class HighWatermarks:
    """Per (topic, partition): the live reads' times, in order, and the highest high watermark
    seen up to each."""

    reads: dict[tuple[str, int], tuple[list[int], list[int]]]

    @classmethod
    def of(cls, rows: list[tuple[str, int, int, int]]) -> HighWatermarks:
        """From (topic, partition, poll_ts_ms, hw) of the live reads."""
        by: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for topic, partition, ts, hw in rows:
            by.setdefault((topic, partition), []).append((ts, hw))
        reads = {}
        for key, seen in by.items():
            seen.sort()
            times, highest, top = [], [], -1
            for ts, hw in seen:
                top = max(top, hw)
                times.append(ts)
                highest.append(top)
            reads[key] = (times, highest)
        return cls(reads)

    def before(self, topic: str, partition: int, ts_ms: int) -> int | None:
        """The highest high watermark a live read returned before ``ts_ms`` showed, or None."""
        times, highest = self.reads.get((topic, partition), ([], []))
        i = bisect.bisect_left(times, ts_ms)
        return highest[i - 1] if i else None


def live_high_watermarks(run_dir: Path) -> HighWatermarks:
    """The high watermarks the run's live readers saw (consumed.parquet's live rows with one)."""
    import pyarrow.parquet as pq

    path = run_dir / CONSUMED
    if not path.exists():
        return HighWatermarks({})
    cols = pq.read_table(path, columns=["phase", "topic", "partition", "poll_ts_ms", "hw"]).to_pydict()
    return HighWatermarks.of([(t, p, ts, hw) for ph, t, p, ts, hw in zip(
        cols["phase"], cols["topic"], cols["partition"], cols["poll_ts_ms"], cols["hw"], strict=True)
        if ph == "live" and hw is not None and ts is not None])


def logged_truncations(run_dir: Path, topics: list[str], clocks_moved: bool) -> list[LoggedTruncation]:
    """Every truncation the brokers logged of the run's topics, each with the high watermark seen
    before it (not judged where a fault moved the brokers' clocks)."""
    found: list[Truncation] = []
    for log in sorted((run_dir / LOGS).glob("kafka-*.log")):
        if (m := _BROKER_LOG.fullmatch(log.name)) is None:
            continue
        broker = int(m["broker"])
        with log.open(errors="replace") as lines:
            found += [t for line in lines if "Truncating to offset" in line
                      and (t := truncation(broker, line)) is not None and t.topic in topics]
    if not found:
        return []
    hws = HighWatermarks({}) if clocks_moved else live_high_watermarks(run_dir)
    found.sort(key=lambda t: t.ts_ms)
    return [LoggedTruncation(t, hws.before(t.topic, t.partition, t.ts_ms)) for t in found]
