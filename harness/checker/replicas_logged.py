"""The replicas' own account of what they removed and where they started leading, from the run's
container logs, beside what the run's clients saw: the high watermarks its live readers were given
and the offsets its producers were acknowledged at.

A broker writes ``Truncating to offset N`` (Kafka's Log / UnifiedLog, at INFO) only when a replica
of its removes records: a follower dropping what its new leader does not have, or, with leader
epochs off (KIP-101's case), a restarted follower going back to the high watermark it had
checkpointed. Where the offset is below the highest high watermark a live reader had seen on that
partition before the line, records that had been committed were removed from that replica.

A replica that becomes leader writes ``Leader TOPIC-P ... starts at leader epoch E from offset O``
(state.change.logger, at INFO): O is its log's end then. Where a producer had been acknowledged at
O or above before the line, the new leader lacked acknowledged records: a successor that lagged.

Both are what the samples every 250 ms cannot show. The brokers' logs of a kept cluster hold earlier
runs' lines too: only the run's own topics are read (each run on a kept cluster has a topic of its
own). Where a fault moved the brokers' clocks, a line's time cannot be put in order with the
clients' (the machine's clock): the comparisons are not made.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.broker_log import Truncation, log4j_epoch_ms, truncation
from harness.history import CONSUMED, PRODUCED

LOGS = "logs"
_BROKER_LOG = re.compile(r"kafka-(?P<broker>\d+)\.log")
_LEADS = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO .*\bLeader (?P<tp>\S+)-(?P<p>\d+)"
                    r"(?: with topic id \S+)? starts at leader epoch (?P<epoch>\d+) from offset (?P<offset>\d+)")


@dataclass(frozen=True)
class Highest:
    """Per (topic, partition): times in order, and the highest value seen up to each (a high
    watermark a live read returned, an offset a producer was acknowledged at)."""

    seen: dict[tuple[str, int], tuple[list[int], list[int]]]

    @classmethod
    def of(cls, rows: list[tuple[str, int, int, int]]) -> Highest:
        """From (topic, partition, time ms, value) rows."""
        by: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for topic, partition, ts, value in rows:
            by.setdefault((topic, partition), []).append((ts, value))
        seen = {}
        for key, pairs in by.items():
            pairs.sort()
            times, highest, top = [], [], -1
            for ts, value in pairs:
                top = max(top, value)
                times.append(ts)
                highest.append(top)
            seen[key] = (times, highest)
        return cls(seen)

    def before(self, topic: str, partition: int, ts_ms: int) -> int | None:
        """The highest value seen before ``ts_ms``, or None."""
        times, highest = self.seen.get((topic, partition), ([], []))
        i = bisect.bisect_left(times, ts_ms)
        return highest[i - 1] if i else None


NOTHING = Highest({})


def _highest(path: Path, value: str, ts: str, kept: tuple[str, object]) -> Highest:
    """Highest ``value`` by ``ts`` per (topic, partition) of a table's rows whose column ``kept[0]``
    is ``kept[1]`` and whose value and time are known; NOTHING without the table."""
    import pyarrow.parquet as pq

    if not path.exists():
        return NOTHING
    cols = pq.read_table(path, columns=["topic", "partition", ts, value, kept[0]]).to_pydict()
    return Highest.of([(t, p, at, v) for t, p, at, v, k in zip(
        cols["topic"], cols["partition"], cols[ts], cols[value], cols[kept[0]], strict=True)
        if k == kept[1] and v is not None and at is not None])


def live_high_watermarks(run_dir: Path) -> Highest:
    """The high watermarks the run's live readers were given (consumed.parquet's live rows with one)."""
    return _highest(run_dir / CONSUMED, "hw", "poll_ts_ms", ("phase", "live"))


def acknowledged_offsets(run_dir: Path) -> Highest:
    """The offsets the run's producers were acknowledged at, by when (produced.parquet's ok rows)."""
    return _highest(run_dir / PRODUCED, "offset", "ack_ts_ms", ("status", "ok"))


TRUNCATING, LEADING = "Truncating to offset", "starts at leader epoch"  # what the two accounts' lines hold


def broker_lines(run_dir: Path, needles: tuple[str, ...] = (TRUNCATING, LEADING)) -> Iterator[tuple[int, str]]:
    """(broker, line) of every broker log line of the run that holds one of ``needles``."""
    for log in sorted((run_dir / LOGS).glob("kafka-*.log")):
        if (m := _BROKER_LOG.fullmatch(log.name)) is None:
            continue
        with log.open(errors="replace") as lines:
            yield from ((int(m["broker"]), line) for line in lines if any(n in line for n in needles))


@dataclass(frozen=True)
class LoggedTruncation:
    """A replica's truncation, and the highest high watermark a live reader had seen on its
    partition before it (None: none had, or the brokers' clocks were moved)."""

    truncation: Truncation
    hw_seen: int | None

    @property
    def below_hw(self) -> bool:
        return self.hw_seen is not None and self.truncation.offset < self.hw_seen


def logged_truncations(run_dir: Path, topics: list[str], clocks_moved: bool,
                       lines: list[tuple[int, str]] | None = None) -> list[LoggedTruncation]:
    """Every truncation the brokers logged of the run's topics, in time order, each with the high
    watermark seen before it (``lines``: the brokers' lines already read, else they are read)."""
    lines = lines if lines is not None else list(broker_lines(run_dir, (TRUNCATING,)))
    found = sorted((t for b, line in lines if TRUNCATING in line
                    if (t := truncation(b, line)) is not None and t.topic in topics), key=lambda t: t.ts_ms)
    if not found:
        return []
    hws = NOTHING if clocks_moved else live_high_watermarks(run_dir)
    return [LoggedTruncation(t, hws.before(t.topic, t.partition, t.ts_ms)) for t in found]


@dataclass(frozen=True)
class LoggedLeadership:
    """A replica that started leading: broker, topic, partition, leader epoch, its log's end then,
    when, and the highest offset a producer had been acknowledged at on the partition before
    (None: none had, or the brokers' clocks were moved)."""

    broker: int
    topic: str
    partition: int
    epoch: int
    start_offset: int
    ts_ms: int
    acked_before: int | None

    @property
    def lagging(self) -> bool:
        """Whether it lacked records a producer had been acknowledged for."""
        return self.acked_before is not None and self.acked_before >= self.start_offset


def logged_leaderships(run_dir: Path, topics: list[str], clocks_moved: bool,
                       lines: list[tuple[int, str]] | None = None) -> list[LoggedLeadership]:
    """Every replica of the run's topics that started leading, in time order, with what had been
    acknowledged on its partition before (``lines``: the brokers' lines already read, else they are read)."""
    lines = lines if lines is not None else list(broker_lines(run_dir, (LEADING,)))
    starts = sorted(((b, m) for b, line in lines if LEADING in line
                     if (m := _LEADS.match(line)) is not None and m["tp"] in topics),
                    key=lambda bm: bm[1]["ts"])
    if not starts:
        return []
    acked = NOTHING if clocks_moved else acknowledged_offsets(run_dir)
    out = []
    for b, m in starts:
        ts, p = log4j_epoch_ms(m["ts"]), int(m["p"])
        out.append(LoggedLeadership(b, m["tp"], p, int(m["epoch"]), int(m["offset"]), ts,
                                    acked.before(m["tp"], p, ts)))
    return out
