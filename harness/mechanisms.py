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
