"""A real Kafka cluster on Testcontainers, with Toxiproxy in every link a fault must cut.

Containers: one Toxiproxy, a ZooKeeper ensemble or a KRaft quorum (each node in its own container),
N brokers. See ``topology.py`` for how the networks force every connection through a proxy.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import shlex
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

import docker
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

# Ryuk cannot be pulled on these machines; harness.reaper does its job by label.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from harness import reaper
from harness.cluster import powerloss, quorum
from harness.cluster.powerloss import Cut
from harness.cluster.quorum import QuorumState
from harness.cluster.settings import (
    CONTROLLER_ID_BASE,
    PROXY_CLIENT_BASE,
    ClusterSettings,
    broker_properties,
    controller_format_args,
    controller_port,
    controller_properties,
    new_cluster_id,
    zookeeper_config,
)
from harness.cluster.topology import Topology
from harness.cluster.toxiproxy import BANDWIDTH_TOXIC, CUT_TOXIC, HOLD_TOXIC, LATENCY_TOXIC, Toxiproxy
from harness.setup import ClusterImages
from harness.waiting import until

testcontainers_config.ryuk_disabled = True

LOG = logging.getLogger("kchaos.cluster")
STREAMS = ("upstream", "downstream")
DATA_DIR = "/var/lib/kafka/data"
HOLD_MS = 3_600_000  # a client_pause holds bytes this long at most; its heal releases them at once


def toxic_name(prefix: str, stream: str, tag: str = "") -> str:
    """kchaos-cut-upstream, or kchaos-cut-upstream-f3 for the fault tagged f3."""
    return f"{prefix}-{stream}-{tag}" if tag else f"{prefix}-{stream}"


class ClusterError(RuntimeError):
    """The cluster could not be started or did not become healthy; the message says why."""


class TopicError(ValueError):
    """A topic request Kafka refused (or that could never succeed on this cluster)."""


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # -1 when offline
    replicas: list[int]  # AR order
    isr: list[int]
    leader_epoch: int = -1  # known in ZooKeeper mode (read from the partition's state znode)


@dataclass(frozen=True)
class ClusterState:
    controller: int  # ZooKeeper mode: the broker that is Kafka's controller; KRaft: the active controller
    brokers: list[int]  # brokers the metadata lists as alive
    partitions: list[PartitionState]
    quorum: QuorumState | None = None  # the coordination layer, when asked for (always in KRaft)
    frozen: bool = False  # ZooKeeper did not answer: the last state read, which nothing could change since

    def partition(self, topic: str, p: int) -> PartitionState:
        for x in self.partitions:
            if x.topic == topic and x.partition == p:
                return x
        raise KeyError(f"{topic}-{p} not in metadata")


def why_exited(log: str, context: int = 3) -> str:
    """The first ERROR or FATAL line of a JVM's log with the lines after it, else the log's tail.

    A broker that dies logs its cause once and then pages of orderly shutdown; the tail alone
    hides the cause."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if (" ERROR " in line or " FATAL " in line) and "Exiting Kafka" not in line:
            return "\n".join(lines[i:i + context + 1]) + "\n[...]\n" + "\n".join(lines[-3:])
    return "\n".join(lines[-30:])


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


