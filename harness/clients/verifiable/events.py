"""Kafka's verifiable-client protocol read into the history contract: the JSON events a
VerifiableProducer or VerifiableConsumer prints on its stdout (``{"timestamp": ..., "name": ...}``,
one object a line), turned into produced.parquet's rows and a group member's lines (groups.py's
``read``, ``commit_failed``, ``rebalance``). Pure functions of the lines: no process here.

What the protocol does not say is never made up; the library's record in harness/clients/registry.py
names it (``cannot_tell``), run.json carries it with the client, and the verdict says what it could
not judge for that client:

- ``send_time``: a producer reports a send when its callback ran, not when it was handed to the
  client: a send's ``send_ts_ms`` is its callback's time (its ack time), so latency is not measured;
- ``poll_hw``: a consumer reports no high watermark with what a poll returned: ``hw`` is null, and
  uncommitted_read counts only reads of records absent from the final log at their offset;
- ``failed_send_partition``: a failed send names no partition: it is the partition Kafka's default
  partitioner gives its key (kchaos keys every record, ``--repeating-keys``), exact for Kafka's own
  producer and any client that partitions keys as Kafka does.

A member's commits are not taken from its ``offsets_committed`` events: a frozen member hears a
commit's answer only when it resumes, possibly after another member's later commit, so the
group's live commits are the coordinator's own record (``reports_commits = False``, as sarama's);
a refused commit is still a ``commit_failed`` line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

NO_CALLBACK = "run ended before a callback"


def parse(lines: Iterable[str]) -> tuple[list[dict], list[str]]:
    """(the protocol's events, every other line): a tool may print a line of its own on stdout (a
    deprecation notice, a logger without a configuration), which goes to the client's log."""
    events, other = [], []
    for raw in lines:
        text = raw.strip()
        if not text:
            continue
        try:
            e = json.loads(text)
        except ValueError:
            other.append(text)
            continue
        (events if isinstance(e, dict) and "name" in e else other).append(e if isinstance(e, dict) else text)
    return events, other


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as a signed 32-bit int."""
    m, r, length = 0x5BD1E995, 24, len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length % 4
    base = length - tail
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def key_partition(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a record with ``key`` (toPositive(murmur2) % n)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def value_of(prefix: int, seq: int) -> str:
    """The value VerifiableProducer sends as its ``seq``-th record under ``--value-prefix prefix``."""
    return f"{prefix}.{seq}"


def seq_of(value: str) -> int:
    return int(value.rsplit(".", 1)[1])


def producer_rows(events: list[dict], name: str, prefix: int, topic: str, acks: str, partitions: int,
                  repeating_keys: int, classify) -> list[dict]:
    """produced.parquet's rows of one verifiable producer: a row per record it was handed, from its
    success and error events; the records it counted as sent (``tool_data``'s ``sent``, or the
    highest sequence an event names) with no event are indeterminate, without an ack time. A send's
    time is its callback's (``send_time``), a send that had none the producer's last event's time."""
    done: dict[int, dict] = {}
    last_ts, sent = 0, 0
    for e in events:
        last_ts = max(last_ts, int(e.get("timestamp") or 0))
        if e["name"] == "tool_data":
            sent = max(sent, int(e["sent"]))
        elif e["name"] in ("producer_send_success", "producer_send_error") and e.get("topic", topic) == topic:
            seq = seq_of(e["value"])
            sent = max(sent, seq + 1)
            done.setdefault(seq, e)  # one callback per send
    rows = []
    for seq in range(sent):
        e = done.get(seq)
        key = str(seq % repeating_keys)
        row = {"value": value_of(prefix, seq), "producer": name, "seq": seq, "topic": topic, "acks": acks}
        if e is None:
            row |= {"partition": key_partition(key, partitions), "status": "info", "offset": None,
                    "send_ts_ms": last_ts, "ack_ts_ms": None, "error": NO_CALLBACK}
        elif e["name"] == "producer_send_success":
            ok = acks != "0"
            row |= {"partition": int(e["partition"]), "status": "ok", "offset": int(e["offset"]) if ok else None,
                    "send_ts_ms": int(e["timestamp"]), "ack_ts_ms": int(e["timestamp"]), "error": None}
        else:
            error = f"{e.get('exception', '').removeprefix('class ').rsplit('.', 1)[-1]}: {e.get('message')}"
            row |= {"partition": key_partition(e.get("key") or key, partitions), "status": classify(error),
                    "offset": None, "send_ts_ms": int(e["timestamp"]), "ack_ts_ms": int(e["timestamp"]),
                    "error": error}
        rows.append(row)
    return rows


def member_lines(events: list[dict], consumer: str, group: str | None, isolation: str) -> list[dict]:
    """A member's (or a reader's) lines as groups.py reads them, from one process's events: a ``read``
    per ``record_data``, a ``rebalance`` per assignment or revocation, a ``commit_failed`` per refused
    commit. The generation is the process's count of assignments, as librdkafka's members give it;
    a partition this process read before that comes back (at the group's committed offset, possibly
    below what it read) is read on under a new reader name (``g-1/2``), as every member's is."""
    out: list[dict] = []
    generation, seq, reader = 0, 0, consumer
    returned_from: set[int] = set()
    for e in events:
        ts, name = int(e.get("timestamp") or 0), e["name"]
        if name in ("partitions_assigned", "partitions_revoked"):
            parts = sorted(int(p["partition"]) for p in e.get("partitions") or [])
            if name == "partitions_assigned":
                generation += 1
                if set(parts) & returned_from:
                    reader = f"{consumer}/{generation}"
            out.append({"t": "rebalance", "kind": "assign" if name == "partitions_assigned" else "revoke",
                        "partitions": parts, "generation": generation, "ts_ms": ts})
        elif name == "record_data":
            out.append({"t": "read", "consumer": reader, "seq": seq, "topic": e["topic"],
                        "partition": int(e["partition"]), "offset": int(e["offset"]), "value": e.get("value") or "",
                        "poll_ts_ms": ts, "hw": None, "phase": "live", "isolation": isolation, "group": group,
                        "generation": generation if group is not None else None})
            seq += 1
            returned_from.add(int(e["partition"]))
        elif name == "offsets_committed" and not e.get("success", True):
            out.append({"t": "commit_failed", "error": str(e.get("error") or "unknown"), "generation": generation,
                        "ts_ms": ts})
    return out
