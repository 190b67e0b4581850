"""The group coordinator's own record of a run's groups: ``__consumer_offsets`` as it lies in a
broker's files, decoded by Kafka's DumpLogSegments (``--offsets-decoder``), the lines of this run's
groups kept in ``logs/group-coordinator.log``.

What the members' commit callbacks report is the client's word; this file is the broker's: every
offset commit the coordinator wrote (group, topic, partition, offset, when) and every group
metadata record (generation, members), in the order it wrote them. A finding about a group's
committed offsets is shown in both. Read after healing, when every broker holds the same log.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from harness.cluster import KafkaCluster
from harness.run.replicas import dump_log_segments

FILE = "group-coordinator.log"
_LINE = re.compile(r"offset: (\d+) CreateTime: (\d+) .*?key: (\{.*?\}\}) payload: ?(.*)$")


def dump(cluster: KafkaCluster, groups: list[str]) -> str:
    """The lines of ``groups`` in ``__consumer_offsets`` of the first broker that holds it, or why not."""
    keys = [f'"group":{json.dumps(g)}' for g in groups]
    for b in cluster.settings.broker_ids:
        try:
            out = dump_log_segments(cluster, b, "__consumer_offsets-*", "--offsets-decoder", "--print-data-log")
        except RuntimeError as e:
            return f"# {e}\n"
        if out is None:
            continue
        kept = [line for line in out.splitlines()
                if line.startswith("Dumping ") or any(k in line for k in keys)]
        return f"# __consumer_offsets of broker {b}, groups {', '.join(groups)}\n" + "\n".join(kept) + "\n"
    return "# no broker holds __consumer_offsets\n"


@dataclass(frozen=True)
class Entry:
    """One record the coordinator wrote: a commit (``offset`` set) or the group's metadata
    (``generation`` set). ``log_offset`` orders them within their ``__consumer_offsets`` partition."""

    log_offset: int
    create_ms: int
    group: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    generation: int | None = None


def parse(text: str) -> list[Entry]:
    """The commits and group metadata records of a ``dump``, in the order they were written."""
    out = []
    for line in text.splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        key = json.loads(m.group(3))
        try:
            value = json.loads(m.group(4)).get("data", {})
        except (json.JSONDecodeError, AttributeError):
            value = {}  # a tombstone: the payload is empty
        data = key.get("data", {})
        common = (int(m.group(1)), int(m.group(2)), data.get("group", ""))
        if key.get("type") in ("0", "1") and "offset" in value:
            out.append(Entry(*common, topic=data.get("topic"), partition=data.get("partition"),
                             offset=value["offset"]))
        elif key.get("type") == "2" and "generation" in value:
            out.append(Entry(*common, generation=value["generation"]))
    return out


def commits_of(entries: list[Entry], group: str, topic: str, partition: int) -> list[Entry]:
    """One partition's commits by one group, with the group's generation changes between them."""
    return [e for e in entries if e.group == group and (
        e.generation is not None or (e.topic == topic and e.partition == partition))]