class KafkaCluster:
    """Start, fault and inspect a cluster. Use as a context manager; ``stop`` is idempotent."""

    def __init__(self, settings: ClusterSettings, images: ClusterImages, name: str | None = None):
        self.settings = settings
        self.topo = Topology(self.settings.broker_ids, self.settings.mode, tuple(self.settings.private_clients),
                             tuple(self.settings.coordination_ids))
        self.name = name or f"kc{reaper.SESSION_ID}{os.urandom(2).hex()}"
        self.kafka_image = images.kafka
        self.toxiproxy_image = images.toxiproxy
        self.cluster_id = new_cluster_id()
        # KIP-853: each controller's log directory id, given to every controller's format
        self.directory_ids = {k: new_cluster_id() for k in range(1, self.settings.quorum_size + 1)}
        self.admin_ports: dict[int, int] = {}  # coordination node -> the harness's published port to it
        self._containers: dict[str, DockerContainer] = {}
        self._networks: dict[str, Network] = {}
        self.client_ports: dict[int, int] = {}
        self.private_ports: dict[str, dict[int, int]] = {}
        self.toxi: Toxiproxy | None = None
        self._admin: AdminClient | None = None
        self._zk: KazooClient | None = None
        self._paused: set[int] = set()  # node numbers (brokers and coordination nodes) of each state
        self._stopped: set[int] = set()
        self._killed: set[int] = set()  # stopped by kill -9 (their ZooKeeper session may outlive them)
        self._last_zk: dict[str | None, ClusterState] = {}  # by topic: the last state ZooKeeper gave

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _labels(self, role: str) -> dict[str, str]:
        return reaper.labels(**{"kchaos.cluster": self.name, "kchaos.role": role})

    def _network(self, key: str, internal: bool) -> Network:
        net = Network(docker_network_kw={"labels": self._labels("network"), "internal": internal})
        net.name = f"{self.name}-{key}"
        net.create()
        self._networks[key] = net
        return net

    def _container(self, key: str, image: str, net: Network, aliases: list[str],
                   command: str | None = None) -> DockerContainer:
        c = (
            DockerContainer(image, command=command)
            .with_name(f"{self.name}-{key}")
            .with_network(net)
            .with_network_aliases(*aliases)
            .with_kwargs(labels=self._labels(key), hostname=aliases[0])
        )
        self._containers[key] = c
        return c

    def start(self, timeout_s: float = 120.0) -> KafkaCluster:
        """Bring the whole cluster up and wait until every broker is registered."""
        client = docker.from_env()
        missing = [t for t in (self.kafka_image, self.toxiproxy_image) if not _image_exists(client, t)]
        if missing:
            raise ClusterError(f"images not built: {', '.join(missing)}; run `kchaos images`")
        reaper.reap_orphans(client)
        reaper.start_watchdog()
        try:
            self._start(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout_s: float) -> None:
        s = self.settings
        core = self._network("core", internal=False)
        nets = {b: self._network(f"net{b}", internal=True) for b in s.broker_ids}
        nets |= {n: self._network(f"qnet{self.topo.index(n)}", internal=True) for n in s.coordination_ids}
        self._start_toxiproxy(core, nets)
        env_common = {"KCHAOS_HEAP": s.heap, "KCHAOS_CLUSTER_ID": self.cluster_id}
        for n in s.coordination_ids:
            self._start_coordination(n, nets[n], env_common)
        if s.mode == "zk":
            hosts = ",".join(f"127.0.0.1:{p}" for p in self.admin_ports.values())
            # The longest session ZooKeeper grants (20 ticks): the harness's session outlives an
            # ensemble's election; one that still expires is replaced by the client on reconnection.
            self._zk = KazooClient(hosts=hosts, timeout=10, logger=LOG)
            self._zk.start(timeout=60)
        for b in s.broker_ids:
            c = self._container(f"kafka-{b}", self.kafka_image, nets[b], [f"kafka-{b}"], command="broker")
            private = [self.private_ports[n][b] for n in s.private_clients]
            c.with_envs(**env_common, KCHAOS_CONFIG=broker_properties(s, b, self.client_ports[b], private))
            c.start()
        self.wait_ready(timeout_s)

    def _start_toxiproxy(self, core: Network, nets: dict[int, Network]) -> None:
        """Toxiproxy first: brokers' advertised client ports are its published ports."""
        s, topo = self.settings, self.topo
        published = [PROXY_CLIENT_BASE + b for b in s.broker_ids]
        published += [topo.private_port(b, n) for n in s.private_clients for b in s.broker_ids]
        published += [topo.admin_port(topo.index(n)) for n in s.coordination_ids]
        tp = self._container("toxiproxy", self.toxiproxy_image, core, ["toxiproxy"])
        # with_bind_ports cannot name a host address; its dict goes to docker as is.
        tp.ports.update({f"{p}/tcp": ("127.0.0.1", None) for p in [*published, 8474]})
        tp.start()
        for n, net in nets.items():
            aliases = topo.aliases_on_quorum_net(topo.index(n)) if topo.is_coordination(n) \
                else topo.aliases_on_broker_net()
            net.connect(tp.get_container_id(), network_aliases=aliases)
        w = tp.get_wrapped_container()
        w.reload()
        attached = w.attrs["NetworkSettings"]["Networks"]
        net_ips = {n: attached[net.name]["IPAddress"] for n, net in nets.items()}
        host_ports = w.attrs["NetworkSettings"]["Ports"]

        def host_port(p: int) -> int:
            return int(host_ports[f"{p}/tcp"][0]["HostPort"])

        self.client_ports = {b: host_port(PROXY_CLIENT_BASE + b) for b in s.broker_ids}
        self.private_ports = {n: {b: host_port(topo.private_port(b, n)) for b in s.broker_ids}
                              for n in s.private_clients}
        self.admin_ports = {n: host_port(topo.admin_port(topo.index(n))) for n in s.coordination_ids}
        self.toxi = Toxiproxy(f"http://127.0.0.1:{host_port(8474)}")
        until(self._toxi_up, 20, "toxiproxy API did not answer", error=ClusterError)
        self.toxi.populate(topo.proxies(net_ips))

    def _start_coordination(self, n: int, net: Network, env_common: dict[str, str]) -> None:
        """Start ZooKeeper server K or KRaft controller K on its own network (not waiting for it)."""
        s, k = self.settings, self.topo.index(n)
        key = self.topo.node_key(n)
        c = self._container(key, self.kafka_image, net, [self.topo.node_name(k), self.topo.server_name(k)],
                            command="zookeeper" if s.mode == "zk" else "controller")
        if s.mode == "zk":
            c.with_envs(KCHAOS_CONFIG=zookeeper_config(s), KCHAOS_HEAP="-Xms64m -Xmx256m", KCHAOS_ZK_MYID=str(k))
        else:
            c.with_envs(**env_common, KCHAOS_CONFIG=controller_properties(s, k),
                        KCHAOS_FORMAT_ARGS=controller_format_args(s, k, self.directory_ids))
            c.with_env("KCHAOS_HEAP", "-Xms128m -Xmx384m")
        c.start()

    def _toxi_up(self) -> bool:
        try:
            assert self.toxi is not None
            self.toxi.version()
            return True
        except Exception:
            return False

    def stop(self) -> None:
        """Remove every container and network of this cluster (also after a failed start)."""
        if self._admin is not None:
            self._admin = None
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.stop()
                self._zk.close()
            self._zk = None
        for key, c in list(self._containers.items()):
            with contextlib.suppress(Exception):
                c.stop(force=True, delete_volume=True)
            self._containers.pop(key, None)
        for key, net in list(self._networks.items()):
            for attempt in range(5):
                try:
                    net.remove()
                    break
                except Exception:
                    time.sleep(0.3 * (attempt + 1))
            self._networks.pop(key, None)

    # ---------------------------------------------------------------- clients
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.client_ports.values())

    def client_config(self, client: str = "", **extra) -> dict:
        """Base librdkafka settings for clients of this cluster; a private client (one of
        ``settings.private_clients``) gets its own listener, so every connection it makes, to any
        broker it learns of, goes through its own proxies."""
        ports = self.private_ports.get(client, self.client_ports)
        servers = ",".join(f"127.0.0.1:{p}" for p in ports.values())
        return {"bootstrap.servers": servers, "broker.address.family": "v4", **extra}

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self.client_config(**{"socket.timeout.ms": 5000}), logger=LOG)
        return self._admin

    # ---------------------------------------------------------------- state
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

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Until a controller is elected and clients see every broker in the metadata."""
        want = set(self.settings.broker_ids)

        def ready() -> bool:
            self._raise_if_exited()
            try:
                st = self.describe(timeout_s=2)
                seen = set(self.admin.list_topics(timeout=2).brokers)
            except (KafkaException, NoNodeError, ClusterError):
                return False
            return set(st.brokers) >= want and seen >= want and st.controller >= 0

        until(ready, timeout_s, "brokers did not all register", error=ClusterError)

    def _raise_if_exited(self) -> None:
        stopped = {self.topo.node_key(n) for n in self._stopped}
        for key, c in self._containers.items():
            if key in stopped:
                continue
            w = c.get_wrapped_container()
            w.reload()
            if w.status == "exited":
                raise ClusterError(f"container {key} exited (code {w.attrs['State']['ExitCode']}):\n"
                                   + why_exited(w.logs().decode(errors="replace")))

    def wait_for(self, cond, timeout_s: float, what: str, interval: float = 0.25) -> float:
        """Poll ``cond(state)`` on fresh metadata; return the seconds it took."""
        last: list[object] = [None]

        def check() -> bool:
            try:
                st = self.describe(timeout_s=2)
                last[0] = st
                return bool(cond(st))
            except (KafkaException, TopicError, KeyError, ClusterError) as e:
                last[0] = e
                return False

        try:
            return until(check, timeout_s, what, interval, error=ClusterError)
        except ClusterError as e:
            raise ClusterError(f"{e}; last seen: {last[0]}") from None

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

    # ---------------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict[str, str] | None = None, validate: bool = True,
                     replica_assignment: list[list[int]] | None = None, timeout_s: float = 30.0) -> None:
        """Create a topic; refuses a replication factor above the broker count with a clear message.

        ``validate=False`` sends the request to Kafka as is, so tests can see Kafka's own refusal.
        """
        n = self.settings.brokers
        if validate and replica_assignment is None and replication_factor > n:
            raise TopicError(f"topic {name}: replication factor {replication_factor} is greater than the "
                             f"{n} brokers of this cluster (allowed: 1..{n})")
        if replica_assignment is not None:
            # confluent-kafka wants num_partitions = len(assignment) here, not the -1 its docs say.
            nt = NewTopic(name, num_partitions=len(replica_assignment), replica_assignment=replica_assignment,
                          config=config or {})
        else:
            nt = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                          config=config or {})
        deadline = time.monotonic() + timeout_s
        while True:
            fut = self.admin.create_topics([nt], operation_timeout=timeout_s, request_timeout=timeout_s)[name]
            try:
                fut.result(timeout=timeout_s + 5)
                return
            except KafkaException as e:
                err = e.args[0]
                if err.code() != KafkaError.INVALID_REPLICATION_FACTOR:
                    raise TopicError(f"topic {name}: {err.str()}") from e
                # Just after start the controller's own list of live brokers can still be empty
                # ("larger than available brokers: 0", seen in CI) although every broker has
                # registered: a factor the cluster can hold is refused only for a moment. Nothing
                # was created, so asking again is safe.
                if replication_factor <= n and replica_assignment is None and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise TopicError(f"topic {name}: Kafka refused replication factor {replication_factor}: "
                                 f"{err.str()}") from e

    # ---------------------------------------------------------------- process faults
    def _node(self, n: int):
        """The container of node n: a broker, or a coordination node (100+K, 200+K)."""
        if n not in self.settings.broker_ids and n not in self.settings.coordination_ids:
            raise ValueError(f"node {n} does not exist (brokers: {self.settings.broker_ids}; coordination nodes: "
                             f"{self.settings.coordination_ids})")
        return self._containers[self.topo.node_key(n)].get_wrapped_container()

    def kill(self, b: int) -> None:
        """kill -9 the node's JVM; the container (and its log dir) stays for a restart."""
        self._node(b).kill(signal="SIGKILL")
        self._stopped.add(b)
        self._killed.add(b)

    def power_loss(self, b: int) -> list[Cut]:
        """kill -9, then lose everything past each partition's recovery point (see powerloss.py).

        The cut is applied by the entrypoint when the broker is next started. A coordination node
        loses nothing a kill does not: the Raft log and ZooKeeper's transaction log are flushed before
        a write is acknowledged, so what is past the flush was never promised."""
        self.kill(b)
        if self.topo.is_coordination(b):
            return []
        w = self._node(b)
        stream, _ = w.get_archive(DATA_DIR)
        cuts = powerloss.plan_from_tar(b"".join(stream))
        w.put_archive(powerloss.SCRIPT_PATH.rsplit("/", 1)[0], powerloss.script_tar(cuts))
        return cuts

    def stop_broker(self, b: int, timeout_s: int = 30) -> None:
        """Clean shutdown: SIGTERM, so the broker runs its controlled shutdown."""
        self._node(b).stop(timeout=timeout_s)
        self._stopped.add(b)

    def start_broker(self, b: int) -> float:
        """Start a stopped broker; returns how long the start had to wait (see below), in seconds.

        In ZooKeeper mode a killed broker's registration lives until its session expires, and a
        broker started before that exits with NodeExists (seen on 2.8.2: "node already exists and
        owner does not match current session"). So, like a supervisor that restarts until it
        sticks, the start waits for the old registration to go."""
        waited = 0.0
        if b in self._killed and self.settings.mode == "zk" and self._zk is not None \
                and not self.topo.is_coordination(b):
            limit = self.settings.zookeeper_session_timeout_ms / 1000 * 2 + 5
            waited = until(lambda: not self._registered_in_zk(b), limit, "", 0.1, error=None)
        self._node(b).start()
        self._stopped.discard(b)
        self._killed.discard(b)
        return waited

    def _registered_in_zk(self, b: int) -> bool:
        """Whether broker b's registration is still in ZooKeeper. While ZooKeeper does not answer
        (an ensemble electing a leader; the harness's own session expiring meanwhile, after which
        the client opens a new one) the answer is "still there": the caller asks again."""
        assert self._zk is not None
        try:
            return self._zk.exists(f"/brokers/ids/{b}") is not None
        except (KazooException, KazooTimeoutError):
            return True

    def pause(self, b: int) -> None:
        """Freeze every process of the node (SIGSTOP-like, via the cgroup freezer)."""
        self._node(b).pause()
        self._paused.add(b)

    def resume(self, b: int) -> None:
        self._node(b).unpause()
        self._paused.discard(b)

    # ---------------------------------------------------------------- network faults
    def _proxy_names(self) -> set[str]:
        nodes = [*self.settings.broker_ids, *self.settings.coordination_ids]
        return {p.name for p in self.topo.proxies({n: "0" for n in nodes})}

    def _check_links(self, links: Iterable[str]) -> list[str]:
        links = list(links)
        known = self._proxy_names()
        bad = [x for x in links if x not in known]
        if bad:
            raise ValueError(f"unknown links {bad}; links look like client-1, repl-1-2, "
                             f"{self.topo.coordination(1)[0]}")
        return links

    def cut(self, links: Iterable[str], stream: str = "both", tag: str = "") -> None:
        """Black-hole links: bytes stop flowing (TCP stays open, as in a real partition).

        ``tag`` (here and in the other toxics) names this fault's toxics apart from another's on the
        same link, so faults that overlap there can be applied and healed each on its own."""
        assert self.toxi is not None
        streams = STREAMS if stream == "both" else (stream,)
        for link in self._check_links(links):
            for st in streams:
                self.toxi.add_toxic(link, toxic_name(CUT_TOXIC, st, tag), "timeout", st, {"timeout": 0})

    def cut_one_way(self, src: int, dst: int, tag: str = "") -> None:
        """Bytes from node src to node dst (two brokers, or two coordination nodes) are dropped; dst to
        src still flows."""
        assert self.toxi is not None
        for link, st in self.topo.one_way(src, dst):
            self.toxi.add_toxic(link, toxic_name(CUT_TOXIC, st, tag), "timeout", st, {"timeout": 0})

    def latency(self, links: Iterable[str], ms: int, jitter_ms: int = 0, stream: str = "both", tag: str = "") -> None:
        """Add ``ms`` (+- jitter) to each direction of the links, or to one (``stream``)."""
        assert self.toxi is not None
        for link in self._check_links(links):
            for st in STREAMS if stream == "both" else (stream,):
                self.toxi.add_toxic(link, toxic_name(LATENCY_TOXIC, st, tag), "latency", st,
                                    {"latency": ms, "jitter": jitter_ms})

    def hold(self, links: Iterable[str], tag: str = "") -> None:
        """Hold every byte on the links, both ways, until the toxic comes off; then all of it flows
        (Toxiproxy's latency toxic passes what it holds on when it is removed)."""
        assert self.toxi is not None
        for link in self._check_links(links):
            for st in STREAMS:
                self.toxi.add_toxic(link, toxic_name(HOLD_TOXIC, st, tag), "latency", st, {"latency": HOLD_MS})

    def bandwidth(self, links: Iterable[str], kbytes_per_s: int, tag: str = "") -> None:
        assert self.toxi is not None
        for link in self._check_links(links):
            for st in STREAMS:
                self.toxi.add_toxic(link, toxic_name(BANDWIDTH_TOXIC, st, tag), "bandwidth", st,
                                    {"rate": kbytes_per_s})

    def restore(self, links: Iterable[str], only: str | None = None, tag: str | None = None) -> None:
        """Undo every fault on the links, or only the toxics whose name starts with ``only`` and,
        given a ``tag``, carries it (so healing one fault leaves an overlapping one in place)."""
        assert self.toxi is not None
        for link in self._check_links(links):
            if only is None and tag is None:
                self.toxi.set_enabled(link, True)
            for t in self.toxi.toxics(link):
                if (only is None or t["name"].startswith(only)) and (tag is None or t["name"].endswith(f"-{tag}")):
                    self.toxi.remove_toxic(link, t["name"])

    def heal_network(self) -> None:
        assert self.toxi is not None
        self.toxi.reset()

    def heal(self) -> None:
        """Undo every fault: network healed, paused brokers resumed, stopped brokers started."""
        self.heal_network()
        for b in sorted(self._paused):
            self.resume(b)
        for b in sorted(self._stopped):
            self.start_broker(b)

    # ---------------------------------------------------------------- dynamic quorum (KIP-853)
    def _quorum_tool(self, n: int, args: list[str]) -> str:
        """Kafka's metadata-quorum tool, run in coordination node n's own container (so it reaches
        the other controllers through that node's links); its output, or ClusterError."""
        boot = ",".join(f"controller-{k}:{controller_port(k)}" for k in range(1, self.settings.quorum_size + 1))
        code, out = self.exec(self.topo.node_key(n), [
            "/opt/kafka/bin/kchaos-entrypoint.sh", "tool", "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-controller", boot, *args])
        if code != 0:
            raise ClusterError(f"metadata-quorum {' '.join(args)} on {self.topo.node_key(n)} failed "
                               f"(exit {code}): {out.strip()[-400:]}")
        return out

    def remove_controller(self, n: int) -> None:
        """Take controller n (node id) out of the voters; it goes on as an observer. Removing the
        active controller makes it resign once the removal is committed."""
        k = self.topo.index(n)
        self._quorum_tool(n, ["remove-controller", "--controller-id", str(n),
                              "--controller-directory-id", self.directory_id(k)])

    def add_controller(self, n: int) -> None:
        """Make controller n (running, an observer) a voter, from its own configuration and log dir."""
        self._quorum_tool(n, ["--command-config", "/etc/kchaos/server.properties", "add-controller"])

    def directory_id(self, k: int) -> str:
        """Controller K's log directory id: the one its format was given, or (a spare) read back."""
        if k in self.directory_ids:
            return self.directory_ids[k]
        meta = self.files(self.topo.node_key(CONTROLLER_ID_BASE + k), DATA_DIR, "meta.properties")["meta.properties"]
        found = re.search(rb"^directory\.id=(\S+)", meta, re.M)
        if found is None:
            raise ClusterError(f"controller {k} has no directory.id in meta.properties")
        return found.group(1).decode()

    # ---------------------------------------------------------------- files
    def exec(self, key: str, cmd: list[str]) -> tuple[int, str]:
        """Run a command in a container (e.g. 'kafka-1'); returns (exit code, combined output)."""
        res = self._containers[key].exec(cmd)
        return res.exit_code, (res.output or b"").decode(errors="replace")

    def files(self, key: str, directory: str, pattern: str) -> dict[str, bytes]:
        """The files matching a shell ``pattern`` under ``directory`` of a container, by their path
        relative to it: one tar stream through the engine (tar is in every image kchaos builds)."""
        res = self._containers[key].get_wrapped_container().exec_run(
            ["sh", "-c", f"cd {shlex.quote(directory)} && tar cf - {pattern}"], stdout=True, stderr=False)
        if res.exit_code != 0:
            raise RuntimeError(f"{key}: could not read {directory}/{pattern} (exit {res.exit_code})")
        with tarfile.open(fileobj=io.BytesIO(res.output)) as tar:
            return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def container_keys(self) -> list[str]:
        return sorted(k for k in self._containers if k != "toxiproxy")

    def logs(self, key: str, tail: int | str = 200) -> str:
        return self._containers[key].get_wrapped_container().logs(tail=tail).decode(errors="replace")

    def describe_settings(self) -> dict:
        """What run.json records about the cluster."""
        return {
            "name": self.name,
            "kafka_image": self.kafka_image,
            "toxiproxy_image": self.toxiproxy_image,
            "client_ports": self.client_ports,
            "private_client_ports": self.private_ports,
            "settings": self.settings.model_dump(),
            "coordination": {self.topo.node_key(n): self.topo.index(n) for n in self.settings.coordination_ids},
            "coordination_config": (zookeeper_config(self.settings) if self.settings.mode == "zk" else
                                    {k: controller_properties(self.settings, k)
                                     for k in range(1, len(self.settings.coordination_ids) + 1)}),
            "broker_properties": {b: broker_properties(self.settings, b, p, [self.private_ports[n][b] for n in
                                                                             self.settings.private_clients])
                                  for b, p in self.client_ports.items()},
        }
