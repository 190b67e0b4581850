"""The mechanism of a finding in the brokers' and clients' own words, for bug.md: one function per
anomaly class that has something to show beyond kchaos's own records, each returning markdown.

A maintainer believes a report when it shows what their own software wrote: the coordinator's
log of the commits it accepted, the client's debug log of the requests it sent and retried.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path

from harness.checker.verdict import Verdict
from harness.history import read_run_config
from harness.run import coordinator_log

MAX_LINES = 60
# What librdkafka's debug=cgrp,protocol log says of commits and of the coordinator's connection:
# the offset each commit carries, each request sent, retried and answered, the connection lost.
_COMMIT_LINE = re.compile(r"Sent OffsetCommitRequest|Received OffsetCommitResponse|Retrying OffsetCommit|for commit|"
                          r"Disconnected|marking the coordinator|retrying later|Deferring")


def offset_regression(run_dir: Path, verdict: Verdict, anomaly: str = "offset_regression") -> list[str]:
    """The first regression (of ``anomaly``: the members' acknowledged commits, or the coordinator's
    record) as the coordinator wrote it (its ``__consumer_offsets``) and as the member that
    committed it logged it (its librdkafka debug log, when ``debug`` was set)."""
    examples = verdict.examples.get(anomaly) or []
    if not examples:
        return []
    ex = examples[0]
    group, topic, partition = ex["group"], ex["topic"], int(ex["partition"])
    out = [f"### The coordinator's log: group `{group}`, `{topic}` partition {partition}", ""]
    path = run_dir / "logs" / coordinator_log.FILE
    if path.exists():
        group_id = next((g.id for g in read_run_config(run_dir).groups if g.name == group and g.id), group)
        out += _coordinator_table(coordinator_log.commits_of(coordinator_log.parse(path.read_text()), group_id, topic,
                                                             partition))
    else:
        out += ["(not recorded in this run)", ""]
    member = _member_that_committed(run_dir, group, topic, partition, int(ex["offset"]), int(ex["ts_ms"]))
    if member is not None:
        since = int(ex.get("prev_ts_ms") or ex["ts_ms"])  # a written row has only its own time
        lines = _client_lines(member.with_suffix(".log"), topic, partition, since - 8000, int(ex["ts_ms"]) + 100)
        out += [f"### The member's client log: `{member.stem}`, the {len(lines)} lines on commits and the "
                "coordinator's connection before the regression", ""]
        out += ["```", *lines, "```", ""] if lines else [
            "(no debug log: set the group's `config = { debug = \"cgrp,protocol\" }` to see the requests)", ""]
    return out


def _coordinator_table(entries: list[coordinator_log.Entry]) -> list[str]:
    """The commits around the first one lower than the one before it, marked."""
    offsets = [e for e in entries if e.offset is not None]
    first_back = next((i for i, (a, b) in enumerate(itertools.pairwise(offsets)) if b.offset < a.offset),
                      None)
    if first_back is None:
        return ["The coordinator's log shows no commit lower than the one before it for this partition.", ""]
    lo, hi = offsets[max(0, first_back - 4)].log_offset, offsets[min(len(offsets) - 1, first_back + 8)].log_offset
    rows = ["| log offset | written (ms) | generation | committed offset | |", "|---|---|---|---|---|"]
    last = None
    for e in entries:
        if e.offset is None:
            if lo <= e.log_offset <= hi:
                rows.append(f"| {e.log_offset} | {e.create_ms} | **{e.generation}** (group metadata) | | |")
            continue
        mark = "moved back" if last is not None and e.offset < last else ""
        last = e.offset
        if lo <= e.log_offset <= hi:
            rows.append(f"| {e.log_offset} | {e.create_ms} | {'' if e.generation is None else e.generation} | "
                        f"{e.offset} | {mark} |")
    return [*rows, ""]


def _member_that_committed(run_dir: Path, group: str, topic: str, partition: int, offset: int,
                           ts_ms: int) -> Path | None:
    """The member whose commit callback reported ``offset`` at ``ts_ms``: its history file."""
    for path in sorted((run_dir / "members" / group).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if (r.get("t") == "commit" and r.get("topic") == topic and r.get("partition") == partition
                    and r.get("offset") == offset and r.get("ts_ms") == ts_ms):
                return path
    return None


def _client_lines(log: Path, topic: str, partition: int, from_ms: int, to_ms: int) -> list[str]:
    """librdkafka's debug lines (``%7|SECONDS|...``) between two times that speak of commits; per
    partition lines only for ``partition``. The last ``MAX_LINES`` if there are more: the end is
    where the regression is acknowledged."""
    if not log.exists():
        return []
    other_partition = re.compile(rf"Topic {re.escape(topic)} \[(?!{partition}\])\d+\]")
    kept = []
    for line in log.read_text(errors="replace").splitlines():
        parts = line.split("|", 2)
        if len(parts) < 3 or not parts[0].startswith("%"):
            continue
        try:
            ms = float(parts[1]) * 1000
        except ValueError:
            continue
        if from_ms <= ms <= to_ms and _COMMIT_LINE.search(line) and not other_partition.search(line):
            kept.append(line[:240])
    if len(kept) > MAX_LINES:
        kept = [f"... {len(kept) - MAX_LINES} earlier lines ...", *kept[-MAX_LINES:]]
    return kept


# What brokers log of a partition's ISR changes (leader side: proposed and committed; controller
# side: written or refused) and of the ZooKeeper connection the controller writes them through.
_ISR_LINE = re.compile(r"Shrinking ISR|Expanding ISR|ISR updated to|Failed to update ISR|"
                       r"have not heard from server|ZooKeeperClient Kafka server\] Connected")


def isr_not_restored(run_dir: Path, verdict: Verdict) -> list[str]:
    """Every broker's lines about the ISR of the partitions that did not heal, and the controller's
    ZooKeeper connection: a shrink proposed and never committed shows as ``Shrinking ISR`` with no
    ``ISR updated to`` after it."""
    out = []
    for p in verdict.not_healed:
        name = re.compile(rf"\b{re.escape(p.topic)}-{p.partition}\b" if p.partition is not None else re.escape(p.topic))
        for log in sorted((run_dir / "logs").glob("kafka-*.log")):
            lines = [line.rstrip()[:300] for line in log.read_text(errors="replace").splitlines()
                     if line.startswith("[") and _ISR_LINE.search(line)
                     and (name.search(line) or "ZooKeeper" in line or "heard" in line)]
            if any(name.search(line) for line in lines):  # a broker that logged the partition's ISR
                out += [f"### `{log.name}`: {p.describe()}", "", "```", *lines[-MAX_LINES:], "```", ""]
    return out


EVIDENCE: dict[str, Callable[[Path, Verdict], list[str]]] = {
    "offset_regression": offset_regression, "isr_not_restored": isr_not_restored,
    "coordinator_regression": functools.partial(offset_regression, anomaly="coordinator_regression")}


def evidence(anomaly: str, run_dir: Path, verdict: Verdict) -> list[str]:
    """bug.md's "Mechanism" section for ``anomaly``, or nothing when kchaos has nothing beyond its records."""
    show = EVIDENCE.get(anomaly)
    body = show(run_dir, verdict) if show is not None else []
    return ["## Mechanism: the brokers' and clients' own logs", "", *body] if body else []
