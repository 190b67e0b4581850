"""Faults on a node's process: kill, power loss, clean stop and start, pause and resume, for a
broker and a coordination node alike.

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and proxies it uses."""

from __future__ import annotations

import logging
import time

import docker
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster import powerloss
from harness.cluster.disks import disk_dir
from harness.cluster.powerloss import Cut
from harness.cluster.settings import log_dir
from harness.cluster.zk import zk_connected
from harness.waiting import until

LOG = logging.getLogger("kchaos.cluster")


DATA_DIR = "/var/lib/kafka/data"
FREEZE_TRIES = 3  # a pause the cgroup freezer gave up on is asked again this often in all


class NodeFaults:

    def _node(self, n: int):
        """The container of node n: a broker, or a coordination node (100+K, 200+K)."""
        if n not in self.settings.broker_ids and n not in self.settings.coordination_ids:
            raise ValueError(f"node {n} does not exist (brokers: {self.settings.broker_ids}; coordination nodes: "
                             f"{self.settings.coordination_ids})")
        return self._containers[self.topo.node_key(n)].get_wrapped_container()

    def kill(self, b: int) -> None:
        """kill -9 the node's JVM; the container (and its log dir) stays for a restart. A frozen node
        too: the engine thaws it to deliver the signal, so it is no longer paused from then on."""
        self._paused.discard(b)
        self._node(b).kill(signal="SIGKILL")
        self._stopped.add(b)

    def power_loss(self, b: int) -> list[Cut]:
        """kill -9, then lose everything past each partition's recovery point (see powerloss.py).

        The cut is applied by the entrypoint when the broker is next started. A coordination node
        loses nothing a kill does not: the Raft log and ZooKeeper's transaction log are flushed before
        a write is acknowledged, so what is past the flush was never promised."""
        self.kill(b)
        if self.topo.is_coordination(b):
            return []
        w = self._node(b)
        cuts = []
        for k in range(1, self.settings.log_dirs + 1):
            # A stopped node's log directory: its own files, or, served through the disk faults'
            # pass-through, the directory behind it (the mount went with the process).
            files = disk_dir(k) if self.settings.faultable_disks else log_dir(k)
            stream, _ = w.get_archive(files)
            cuts += powerloss.plan_from_tar(b"".join(stream), files.rsplit("/", 1)[1])
        w.put_archive(powerloss.SCRIPT_PATH.rsplit("/", 1)[0], powerloss.script_tar(cuts))
        return cuts

    def stop_broker(self, b: int, timeout_s: int = 30) -> None:
        """Clean shutdown: SIGTERM, so the broker runs its controlled shutdown. A frozen node is thawed
        by the engine as the stop begins, and its controlled shutdown can take seconds: it counts as
        no longer paused from the stop's start, so a pause's heal meanwhile has nothing to thaw."""
        self._paused.discard(b)
        self._node(b).stop(timeout=timeout_s)
        self._stopped.add(b)

    def start_broker(self, b: int) -> float:
        """Start a stopped broker; returns how long the start had to wait (see below), in seconds.

        In ZooKeeper mode a killed broker's registration lives until its session expires, and a
        broker started before that exits with NodeExists (seen on 2.8.2: "node already exists and
        owner does not match current session"). So, like a supervisor that restarts until it
        sticks, the start waits for the old registration to go. Not only after a kill: a broker
        kchaos stopped cleanly may have died on its own first (Kafka halts a broker whose every log
        directory failed, and a heal that found it still running stopped it), and ZooKeeper, asked,
        says so. A ZooKeeper that does not answer is taken as "still there", after a clean stop too:
        a broker stopped while it could not reach ZooKeeper (the ensemble without a majority, its
        link cut) could not close its session, and is still registered once the ensemble re-forms."""
        waited = 0.0
        if self.settings.mode == "zk" and self._zk is not None and not self.topo.is_coordination(b):
            limit = self.settings.zookeeper_session_timeout_ms / 1000 * 2 + 5
            waited = until(lambda: not self._registered_in_zk(b), limit, "", 0.1, error=None)
        self._node(b).start()
        self._stopped.discard(b)
        return waited

    def _registered_in_zk(self, b: int) -> bool:
        """Whether broker b's registration is still in ZooKeeper; True, "still there", while ZooKeeper
        does not answer (an ensemble electing a leader; the harness's own session expiring meanwhile,
        after which the client opens a new one), which makes the caller ask again. Not asked while
        the client is not connected (see ``zk_connected``)."""
        assert self._zk is not None
        if not zk_connected(self._zk):
            return True
        try:
            return self._zk.exists(f"/brokers/ids/{b}") is not None
        except (KazooException, KazooTimeoutError):
            return True

    def pause(self, b: int) -> None:
        """Freeze every process of the node (SIGSTOP-like, via the cgroup freezer). On a loaded machine
        the freezer can give up before every thread stopped ("unable to freeze"), leaving the node
        running: asked again, a few times, before the fault is given up."""
        for attempt in range(FREEZE_TRIES):
            try:
                self._node(b).pause()
                break
            except docker.errors.APIError as e:
                if "unable to freeze" not in str(e) or attempt == FREEZE_TRIES - 1:
                    raise
                time.sleep(0.2)
        self._paused.add(b)

    def resume(self, b: int) -> None:
        """Thaw a frozen node; nothing to do when a fault that overlapped the freeze (a kill, a power
        loss, a stop) ended it: that fault's own heal starts the node. The engine's "is not paused"
        says the same (a stop that began between this check and the thaw thawed it first)."""
        if b not in self._paused:
            return
        try:
            self._node(b).unpause()
        except docker.errors.APIError as e:
            if "is not paused" not in str(e):
                raise
            LOG.info("node %s was no longer paused at its pause's heal: %s", b, e)
        self._paused.discard(b)
