"""Disk faults: a broker's log directory full, failing or slow, while its process runs on.

Each node of a cluster with faultable disks serves its log directory through kchaos-diskfs
(docker/diskfs), a pass-through FUSE file system over ``/var/lib/kafka/disk`` mounted at
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
import re
import time

from harness.cluster.archive import one_file_tar
from harness.cluster.settings import log_dir
from harness.mechanisms import DISK_OPS, broken, failing, full, slow

__all__ = ["DISK_OPS", "DiskFaults", "broken", "failing", "full", "slow"]

CONTROL_DIR = "/etc/kchaos"
DISK_ENV = "KCHAOS_DISKFS"  # set on every node of a cluster with faultable disks
LOG_DIRS_ENV = "KCHAOS_LOG_DIRS"  # how many log directories a broker has (the entrypoint mounts each)
# Kafka's ReplicaManager when a log directory fails and the broker carries on with the others
# (every version kchaos runs): "Stopping serving replicas in dir /var/lib/kafka/data-2".
DIR_OFFLINE = "Stopping serving replicas in dir "
# The logger every I/O error that takes a log directory offline goes to first, with the path in the
# message ("Error while appending records to t-0 in dir /var/lib/kafka/data
# (org.apache.kafka.storage.internals.log.LogDirFailureChannel)"; kafka.server.LogDirFailureChannel
# before 3.7). ReplicaManager's DIR_OFFLINE line and the halt follow it on other threads.
DIR_FAILED = "LogDirFailureChannel)"
# LogManager, as it halts a broker whose every log directory failed: "Shutdown broker because all
# log dirs in /var/lib/kafka/data have failed".
ALL_DIRS_FAILED = "Shutdown broker because all log dirs in "
# kchaos-diskfs looks at its control file every 50 ms: an operation that starts this long after
# the file is rewritten sees the change.
CONTROL_RELOAD_S = 0.15
# The host's FUSE device, handed into each broker's container: the disk faults' file system needs it.
FUSE_DEVICE = "/dev/fuse"
DEVICES = [f"{FUSE_DEVICE}:{FUSE_DEVICE}:rwm"]
CAPABILITIES = ["SYS_ADMIN"]


def disk_dir(k: int) -> str:
    """Where log directory k's files are, behind the pass-through that serves them (k from 1)."""
    return "/var/lib/kafka/disk" + (f"-{k}" if k > 1 else "")


def control_file(k: int) -> str:
    """The name of the file (in CONTROL_DIR) that says what log directory k fails."""
    return "disk" + (f"-{k}" if k > 1 else "") + ".json"


class DiskFaults:
    """The cluster's disk faults (a mixin of KafkaCluster, like NodeFaults)."""

    def fail_disk(self, n: int, faults: dict, dirs: list[int]) -> None:
        """Node n's log directories ``dirs`` (from 1) fail as ``faults`` says from now on ({}: they
        work again)."""
        if not self.settings.faultable_disks:  # type: ignore[attr-defined]
            raise ValueError("this cluster's disks cannot be faulted (it was started without faultable_disks)")
        body = json.dumps(faults).encode()
        for k in dirs:
            self._node(n).put_archive(CONTROL_DIR, one_file_tar(control_file(k), body))  # type: ignore[attr-defined]

    def restart_if_disk_halted(self, n: int, log_tail: str) -> bool:
        """Start node n again if Kafka halted it because its every log directory failed, in a cluster
        whose disks kchaos fails; False (and nothing done) otherwise. The halt can come after the
        heal that gave the disk back (seen: a broker halted after its heal had found it running and
        nothing failed in its log), so a heal alone cannot promise the node serves again."""
        if not self.settings.faultable_disks or not halted_by_disks(log_tail):  # type: ignore[attr-defined]
            return False
        self.start_broker(n)  # type: ignore[attr-defined]  # it waits for a halted broker's registration to go
        return True

    def heal_disk(self, n: int, dirs: list[int], since_ms: int, restart: bool = False) -> str:
        """Node n's log directories ``dirs`` work again, and the node serves them again: started if
        Kafka halted it ("started"), restarted if ``restart`` or a directory went offline under it
        since ``since_ms`` (Kafka brings a failed directory back only when it starts: "restarted"),
        else left as it is (""). ``restart`` is for a node that carries on without a failed
        directory: its log did not always say in time that one failed (docs/disks-and-clocks.md).

        A node another fault holds down (a kill, a stop, a power loss) is left down: that fault's
        heal starts it, and a start serves every directory again. A node another fault holds frozen
        (a pause) is not halted either, and the engine refuses to start a paused container: it is
        left frozen unless it must be restarted, whose stop thaws it and ends that pause, as a kill
        or a stop during a pause does."""
        self.fail_disk(n, {}, dirs)
        time.sleep(CONTROL_RELOAD_S)  # an error after this is not the fault's: it is Kafka's own
        if n in self._stopped:  # type: ignore[attr-defined]
            return ""
        w = self._node(n)  # type: ignore[attr-defined]
        w.reload()
        if w.status not in ("running", "paused"):
            self.start_broker(n)  # type: ignore[attr-defined]  # it waits for a halted broker's registration to go
            return "started"
        # A directory whose first error is logged may not be offline yet, or its broker not yet
        # halted: either comes on Kafka's own threads, after this check could have passed.
        if restart or failed_dirs(w.logs(since=since_ms // 1000).decode(errors="replace"), dirs):
            self.stop_broker(n)  # type: ignore[attr-defined]
            self.start_broker(n)  # type: ignore[attr-defined]
            return "restarted"
        return ""


def halted_by_disks(log_tail: str) -> bool:
    """Whether a node's last log lines say Kafka halted it because its every log directory failed."""
    return ALL_DIRS_FAILED in log_tail


def failed_dirs(broker_log: str, dirs: list[int]) -> list[int]:
    """The log directories among ``dirs`` (from 1) that a broker's log says failed: an I/O error
    reported to LogDirFailureChannel, or ReplicaManager taking the directory offline, naming it.
    /var/lib/kafka/data is not /var/lib/kafka/data-2: a path counts only where it ends."""
    lines = [ln for ln in broker_log.splitlines() if DIR_FAILED in ln or DIR_OFFLINE in ln]
    return [k for k in dirs if any(re.search(re.escape(log_dir(k)) + r"(?![\w-])", ln) for ln in lines)]
