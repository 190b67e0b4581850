"""The group coordinator's own record of a run's groups: ``__consumer_offsets`` as it lies in the
files of the broker that leads each group's partition of it, decoded by Kafka's DumpLogSegments
(``--offsets-decoder``), the lines of this run's groups kept in ``logs/group-coordinator.log``.

What the members' commit callbacks report is the client's word; this file is the broker's: every
offset commit the coordinator wrote (group, topic, partition, offset, when) and every group
metadata record (a classic group's generation, a consumer group's epoch), in the order it wrote
them. A finding about a group's committed offsets is shown in both. Read after healing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from harness.cluster import KafkaCluster
from harness.cluster.errors import ClusterError
from harness.cluster.kafka_tools import ToolError, ToolMissing
from harness.run.replicas import dump_log_segments

FILE = "group-coordinator.log"
OFFSETS_TOPIC = "__consumer_offsets"
_LINE = re.compile(r"offset: (\d+) CreateTime: (\d+) .*?key: (\{.*?\}\}) payload: ?(.*)$")
INT_MIN = -(2 ** 31)


def java_hash(s: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit two's complement."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, partitions: int) -> int:
    """The partition of an internal topic whose leader coordinates ``key`` (a group in
    ``__consumer_offsets``, a transactional id in ``__transaction_state``): Kafka's
    ``Utils.abs(key.hashCode()) % partitions`` (GroupMetadataManager.partitionFor, and the
    coordinator services' ``partitionFor`` in Kafka 4), ``Utils.abs`` taking MIN_VALUE to 0."""
    h = java_hash(key)
    return (0 if h == INT_MIN else abs(h)) % partitions


class NothingRead(ClusterError):
    """No in-sync replica of a group's ``__consumer_offsets`` partition gave DumpLogSegments output
    to read (no log files found, or the tool printed no segment): the group has no coordinator's
    record, which is said, never left as an empty file that reads like a group that wrote nothing."""

    def __init__(self, partition: str, tried: list[int]):
        self.tool, self.node = "kafka-dump-log", "kafka-" + ",".join(map(str, tried))
        super().__init__(f"{partition}: no in-sync replica's files were read (brokers {tried} tried)")


@dataclass
class CoordinatorDump:
    """What ``dump`` read: the file's text, and each failure that left a group without its
    coordinator's record (said on the terminal, in verdict.json's assumptions and in the report)."""

    text: str
    failures: list[ToolError | ToolMissing | NothingRead] = field(default_factory=list)


def read_partition(cluster: KafkaCluster, partition: str, replicas: list[int]) -> tuple[str, list[str]]:
    """One ``__consumer_offsets`` partition decoded, read on the first of ``replicas`` (its leader,
    then the rest of its ISR) whose files give the tool something to print (a "Dumping" line): its
    text, and a comment line for each replica that gave nothing. Raises the last replica's tool
    failure, or NothingRead when none gave output and none failed.

    Any in-sync replica holds what the leader committed, and the coordinator's records are committed
    before it answers, so a replica that does gives the same record. A read can find nothing where
    the replica holds the partition: a command the engine answers empty, or a replica reassigned
    since the metadata was read."""
    said: list[str] = []
    last: ToolError | ToolMissing | None = None
    for b in replicas:
        try:
            text = dump_log_segments(cluster, b, partition, "--offsets-decoder", "--print-data-log") or ""
        except (ToolError, ToolMissing) as e:
            last = e
            said.append(f"# broker {b}: {e}")
            continue
        if any(line.startswith("Dumping ") for line in text.splitlines()):
            if said:
                said.append(f"# read on broker {b}, in the partition's ISR")
            return text, said
        said.append(f"# broker {b}: no segment of {partition} to read")
    raise last if last is not None else NothingRead(partition, replicas)


def dump(cluster: KafkaCluster, groups: list[str]) -> CoordinatorDump:
    """Each group's lines in its ``__consumer_offsets`` partition, read on the broker that leads it
    (or, where that gives nothing, on another in-sync replica, which the file names)."""
    out: list[str] = []
    failures: list[ToolError | ToolMissing | NothingRead] = []
    meta = cluster.admin.list_topics(topic=OFFSETS_TOPIC, timeout=30).topics.get(OFFSETS_TOPIC)
    if meta is None or not meta.partitions:
        return CoordinatorDump(f"# no broker holds {OFFSETS_TOPIC}\n")
    dumped: dict[int, str | ClusterError] = {}  # groups that share a partition read it once
    for g in groups:
        p = partition_for(g, len(meta.partitions))
        leader = meta.partitions[p].leader
        out.append(f"# group {g}: {OFFSETS_TOPIC}-{p}, read on its leader, broker {leader}")
        if p not in dumped:
            replicas = [leader, *(b for b in meta.partitions[p].isrs if b != leader)]
            try:
                dumped[p], said = read_partition(cluster, f"{OFFSETS_TOPIC}-{p}", replicas)
                out += said
            except (ToolError, ToolMissing, NothingRead) as e:
                dumped[p] = e
                failures.append(e)
        text = dumped[p]
        if not isinstance(text, str):
            out.append(f"# {text}")
            continue
        keys = (f'"group":{json.dumps(g)}', f'"groupId":{json.dumps(g)}')
        out += [line for line in text.splitlines() if line.startswith("Dumping ") or any(k in line for k in keys)]
    return CoordinatorDump("\n".join(out) + "\n", failures)


@dataclass(frozen=True)
class Entry:
    """One record the coordinator wrote: a commit (``offset`` set, with the generation it was written
    in) or the group's metadata (``offset`` None, its new generation). ``log_offset`` orders them
    within their ``__consumer_offsets`` partition."""

    log_offset: int
    create_ms: int
    group: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    generation: int | None = None


def parse(text: str) -> list[Entry]:
    """The commits and group metadata records of a ``dump``, in the order they were written; each
    commit with its group's generation (a consumer group's epoch) at the time it was written."""
    out: list[Entry] = []
    generation: dict[str, int] = {}
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
        group = data.get("group", data.get("groupId", ""))
        common = (int(m.group(1)), int(m.group(2)), group)
        if key.get("type") in ("0", "1") and "offset" in value:
            out.append(Entry(*common, topic=data.get("topic"), partition=data.get("partition"),
                             offset=value["offset"], generation=generation.get(group)))
        elif (key.get("type") == "2" and "generation" in value) or (key.get("type") == "3" and "epoch" in value):
            generation[group] = value.get("generation", value.get("epoch"))
            out.append(Entry(*common, generation=generation[group]))
    return out


def commits_of(entries: list[Entry], group: str, topic: str, partition: int) -> list[Entry]:
    """One partition's commits by one group, with the group's generation changes between them."""
    return [e for e in entries if e.group == group and (
        e.offset is None or (e.topic == topic and e.partition == partition))]


def written_offsets(entries: list[Entry], group: str) -> list[dict]:
    """A group's commits as the coordinator wrote them, as offsets.parquet's "written" rows: each
    with its offset in ``__consumer_offsets`` (the order written) and the time the coordinator
    stamped it, whether or not the member learnt that it took effect."""
    return [{"group": group, "topic": e.topic, "partition": e.partition, "offset": e.offset, "ts_ms": e.create_ms,
             "phase": "written", "log_offset": e.log_offset}
            for e in entries if e.group == group and e.offset is not None]


def live_offsets(entries: list[Entry], group: str) -> list[dict]:
    """A group's commits as the coordinator wrote them, as offsets.parquet's live rows (each at the
    time the coordinator stamped it): the commits of a group whose library reports none of its own."""
    return [{"group": group, "topic": e.topic, "partition": e.partition, "offset": e.offset, "ts_ms": e.create_ms,
             "phase": "live"} for e in entries if e.group == group and e.offset is not None]
