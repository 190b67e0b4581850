"""Build contract-valid run directories in tests, with anomalies planted on purpose."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from harness.history import (
    CONSUMED,
    CONSUMED_SCHEMA,
    CONSUMED_V2_SCHEMA,
    DELIVERIES,
    DELIVERIES_SCHEMA,
    OFFSETS,
    OFFSETS_WRITTEN_SCHEMA,
    PRODUCED,
    PRODUCED_SCHEMA,
    PRODUCED_V2_SCHEMA,
    REPLICAS,
    REPLICAS_SCHEMA,
    RUN_JSON,
    SHARE_ACKS,
    SHARE_ACKS_SCHEMA,
    TXNS,
    TXNS_SCHEMA,
    write_table,
)

V2_PRODUCED = ("txn", "source")
V2_CONSUMED = ("isolation", "group", "generation")


class History:
    """A run directory under construction. Sequence numbers are assigned in call order."""

    def __init__(self, topic: str = "t", run: dict | None = None):
        self.topic = topic
        self.produced: list[dict] = []
        self.consumed: list[dict] = []
        self.replicas: list[dict] = []
        self.events: list[dict] = []
        self.txns: list[dict] = []
        self.offsets: list[dict] = []
        self.deliveries: list[dict] = []
        self.share_acks: list[dict] = []
        self.logs: dict[str, str] = {}  # logs/NAME -> its text: what the brokers and clients logged
        self.run = run if run is not None else {
            "run_id": "test",
            "kafka_version": "3.9.1",
            "topics": [{"name": topic, "replication_factor": 3,
                        "config": {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}}],
            "producers": [{"name": "p0", "acks": "all", "idempotence": True, "topic": topic}],
        }
        self._pseq: dict[str, int] = defaultdict(int)
        self._cseq: dict[str, int] = defaultdict(int)
        self.ts = 1_700_000_000_000

    def send(self, value: str, offset: int | None, status: str = "ok", partition: int = 0, producer: str = "p0",
             acks: str = "all", error: str | None = None, ts: int | None = None, txn: str | None = None,
             source: str | None = None) -> History:
        ts = self.ts if ts is None else ts
        self.ts = ts + 10
        self.produced.append({
            "value": value, "producer": producer, "seq": self._pseq[producer], "topic": self.topic,
            "partition": partition, "acks": acks, "status": status,
            "offset": offset if status == "ok" and acks != "0" else None,
            "send_ts_ms": ts, "ack_ts_ms": ts + 5 if status == "ok" else None, "error": error,
            "txn": txn, "source": source,
        })
        self._pseq[producer] += 1
        return self

    def read(self, value: str, offset: int, phase: str = "live", partition: int = 0, consumer: str = "c0",
             hw: int | None = None, isolation: str | None = None, group: str | None = None,
             generation: int | None = None, ts: int | None = None) -> History:
        self.consumed.append({
            "consumer": consumer, "seq": self._cseq[consumer], "topic": self.topic, "partition": partition,
            "offset": offset, "value": value, "poll_ts_ms": self.ts if ts is None else ts,
            "hw": hw if hw is not None else offset + 1, "phase": phase,
            "isolation": isolation, "group": group, "generation": generation,
        })
        self._cseq[consumer] += 1
        return self

    def replica(self, broker: int, value: str, offset: int, partition: int = 0) -> History:
        self.replicas.append({"broker": broker, "topic": self.topic, "partition": partition, "offset": offset,
                              "value": value})
        return self

    def clean(self, n: int, partition: int = 0, brokers: tuple[int, ...] = (1, 2, 3)) -> History:
        """n acknowledged sends read live, read in the final log, on every replica."""
        for i in range(n):
            v = f"v{partition}-{i}"
            self.send(v, i, partition=partition)
            self.read(v, i, partition=partition, hw=i + 1)
        self.final_from_replica(partition, brokers)
        return self

    def final_from_replica(self, partition: int, brokers: tuple[int, ...]) -> None:
        for r in self.produced:
            if r["partition"] == partition and r["status"] == "ok" and r["offset"] is not None:
                for b in brokers:
                    self.replica(b, r["value"], r["offset"], partition)
                self.read(r["value"], r["offset"], phase="final", partition=partition, consumer="final")

    def txn(self, txn: str, outcome: str, producer: str = "p0", begin: int | None = None, commit: int | None = None,
            end: int | None = None) -> History:
        """A transaction's row; commit defaults to after every send so far, for committed ones."""
        begin = self.ts - 100 if begin is None else begin
        if commit is None and outcome == "committed":
            commit = self.ts + 1
        self.txns.append({"txn": txn, "producer": producer, "outcome": outcome, "begin_ts_ms": begin,
                          "commit_ts_ms": commit, "end_ts_ms": end if end is not None else (commit or self.ts) + 5})
        return self

    def commit(self, group: str, offset: int, partition: int = 0, phase: str = "live",
               ts: int | None = None, log_offset: int | None = None) -> History:
        """A row of offsets.parquet for the current topic (``log_offset``: a "written" row's place in
        the coordinator's log)."""
        self.offsets.append({"group": group, "topic": self.topic, "partition": partition, "offset": offset,
                             "ts_ms": self.ts if ts is None else ts, "phase": phase, "log_offset": log_offset})
        self.ts += 1
        return self

    def leader(self, partition: int, broker: int, ts: int | None = None) -> History:
        """A state sample of events.jsonl: ``partition`` of the topic led by ``broker``."""
        self.events.append({"type": "state", "ts_ms": self.ts if ts is None else ts, "brokers": [1, 2, 3],
                            "partitions": [{"partition": partition, "leader": broker, "replicas": [1, 2, 3],
                                            "isr": [1, 2, 3]}]})
        return self

    def deliver(self, group: str, member: str, value: str, offset: int, delivery_count: int | None = 1,
                partition: int = 0, ts: int | None = None) -> History:
        """A row of deliveries.parquet: ``member`` of share group ``group`` was given the record."""
        ts = self.ts if ts is None else ts
        self.ts = ts + 10
        self.deliveries.append({"group": group, "member": member, "topic": self.topic, "partition": partition,
                                "offset": offset, "value": value, "delivery_count": delivery_count, "ts_ms": ts})
        return self

    def ack(self, group: str, member: str, value: str, offset: int, type_: str = "accept", outcome: str = "ok",
            partition: int = 0, ts: int | None = None) -> History:
        """A row of share_acks.parquet: the member's acknowledgement of the record and how it ended."""
        ts = self.ts if ts is None else ts
        self.ts = ts + 10
        self.share_acks.append({"group": group, "member": member, "topic": self.topic, "partition": partition,
                                "offset": offset, "value": value, "type": type_, "outcome": outcome,
                                "error": None if outcome == "ok" else "InvalidRecordStateException", "ts_ms": ts})
        return self

    def recreate(self, gap_ms: int = 500, recreated: str = "recreated") -> History:
        """The topic deleted now and served again ``gap_ms`` later (recreate_topic's fault record), the
        clock moved past it: later sends are the new topic's."""
        deleted = self.ts
        self.ts = deleted + gap_ms
        self.events.append({"type": "fault", "kind": "recreate_topic", "name": "recreate", "target": "leader",
                            "start_ms": deleted, "end_ms": self.ts, "topic": self.topic, "deleted_ms": deleted,
                            "created_ms": self.ts if recreated == "recreated" else None, "recreated": recreated})
        self.ts += 10
        return self

    def recreations(self) -> dict[str, tuple[int, int | None]]:
        """Per topic, its last recreation in the events: (deletion asked, new topic served or None)."""
        return {e["topic"]: (e["deleted_ms"], e["created_ms"]) for e in self.events
                if e.get("type") == "fault" and e.get("kind") == "recreate_topic"}

    def reference(self) -> dict[str, int]:
        """The reference implementation's counts of this history."""
        from harness.checker.anomaly import reference_counts
        from harness.checker.reference import Tables

        return reference_counts(Tables(self.produced, self.consumed, self.replicas, self.txns, self.offsets,
                                       self.run.get("copiers") or [], self.deliveries, self.share_acks,
                                       self.run.get("share_groups") or [], self.recreations()))

    @property
    def v2(self) -> bool:
        return bool(self.txns or self.offsets or self.run.get("copiers") or self.deliveries
                    or self.share_acks) or any(
            r.get(c) is not None for r in self.produced for c in V2_PRODUCED) or any(
            r.get(c) is not None for r in self.consumed for c in V2_CONSUMED)

    def write(self, path: Path) -> Path:
        """The run directory: v1 files unless the history uses anything of v2."""
        path.mkdir(parents=True, exist_ok=True)
        v2 = self.v2
        write_table(path / PRODUCED, self.produced, PRODUCED_V2_SCHEMA if v2 else PRODUCED_SCHEMA)
        write_table(path / CONSUMED, self.consumed, CONSUMED_V2_SCHEMA if v2 else CONSUMED_SCHEMA)
        write_table(path / REPLICAS, self.replicas, REPLICAS_SCHEMA)
        if self.txns:
            write_table(path / TXNS, self.txns, TXNS_SCHEMA)
        if self.offsets:
            write_table(path / OFFSETS, self.offsets, OFFSETS_WRITTEN_SCHEMA)
        if self.deliveries:
            write_table(path / DELIVERIES, self.deliveries, DELIVERIES_SCHEMA)
        if self.share_acks:
            write_table(path / SHARE_ACKS, self.share_acks, SHARE_ACKS_SCHEMA)
        (path / RUN_JSON).write_text(json.dumps(self.run))
        if self.events:
            (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in self.events))
        for name, text in self.logs.items():  # a bare name is under logs/; "members/g/g-1.log" is a member's own
            target = path / name if "/" in name else path / "logs" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return path
