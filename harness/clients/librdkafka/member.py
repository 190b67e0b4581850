"""The loop inside a consumer-group member's process (``python -m harness.clients.librdkafka.member CONFIG``):
poll, write a JSON line per record returned, per commit acknowledged or refused and per assignment
change, and commit as the group's spec says. groups.py starts, faults and reads these processes.

It imports nothing of the harness but this file, so a member (re)starts in a fraction of a second
even on a loaded machine: a member a fault restarted must rejoin its group while the run goes on.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import IO

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

READ_BATCH = 100


def now_ms() -> int:
    return int(time.time() * 1000)


class MemberProcess:
    """The loop inside a member's process: poll, write what came back, commit as the group says."""

    def __init__(self, cfg: dict, out: IO[str]):
        self.cfg, self.out = cfg, out
        self.commit = cfg["commit"]
        self.seq = self.generation = 0
        self.reader = cfg["consumer"]  # the consumer column: a new name each time the group moves it back
        self.returned_from: set[int] = set()  # partitions this process has returned records of
        self.uncommitted, self.last_commit = 0, time.monotonic()
        self.stopping = self.freezing = False
        conf = dict(cfg["conf"])
        if self.commit != "sync":  # acknowledgements of auto and async commits arrive here
            conf["on_commit"] = self._on_commit
        self.consumer = Consumer(conf)

    def line(self, **row) -> None:
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()

    def _parts(self, parts: list[TopicPartition]) -> list[int]:
        return sorted(tp.partition for tp in parts)

    def _on_assign(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        """A partition this process returned records of comes back at the group's committed offset,
        which may be below what it returned: its reads go on under a new reader name (``g-1/2``), as
        the copier's after a rewind, since nonmonotonic_poll counts a client that goes back on its own."""
        self.generation += 1
        if {tp.partition for tp in parts} & self.returned_from:
            self.reader = f"{self.cfg['consumer']}/{self.generation}"
        self.line(t="rebalance", kind="assign", partitions=self._parts(parts), generation=self.generation,
                  ts_ms=now_ms())

    def _on_revoke(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        if self.commit != "auto":  # what was processed is committed before the partitions go
            self._commit_sync()
        self.line(t="rebalance", kind="revoke", partitions=self._parts(parts), generation=self.generation,
                  ts_ms=now_ms())

    def _on_lost(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        self.line(t="rebalance", kind="lost", partitions=self._parts(parts), generation=self.generation,
                  ts_ms=now_ms())

    def _on_commit(self, err: KafkaError | None, parts: list[TopicPartition]) -> None:
        self._acknowledged(err, parts)

    def _acknowledged(self, err: KafkaError | None, parts: list[TopicPartition]) -> None:
        ts = now_ms()
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return  # nothing new to commit
        if err is not None:
            self.line(t="commit_failed", error=err.name(), generation=self.generation, ts_ms=ts)
            return
        for tp in parts:
            if tp.error is None and tp.offset >= 0:
                self.line(t="commit", topic=tp.topic, partition=tp.partition, offset=tp.offset, ts_ms=ts)

    def _commit_sync(self) -> None:
        try:
            self._acknowledged(None, self.consumer.commit(asynchronous=False) or [])
        except KafkaException as e:
            self._acknowledged(e.args[0], [])
        self.uncommitted, self.last_commit = 0, time.monotonic()

    def _maybe_commit(self) -> None:
        if self.commit == "auto" or not self.uncommitted:
            return
        if self.uncommitted < self.cfg["every_records"] and \
                time.monotonic() - self.last_commit < self.cfg["every_ms"] / 1000:
            return
        if self.commit == "sync":
            self._commit_sync()
            return
        try:
            self.consumer.commit(asynchronous=True)
        except KafkaException as e:
            self._acknowledged(e.args[0], [])
        self.uncommitted, self.last_commit = 0, time.monotonic()

    def _record(self, m) -> None:
        _, hw = self.consumer.get_watermark_offsets(TopicPartition(m.topic(), m.partition()), cached=True)
        self.line(t="read", consumer=self.reader, seq=self.seq, topic=m.topic(), partition=m.partition(),
                  offset=m.offset(), value=m.value().decode(errors="replace") if m.value() is not None else "",
                  poll_ts_ms=now_ms(), hw=hw if hw is not None and hw >= 0 else None, phase="live",
                  isolation=self.cfg["conf"]["isolation.level"], group=self.cfg["conf"]["group.id"],
                  generation=self.generation)
        self.seq += 1
        self.returned_from.add(m.partition())

    def run(self) -> None:
        self.consumer.subscribe([self.cfg["topic"]], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)
        while not self.stopping:
            for m in self.consumer.consume(READ_BATCH, timeout=0.2):
                if m.error() is None:
                    self._record(m)
                    self.uncommitted += 1
            if self.freezing:  # client_pause: stop here, records processed and not yet committed
                self.freezing = False
                os.kill(os.getpid(), signal.SIGSTOP)
            self._maybe_commit()  # after a freeze: the zombie's commit, sent with what it last knew
        if self.commit != "auto":
            self._commit_sync()
        self.consumer.close()  # a clean leave (auto-commit commits on close)


def main(cfg_path: str) -> None:
    cfg = json.loads(Path(cfg_path).read_text())
    with open(cfg["out"], "a") as out:
        member = MemberProcess(cfg, out)
        signal.signal(signal.SIGTERM, lambda *_: setattr(member, "stopping", True))
        signal.signal(signal.SIGUSR1, lambda *_: setattr(member, "freezing", True))
        out.write(json.dumps({"t": "started", "ts_ms": now_ms()}) + "\n")
        out.flush()
        member.run()


if __name__ == "__main__" and len(sys.argv) == 2:
    main(sys.argv[1])
