"""What the fault registry and the cluster share: the names of the toxics a network fault puts on
a Toxiproxy link, and what a disk fault writes to kchaos-diskfs's control file (harness/cluster/disks.py).
Both stages speak them; neither owns the other, so they live below both, and the report reads
the registry without loading the cluster."""

from __future__ import annotations

# The toxics a network fault puts on a link; each carries the fault's tag, so a heal removes its own.
CUT_TOXIC = "kchaos-cut"
LATENCY_TOXIC = "kchaos-latency"
BANDWIDTH_TOXIC = "kchaos-bandwidth"
HOLD_TOXIC = "kchaos-hold"
# The two toxics that read Kafka's wire protocol (docker/toxiproxy/server/kafka.go): on every link
# that carries it from its first byte, in a cluster whose answers a fault can lose; armed with one
# request type's api key, they lose the answers to that type and close each connection that lost one.
KAFKA_REQUESTS_TOXIC = "kchaos-kafka-requests"
KAFKA_ANSWERS_TOXIC = "kchaos-kafka-answers"
UNARMED = -1
# The request types a lose_answers fault can lose the answers to, by the name Kafka's protocol
# guide gives them (snake case) and their api keys.
KAFKA_APIS = {
    "produce": 0, "fetch": 1, "list_offsets": 2, "metadata": 3, "offset_commit": 8, "offset_fetch": 9,
    "find_coordinator": 10, "join_group": 11, "heartbeat": 12, "sync_group": 14, "init_producer_id": 22,
    "add_partitions_to_txn": 24, "add_offsets_to_txn": 25, "end_txn": 26, "write_txn_markers": 27,
    "txn_offset_commit": 28, "alter_partition": 56, "broker_heartbeat": 63, "consumer_group_heartbeat": 68,
    "share_fetch": 78, "share_acknowledge": 79,
}

# The file operations a disk_error fault can make fail (docker/diskfs).
DISK_OPS = ("read", "write", "fsync")


def full() -> dict:
    """Writes, file creations and growth answer ENOSPC."""
    return {"full": True}


def failing(op: str) -> dict:
    """Operation ``op`` (one of DISK_OPS) answers EIO."""
    return {"error_ops": [op]}


def slow(latency_ms: int, jitter_ms: int) -> dict:
    """Writes and fsyncs wait ``latency_ms`` (+- ``jitter_ms``) first."""
    return {"latency_ms": latency_ms, "jitter_ms": jitter_ms, "slow_ops": ["write", "fsync"]}


def broken() -> dict:
    """Every operation fails: the directory is gone as far as Kafka can tell."""
    return {"error_ops": list(DISK_OPS)}
