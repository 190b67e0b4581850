"""Every replica's log, read from each broker's own segment files after healing.

Each broker's segment files are copied out of its container and their record batches decoded
with kafka-python's record reader (every message format and codec it supports), so replicas that
disagree show up even where consumers only ever talk to leaders, without a JVM per broker. Where
that reader fails on a file, Kafka's own DumpLogSegments reads the broker's files instead, inside
its container. The checkpoint files (HW, recovery point, log start, and each partition's
leader-epoch-checkpoint) are read from the same directories. A broker with several log directories
(JBOD) has each partition in one of them: every one is read.
"""

from __future__ import annotations

import logging
import re
import shlex
from concurrent.futures import ThreadPoolExecutor

from kafka.record import MemoryRecords

from harness.cluster import KafkaCluster, kafka_tools
from harness.cluster.powerloss import parse_checkpoint

LOG = logging.getLogger("kchaos.replicas")
DATA_ROOT = "/var/lib/kafka"  # a broker's log directories are DATA_ROOT/data, DATA_ROOT/data-2, ...
LOG_DIRS = "data*"  # the shell pattern of every log directory under DATA_ROOT
_DUMPING = re.compile(r"^Dumping (\S+)/([^/]+)-(\d+)/\d+\.log$")
_BATCH_EPOCH = re.compile(r"partitionLeaderEpoch: (-?\d+)")
# v2 records print as "| offset: N ...", v0/v1 messages (old message formats) as "offset: N ..."
_RECORD = re.compile(r"^(?:\|\s+)?offset: (\d+) .*?payload: ?(.*)$")


def parse_dump(text: str, broker: int, topic: str) -> list[dict]:
    """Rows of replicas.parquet (plus the batch's leader epoch) from DumpLogSegments output."""
    rows: list[dict] = []
    partition: int | None = None
    epoch: int | None = None
    for line in text.splitlines():
        m = _DUMPING.match(line.strip())
        if m:
            partition = int(m.group(3)) if m.group(2) == topic else None
            continue
        if line.startswith("Dumping "):  # a directory of no partition's own (topic-N.ID-delete): none of its records
            partition = None
            continue
        if partition is None:
            continue
        if line.startswith("baseOffset:"):
            e = _BATCH_EPOCH.search(line)
            epoch = int(e.group(1)) if e else None
            continue
        r = _RECORD.match(line)
        if r:
            rows.append({"broker": broker, "topic": topic, "partition": partition, "offset": int(r.group(1)),
                         "value": r.group(2), "leader_epoch": epoch})
    return rows


def parse_segment(data: bytes, broker: int, topic: str, partition: int) -> list[dict]:
    """Rows of replicas.parquet (plus the batch's leader epoch) from one segment file's bytes.
    Control batches (transaction markers) hold no records of the history; a torn last batch (a
    power loss) ends the file, as it ends Kafka's own reading of it."""
    rows: list[dict] = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        if getattr(batch, "is_control_batch", False):
            continue
        epoch = getattr(batch, "leader_epoch", None)
        for r in batch:
            value = r.value.decode(errors="replace") if r.value is not None else ""
            rows.append({"broker": broker, "topic": topic, "partition": partition, "offset": r.offset,
                         "value": value, "leader_epoch": epoch})
    return rows


def replica_log(cluster: KafkaCluster, b: int, topic: str) -> list[dict]:
    """One broker's replicas of ``topic``, every record of every segment, with its batch's leader epoch."""
    try:
        files = cluster.files(f"kafka-{b}", DATA_ROOT, f"{LOG_DIRS}/{shlex.quote(topic)}-*/*.log")
    except RuntimeError:  # tar found no file (no replica here) or failed: Kafka's tool tells which
        return dumped_log(cluster, b, topic)
    rows: list[dict] = []
    try:
        for name in sorted(files):
            d = name.split("/")[1]
            partition = d.rsplit("-", 1)[1]
            if d.rsplit("-", 1)[0] == topic and partition.isdigit():
                rows += parse_segment(files[name], b, topic, int(partition))
    except Exception as e:  # a format or codec the reader lacks: Kafka's own tool reads them
        LOG.info("broker %s: segment reader failed (%s); DumpLogSegments instead", b, e)
        return dumped_log(cluster, b, topic)
    return rows


def dump_log_segments(cluster: KafkaCluster, b: int, directories: str, *flags: str) -> str | None:
    """Kafka's DumpLogSegments over every segment of the log directories matching the shell pattern
    ``directories`` (under the data dir), run in broker b's container on its own files; None when it
    holds none. kafka_tools' ToolError or ToolMissing (RuntimeErrors) naming the broker when the tool
    cannot read them."""
    code, out = cluster.exec(f"kafka-{b}", ["sh", "-c", f"ls -1 {DATA_ROOT}/{LOG_DIRS}/{directories}/*.log"])
    files = [f for f in out.split() if f.endswith(".log")] if code == 0 else []
    if not files:
        return None
    return kafka_tools.run(cluster.exec, f"kafka-{b}", "kafka-dump-log", ["--files", ",".join(sorted(files)), *flags])


