"""Cluster state from its source of truth, and the waits built on it: each partition's leader,
replicas and ISR, the controller and the coordination quorum (ZooKeeper's znodes in ZooKeeper mode,
the brokers' metadata and the controllers themselves in KRaft mode).

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and proxies it uses."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster import quorum
from harness.cluster.errors import BOOT_FAILED, ClusterError, TopicError, lost_its_session_while_starting, why_exited
from harness.cluster.quorum import QuorumState
from harness.cluster.state_types import ClusterState, PartitionState
from harness.cluster.zk import zk_connected
from harness.waiting import until

LOG = logging.getLogger("kchaos.cluster")
BOOT_RESTARTS = 2  # times one wait starts a broker again after its session lapsed at start-up


def registration_seen(st: ClusterState, in_metadata: set[int]) -> str:
    """What a wait for the brokers saw, for the error that says it ran out: the brokers registered
    with the controller's source of truth, those in the clients' metadata, the controller, and
    whether that source had stopped answering (a frozen state is the last one read, not a live one)."""
    source = "ZooKeeper's last answer (it does not answer now)" if st.frozen else "registered"
    return (f"{source}: {sorted(st.brokers)}, in the clients' metadata: {sorted(in_metadata)}, "
            f"controller: {st.controller if st.controller >= 0 else 'none'}")


class StateReads:

    def describe(self, topic: str | None = None, timeout_s: float = 5.0, quorum: bool | None = None) -> ClusterState:
        """Leader, replicas (AR order) and ISR of every partition, plus the controller (and the
        coordination layer's state: with ``quorum``, or by default in KRaft mode, where the active
        controller is the quorum's leader; ``quorum=False`` skips it, the controller then -1).

        ZooKeeper mode reads ZooKeeper itself, the controller's source of truth: any broker's
        metadata cache can be stale while a fault keeps the controller's updates from it.
        KRaft mode asks the brokers' metadata, and the controllers themselves who leads.
        """
        ask = quorum if quorum is not None else self.settings.mode == "kraft"
        q = self.quorum_state(min(timeout_s, 0.5)) if ask else None
        if self._zk is not None:
            return replace(self._describe_zk_or_frozen(topic, max(timeout_s, 0.5)), quorum=q)
        md = self.admin.list_topics(topic=topic, timeout=timeout_s)
        parts = []
        for t in md.topics.values():
            if t.error is not None and t.error.code() != KafkaError.NO_ERROR:
                if topic is not None:
                    raise TopicError(f"topic {topic}: {t.error.str()}")
                continue
            for p in t.partitions.values():
                parts.append(PartitionState(t.topic, p.id, p.leader, list(p.replicas), list(p.isrs)))
        parts.sort(key=lambda x: (x.topic, x.partition))
        return ClusterState(q.leader if q is not None else -1, sorted(md.brokers), parts, q)

    def quorum_state(self, timeout_s: float = 0.5) -> QuorumState:
        """Who leads the KRaft quorum or the ZooKeeper ensemble now, in which epoch, each node's lag."""
        if self.settings.mode == "kraft":
            return quorum.kraft_state(self.admin_ports, timeout_s)
        return quorum.zk_state(self.admin_ports, timeout_s)

    def zookeeper_server_of(self, broker: int) -> int:
        """The ZooKeeper server (node number) broker ``broker``'s session is connected to now, read from
        the broker's own established connections: each server K has a proxy port of its own."""
        topo = self.topo
        ports = {n: topo.broker_port(topo.index(n)) for n in topo.quorum}
        code, out = self.exec(topo.node_key(broker), ["cat", "/proc/net/tcp", "/proc/net/tcp6"])
        server = quorum.zookeeper_server_connected(out, ports) if code == 0 else None
        if server is None:
            raise ValueError(f"broker {broker} is connected to no ZooKeeper server now"
                             + ("" if code == 0 else f" (reading its connections: exit {code}: {out[-200:]})"))
        return server

    def _describe_zk_or_frozen(self, topic: str | None, timeout_s: float) -> ClusterState:
        """ZooKeeper's state; while ZooKeeper does not answer (the ensemble lost its majority, or
        elects a leader), the last state read of that topic, marked frozen: every change of leader,
        ISR or controller is a ZooKeeper write, so none can have happened since."""
        try:
            st = self._describe_zk(topic, timeout_s)
        except (KazooException, KazooTimeoutError, TimeoutError) as e:
            last = self._last_zk.get(topic)
            if last is None:
                raise ClusterError(f"ZooKeeper did not answer ({type(e).__name__}) and no state was read before") \
                    from e
            return replace(last, frozen=True)
        self._last_zk[topic] = st
        return st

    def _describe_zk(self, topic: str | None, timeout_s: float) -> ClusterState:
        """Partition state from ZooKeeper; every read bounded by ``timeout_s`` (while the ensemble
        elects a leader, reads wait for it: the caller gets a TimeoutError instead)."""
        zk = self._zk
        assert zk is not None
        if not zk_connected(zk):
            raise TimeoutError("the harness's ZooKeeper client is not connected")
        deadline = time.monotonic() + timeout_s

        def read(path: str, children: bool = False):
            call = zk.get_children_async if children else zk.get_async
            return call(path).get(timeout=max(0.05, deadline - time.monotonic()))

        try:
            controller = json.loads(read("/controller")[0])["brokerid"]
        except NoNodeError:
            controller = -1
        brokers = sorted(int(b) for b in read("/brokers/ids", children=True))
        topics = [topic] if topic is not None else read("/brokers/topics", children=True)
        parts = []
        for t in topics:
            try:
                assignment = json.loads(read(f"/brokers/topics/{t}")[0])["partitions"]
            except NoNodeError as e:
                raise TopicError(f"topic {t}: unknown topic") from e
            for p_str, replicas in assignment.items():
                try:
                    st = json.loads(read(f"/brokers/topics/{t}/partitions/{p_str}/state")[0])
                except NoNodeError:
                    st = {"leader": -1, "isr": [], "leader_epoch": -1}
                parts.append(PartitionState(t, int(p_str), st["leader"], list(replicas), list(st["isr"]),
                                            st.get("leader_epoch", -1)))
        parts.sort(key=lambda x: (x.topic, x.partition))
        return ClusterState(controller, brokers, parts)

    def wait_ready(self, timeout_s: float = 120.0, restart_lost_boots: bool = False) -> dict[int, int]:
        """Until a controller is elected and clients see every broker in the metadata; returns the
        brokers started again, with how many times. ``restart_lost_boots``: for the cluster's own
        start without a formation fault, and for the heal after a run's faults, where a broker that
        exited because its ZooKeeper session lapsed while it started is started again, as a
        supervisor would (``restart_if_boot_lost_session``), BOOT_RESTARTS times at most in this wait."""
        want = set(self.settings.broker_ids)
        last_seen = "nothing read yet"
        self._boot_restarts = {}

        def ready() -> bool:
            nonlocal last_seen
            self._raise_if_exited(restart_lost_boots)
            try:
                st = self.describe(timeout_s=2)
                seen = set(self.admin.list_topics(timeout=2).brokers)
            except (KafkaException, NoNodeError, ClusterError) as e:
                last_seen = f"{type(e).__name__}: {e}"
                return False
            last_seen = registration_seen(st, seen)
            return not st.frozen and set(st.brokers) >= want and seen >= want and st.controller >= 0

        until(ready, timeout_s, "brokers did not all register",
              error=lambda what: ClusterError(f"{what} (wanted {sorted(want)}; last seen: {last_seen})"))
        return dict(self._boot_restarts)

    def _raise_if_exited(self, restart_lost_boots: bool = False) -> None:
        """Raise if a node the harness did not stop has exited, unless Kafka halted it for its failed
        disks in a cluster whose disks kchaos fails, or (``restart_lost_boots``) it lost its ZooKeeper
        session while it started: that one is started again."""
        stopped = {self.topo.node_key(n) for n in self._stopped}
        nodes = {self.topo.node_key(n): n for n in [*self.settings.broker_ids, *self.settings.coordination_ids]}
        for key, c in self._containers.items():
            if key in stopped:
                continue
            w = c.get_wrapped_container()
            w.reload()
            if w.status != "exited":
                continue
            if key in nodes and self.restart_if_disk_halted(  # type: ignore[attr-defined]
                    nodes[key], w.logs(tail=40).decode(errors="replace")):
                LOG.warning("%s: Kafka halted it for its failed log directories after the disk was given back; "
                            "started again", key)
                continue
            log = w.logs().decode(errors="replace")
            if restart_lost_boots and key in nodes and self.restart_if_boot_lost_session(nodes[key], log):
                continue
            raise ClusterError(f"container {key} exited (code {w.attrs['State']['ExitCode']}):\n" + why_exited(log))

    def restart_if_boot_lost_session(self, n: int, log: str) -> bool:
        """Start broker n again, at most BOOT_RESTARTS times, if it exited because ZooKeeper expired
        its session while it started; False (and nothing done) otherwise. A supervisor restarts such a
        broker. While a cluster forms on a loaded machine, a ZooKeeper or a broker JVM stalled past the
        session timeout, and the cluster that forms is the same; after a run, a broker a fault
        restarted while ZooKeeper was paused or cut off exits so. Said on the terminal."""
        done = self._boot_restarts.get(n, 0)
        if done >= BOOT_RESTARTS or not lost_its_session_while_starting(log):
            return False
        self._boot_restarts[n] = done + 1
        LOG.warning("kafka-%d exited while it started: ZooKeeper expired its session (%s); started again (%d of %d)",
                    n, BOOT_FAILED, done + 1, BOOT_RESTARTS)
        self.start_broker(n)  # type: ignore[attr-defined]  # it waits for the lapsed registration to go
        return True

    def wait_for(self, cond, timeout_s: float, what: str, interval: float = 0.25) -> float:
        """Poll ``cond(state)`` on fresh metadata; return the seconds it took."""
        last: object = None

        def check() -> bool:
            nonlocal last
            try:
                st = self.describe(timeout_s=2)
                last = st
                return bool(cond(st))
            except (KafkaException, TopicError, KeyError, ClusterError) as e:
                last = e
                return False

        return until(check, timeout_s, what, interval, error=lambda said: ClusterError(f"{said}; last seen: {last}"))

    def wait_full_isr(self, topic: str, timeout_s: float = 60.0) -> float:
        """Until every partition of ``topic`` has its whole AR in the ISR and a leader that serves it."""

        def full(st: ClusterState) -> bool:
            ps = [p for p in st.partitions if p.topic == topic]
            return bool(ps) and all(p.leader >= 0 and set(p.isr) == set(p.replicas) for p in ps) \
                and self.brokers_agree(topic, {p.partition: p.leader for p in ps}) \
                and self.leaders_serve(topic, [p.partition for p in ps])

        return self.wait_for(full, timeout_s, f"topic {topic} did not reach a full ISR")

    def brokers_agree(self, topic: str, leaders: dict[int, int]) -> bool:
        """Whether every running broker's own metadata cache names these leaders.

        Each broker is asked through its own client proxy by a client that knows only that
        broker. Until they all agree, a client may be sent to a broker that does not serve the
        partition yet, and acks=0 writes sent there vanish without an error.
        """
        for b, port in self.client_ports.items():
            if b in self._stopped or b in self._paused:
                continue
            probe = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "broker.address.family": "v4"},
                                logger=LOG)
            try:
                md = probe.list_topics(topic=topic, timeout=2)
            except KafkaException:
                return False
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                return False
            if {p.id: p.leader for p in t.partitions.values()} != leaders:
                return False
        return True

    def log_start_offsets(self, topic: str, partitions: int) -> dict[int, int]:
        """Each partition's log start offset, as its leader answers ListOffsets (earliest): above 0
        once retention (or a deletion of records) has removed the log's first segments."""
        c = Consumer(self.client_config(**{"group.id": "kchaos-probe", "enable.auto.commit": False}), logger=LOG)
        try:
            return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[0]
                    for p in range(partitions)}
        finally:
            c.close()

    def leaders_serve(self, topic: str, partitions: list[int]) -> bool:
        """Whether each partition's leader answers a ListOffsets for it, which only a serving leader does.

        CI saw a new topic's leader close an acks=0 producer's connection 17 ms after it opened,
        dropping the first record, although ZooKeeper and every broker's metadata already named
        that leader: a moment before it served the partition.
        """
        c = Consumer(self.client_config(**{"group.id": "kchaos-probe", "enable.auto.commit": False}), logger=LOG)
        try:
            for p in partitions:
                c.get_watermark_offsets(TopicPartition(topic, p), timeout=2)
            return True
        except KafkaException:
            return False
        finally:
            c.close()
