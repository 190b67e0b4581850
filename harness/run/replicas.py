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


def read_replica_logs(cluster: KafkaCluster, topic: str) -> list[dict]:
    """Every broker's replicas of ``topic``, one broker after another."""
    return [row for b in cluster.settings.broker_ids for row in replica_log(cluster, b, topic)]


def read_checkpoints(cluster: KafkaCluster, topic: str) -> dict[int, dict]:
    """Per broker: high watermark, recovery point and log start per partition; leader epochs per partition."""
    return {b: checkpoints(cluster, b, topic) for b in cluster.settings.broker_ids}


def checkpoints(cluster: KafkaCluster, b: int, topic: str) -> dict:
    """One broker's checkpoint files for ``topic``."""
    info: dict = {}
    for name, key in (("replication-offset-checkpoint", "high_watermark"),
                      ("recovery-point-offset-checkpoint", "recovery_point"),
                      ("log-start-offset-checkpoint", "log_start")):
        info[key] = {}
        for path in cluster.settings.log_dir_paths:  # each directory's checkpoint covers its own partitions
            code, text = cluster.exec(f"kafka-{b}", ["cat", f"{path}/{name}"])
            if code == 0:
                info[key] |= {f"{t}-{p}": v for (t, p), v in parse_checkpoint(text).items() if t == topic}
    code, text = cluster.exec(f"kafka-{b}", ["sh", "-c",
                                             f"for d in {DATA_ROOT}/{LOG_DIRS}/{shlex.quote(topic)}-*; do "
                                             "echo \"== $(basename $d)\"; cat $d/leader-epoch-checkpoint; done"])
    info["leader_epochs"] = parse_epoch_caches(text if code == 0 else "", topic)
    return info


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
