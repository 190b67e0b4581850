"""Disk faults: a broker's log directory full, failing or slow, while its process runs on.

Each node of a cluster with faultable disks serves its log directory through kchaos-diskfs
(docker/kafka/diskfs), a pass-through FUSE file system over ``/var/lib/kafka/disk`` mounted at
``/var/lib/kafka/data`` inside the node's own container, which fails operations as the JSON file
``/etc/kchaos/disk.json`` says (re-read within 50 ms of a change):

- full: writes, file creations and growth answer ENOSPC, as a full disk does;
- error: reads, writes or fsyncs (``op``) answer EIO, as a failing disk does;
- slow: writes and fsyncs wait ``latency_ms`` (+- ``jitter_ms``) first.

The mount lives in the container's mount namespace and goes with it: nothing on the host is
mounted, and no loop device or file outside the container is made. A container needs ``/dev/fuse``
and CAP_SYS_ADMIN for the mount (docs/disks-and-clocks.md).

Kafka takes an I/O error in a log directory as that directory failing: with one directory the
broker halts ("all log dirs ... have failed"). So the heal gives the disk back and starts the node
again if it stopped, as an operator would after freeing space or replacing the disk.
"""

from __future__ import annotations

import json

from harness.cluster.archive import one_file_tar

DISK_DIR = "/var/lib/kafka/disk"  # the log directory's files, as the pass-through serves them
CONTROL_DIR = "/etc/kchaos"
CONTROL_FILE = "disk.json"
DISK_ENV = "KCHAOS_DISKFS"  # set on every node of a cluster with faultable disks
DISK_OPS = ("read", "write", "fsync")
DEVICES = ["/dev/fuse:/dev/fuse:rwm"]
CAPABILITIES = ["SYS_ADMIN"]


def full() -> dict:
    return {"full": True}


def failing(op: str) -> dict:
    return {"error_ops": [op]}


def slow(latency_ms: int, jitter_ms: int) -> dict:
    return {"latency_ms": latency_ms, "jitter_ms": jitter_ms, "slow_ops": ["write", "fsync"]}


class DiskFaults:
    """The cluster's disk faults (a mixin of KafkaCluster, like NodeFaults)."""

    def fail_disk(self, n: int, faults: dict) -> None:
        """Node n's log directory fails as ``faults`` says from now on ({}: it works again)."""
        if not self.settings.faultable_disks:  # type: ignore[attr-defined]
            raise ValueError("this cluster's disks cannot be faulted (it was started without faultable_disks)")
        body = json.dumps(faults).encode()
        self._node(n).put_archive(CONTROL_DIR, one_file_tar(CONTROL_FILE, body))  # type: ignore[attr-defined]

    def heal_disk(self, n: int) -> bool:
        """Node n's disk works again, and the node runs again if the fault stopped it; whether it had."""
        self.fail_disk(n, {})
        w = self._node(n)  # type: ignore[attr-defined]
        w.reload()
        if w.status == "running":
            return False
        self._killed.add(n)  # type: ignore[attr-defined]  # a halted broker's registration may linger
        self.start_broker(n)  # type: ignore[attr-defined]
        return True