def dumped_log(cluster: KafkaCluster, b: int, topic: str) -> list[dict]:
    """``replica_log`` by Kafka's DumpLogSegments, run in the broker's container on its files."""
    out = dump_log_segments(cluster, b, f"{shlex.quote(topic)}-*", "--print-data-log", "--deep-iteration")
    return [] if out is None else parse_dump(out, b, topic)


def read_replicas(cluster: KafkaCluster, topics: list[str], topic: str) -> tuple[list[dict], dict[int, dict]]:
    """Every broker's replicas of ``topics`` (rows topic by topic, broker by broker) and its checkpoints
    for ``topic``. The brokers are read at once: each read is a command in the broker's own container,
    mostly waiting on the engine, so together they take about as long as the slowest."""
    brokers = cluster.settings.broker_ids
    with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
        logs = {(name, b): pool.submit(replica_log, cluster, b, name) for name in topics for b in brokers}
        files = {b: pool.submit(checkpoints, cluster, b, topic) for b in brokers}
        rows = [row for name in topics for b in brokers for row in logs[(name, b)].result()]
        return rows, {b: files[b].result() for b in brokers}


# Each broker's checkpoint files: per log directory, the offsets Kafka checkpoints for every partition
# there, under the key run.json's checkpoints give them; then each partition's leader-epoch cache.
OFFSET_CHECKPOINTS = {"replication-offset-checkpoint": "high_watermark",
                      "recovery-point-offset-checkpoint": "recovery_point",
                      "log-start-offset-checkpoint": "log_start"}
SECTION = "=== "  # heads each file's text in what ``checkpoints`` reads
EPOCH_CACHES = "leader-epoch-checkpoints"


def checkpoints(cluster: KafkaCluster, b: int, topic: str) -> dict:
    """One broker's checkpoint files for ``topic``, read by one command in its container (a file
    that cannot be read, as in a failed log directory, reads as empty)."""
    paths = " ".join(shlex.quote(f"{d}/{name}") for name in OFFSET_CHECKPOINTS for d in cluster.settings.log_dir_paths)
    script = (f"for f in {paths}; do echo \"{SECTION}$f\"; cat \"$f\" 2>/dev/null; done; "
              f"echo \"{SECTION}{EPOCH_CACHES}\"; "
              f"for d in {DATA_ROOT}/{LOG_DIRS}/{shlex.quote(topic)}-*; do "
              "echo \"== $(basename $d)\"; cat $d/leader-epoch-checkpoint 2>/dev/null; done; true")
    _, text = cluster.exec(f"kafka-{b}", ["sh", "-c", script])
    return parse_checkpoints(text, topic)


def parse_checkpoints(text: str, topic: str) -> dict:
    """``checkpoints``' dict from its command's output: a ``SECTION`` line heads each offset
    checkpoint file (by its path) and then the partitions' leader-epoch caches."""
    info: dict = {key: {} for key in OFFSET_CHECKPOINTS.values()}
    info["leader_epochs"] = {}
    for head, body in _sections(text):
        if head == EPOCH_CACHES:
            info["leader_epochs"] = parse_epoch_caches(body, topic)
        elif (key := OFFSET_CHECKPOINTS.get(head.rsplit("/", 1)[-1])) is not None:
            info[key] |= {f"{t}-{p}": v for (t, p), v in parse_checkpoint(body).items() if t == topic}
    return info


def _sections(text: str) -> list[tuple[str, str]]:
    """(head, body) for each ``SECTION`` line of ``text`` and the lines up to the next one."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith(SECTION):
            out.append((line[len(SECTION):].strip(), []))
        elif out:
            out[-1][1].append(line)
    return [(head, "\n".join(lines)) for head, lines in out]


def parse_epoch_caches(text: str, topic: str) -> dict[str, list[list[int]]]:
    """Each partition's leader-epoch cache, as (epoch, start offset) pairs, from "== DIRECTORY" headers
    each followed by its leader-epoch-checkpoint file. Only the partitions' own directories count: a
    replica a reassignment moved away waits in ``topic-N.ID-delete`` until Kafka deletes it, and a
    directory moving between log directories is ``topic-N.ID-future``."""
    epochs: dict[str, list[list[int]]] = {}
    current: str | None = None
    own = re.compile(rf"{re.escape(topic)}-\d+")
    for line in text.splitlines():
        if line.startswith("== "):
            name = line[3:].strip()
            current = name if own.fullmatch(name) else None
            if current is not None:
                epochs[current] = []
        elif current is not None:
            parts = line.split()
            if len(parts) == 2:
                epochs[current].append([int(parts[0]), int(parts[1])])
    return epochs
