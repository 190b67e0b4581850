"""A broker's own log: the lines kchaos reads in it, from the run directory after a run or live
while it runs.

Only lines every version kchaos runs writes the same way are read. The live follower exists for
triggers: a fault that fires when a broker says something (a replica truncating its log) must see
the line within a poll, not after the run.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

# Kafka's Log / UnifiedLog: "[2026-11-26 10:00:00,123] INFO [Log partition=chaos-0,
# dir=/var/lib/kafka/data] Truncating to offset 1234 (kafka.log.Log)". The line is written only when
# records were removed ("has no effect" otherwise).
TRUNCATION = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ \[(?:Unified)?Log "
                        r"partition=(?P<tp>\S+)-(?P<p>\d+), dir=[^\]]*\] Truncating to offset (?P<offset>\d+)")
RECONNECT_S = 0.1  # how often a stopped broker's container is looked at until it runs again


@dataclass(frozen=True)
class Truncation:
    """A replica removed its records from ``offset`` on: broker, topic, partition, when (epoch ms)."""

    broker: int
    topic: str
    partition: int
    offset: int
    ts_ms: int


def truncation(broker: int, line: str) -> Truncation | None:
    """The truncation a broker's log line records, or None."""
    t = TRUNCATION.match(line)
    if t is None:
        return None
    return Truncation(broker, t["tp"], int(t["p"]), int(t["offset"]), log4j_epoch_ms(t["ts"]))


def log4j_epoch_ms(stamp: str) -> int:
    """A log4j timestamp of a kchaos container (UTC) in epoch milliseconds."""
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp() * 1000)


def engine_epoch_s(stamp: str) -> float:
    """The engine's own timestamp of a log line (RFC 3339 with nanoseconds) in epoch seconds: the
    host's clock, whatever clock the broker itself stamps its lines with."""
    whole, _, frac = stamp.rstrip("Z").partition(".")
    return datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp() + float(f"0.{frac or 0}")


class TruncationFollower:
    """Follows brokers' logs from now on and keeps every truncation they write.

    One thread a broker streams its container's log as the engine writes it (``docker logs
    --follow``). A stopped broker ends its stream; the thread waits for it to run again and goes on
    from the last line it had, so a truncation written as a restarted broker becomes a follower is
    seen. Lines the engine stamped before the follower started are not kept."""

    def __init__(self, containers: dict[int, object]):
        self._containers = containers  # broker id -> its docker container
        self._since = time.time()
        self._seen: list[Truncation] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._streams: dict[int, object] = {}
        self._threads = [threading.Thread(target=self._follow, args=(b,), name=f"log-follow-{b}", daemon=True)
                         for b in containers]
        for t in self._threads:
            t.start()

    def seen(self) -> list[Truncation]:
        """Every truncation written since the follower started, in the order they were read."""
        with self._lock:
            return list(self._seen)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            streams = list(self._streams.values())
        for s in streams:
            with contextlib.suppress(Exception):  # already closed by its container's stop
                s.close()  # type: ignore[attr-defined]
        for t in self._threads:
            t.join(timeout=5)

    def _follow(self, broker: int) -> None:
        container, last = self._containers[broker], self._since
        while not self._stop.is_set():
            try:
                container.reload()  # type: ignore[attr-defined]
                if container.status != "running":  # type: ignore[attr-defined]
                    self._stop.wait(RECONNECT_S)
                    continue
                stream = container.logs(stream=True, follow=True, timestamps=True, since=last)  # type: ignore[attr-defined]
                with self._lock:
                    self._streams[broker] = stream
                if self._stop.is_set():
                    break
                last = self._read(broker, stream, last)
            except Exception:  # the engine dropped the stream, or the container is being replaced
                self._stop.wait(RECONNECT_S)

    def _read(self, broker: int, stream, last: float) -> float:
        """Keep the truncations of one stream until it ends; the engine time of the last line read."""
        pending = b""
        for chunk in stream:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                stamp, _, text = raw.decode(errors="replace").partition(" ")
                at = engine_epoch_s(stamp)
                if at <= last:  # read before the stream was opened again
                    continue
                last = at
                t = truncation(broker, text)
                if t is not None:
                    with self._lock:
                        self._seen.append(t)
            if self._stop.is_set():
                break
        return last
