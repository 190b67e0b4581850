"""A real Kafka cluster on Testcontainers, with Toxiproxy in every link a fault must cut.

Containers: one Toxiproxy, a ZooKeeper ensemble or a KRaft quorum (each node in its own container),
N brokers. See ``topology.py`` for how the networks force every connection through a proxy.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shlex
import tarfile
import time
from pathlib import Path

import docker
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

# Ryuk cannot be pulled on these machines; harness.cluster.reaper does its job by label.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


from docker.errors import DockerException
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from harness.cluster import reaper
from harness.cluster.broker_log import TruncationFollower
from harness.cluster.clocks import CLOCK_ENV, ClockFaults
from harness.cluster.disks import CAPABILITIES, DEVICES, DISK_ENV, LOG_DIRS_ENV, DiskFaults
from harness.cluster.errors import ClusterError
from harness.cluster.formation import Formation
from harness.cluster.links import LinkFaults
from harness.cluster.nodes import NodeFaults
from harness.cluster.operations import Operations
from harness.cluster.quorum_changes import QuorumChanges
from harness.cluster.settings import (
    PROXY_CLIENT_BASE,
    ClusterImages,
    ClusterSettings,
    broker_properties,
    controller_format_args,
    controller_properties,
    new_cluster_id,
    zookeeper_config,
)
from harness.cluster.state import StateReads
from harness.cluster.state_types import ClusterState
from harness.cluster.topics import Topics
from harness.cluster.topology import Topology
from harness.cluster.toxiproxy import Toxiproxy
from harness.cluster.upgrades import Upgrades
from harness.waiting import until

testcontainers_config.ryuk_disabled = True

LOG = logging.getLogger("kchaos.cluster")


def joined_output(demuxed: tuple[bytes | None, bytes | None] | None) -> str:
    """A command's stdout followed by its stderr, each whole, as text."""
    out, err = demuxed or (None, None)
    text = (out or b"").decode(errors="replace")
    if err:
        text += ("" if not text or text.endswith("\n") else "\n") + err.decode(errors="replace")
    return text


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


LOG_LEVELS_ENV = "KCHAOS_LOG_LEVELS"  # read by docker/kafka/kchaos-entrypoint.sh


class KafkaCluster(StateReads, Topics, Operations, NodeFaults, ClockFaults, DiskFaults, LinkFaults, QuorumChanges,
                   Upgrades, Formation):
    """Start, fault and inspect a cluster. Use as a context manager; ``stop`` is idempotent.

    This class holds the containers, networks and proxies (start, stop, clients, files); each other
    concern is a file of its own, mixed in: its state and the waits on it (state.py), topics
    (topics.py), faults on a node's process (nodes.py) and on links (links.py), KIP-853 quorum
    changes (quorum_changes.py), rolling and feature upgrades (upgrades.py), a fault while it forms
    (formation.py)."""

    def __init__(self, settings: ClusterSettings, images: ClusterImages, name: str | None = None,
                 logs_on_failure: Path | None = None):
        self.settings = settings
        # where a start that fails writes every container's log before the cluster is removed (a run's
        # logs/): a cluster that did not come up, or did not form after its formation fault, is explained
        # by its nodes' own logs
        self.logs_on_failure = logs_on_failure
        self.topo = Topology(self.settings.broker_ids, self.settings.mode, tuple(self.settings.private_clients),
                             tuple(self.settings.coordination_ids))
        self.name = name or f"kc{reaper.SESSION_ID}{os.urandom(2).hex()}"
        if settings.faultable_disks and not images.faultable_disks:
            raise ClusterError("a cluster with faultable_disks needs the Kafka image with kchaos-diskfs: "
                               "cluster_images(..., disks=True)")
        self.kafka_image = images.kafka
        self.toxiproxy_image = images.toxiproxy
        self.tool_libs = images.tool_libs
        self.cluster_id = new_cluster_id()
        self.runs = 0  # runs started on this cluster: more than one when a caller keeps it between runs
        # KIP-853: each controller's log directory id, given to every controller's format
        self.directory_ids = {k: new_cluster_id() for k in range(1, self.settings.quorum_size + 1)}
        self.node_versions: dict[int, str] = {}  # nodes a rolling upgrade moved off the cluster's version
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
        self._boot_restarts: dict[int, int] = {}  # broker -> times started again in the current wait_ready
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
            if self.logs_on_failure is not None:
                with contextlib.suppress(Exception):
                    self.write_logs(self.logs_on_failure, missing_ok=True)
            self.stop()
            raise
        return self

    def _start(self, timeout_s: float) -> None:
        s = self.settings
        core = self._network("core", internal=False)
        nets = {b: self._network(f"net{b}", internal=True) for b in s.broker_ids}
        nets |= {n: self._network(f"qnet{self.topo.index(n)}", internal=True) for n in s.coordination_ids}
        self._start_toxiproxy(core, nets)
        env_common = {"KCHAOS_HEAP": s.heap, "KCHAOS_CLUSTER_ID": self.cluster_id, **self._node_env(),
                      **({DISK_ENV: "1"} if s.faultable_disks else {})}
        started = time.monotonic()
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
            self._with_faultable_disk(c)
            private = [self.private_ports[n][b] for n in s.private_clients]
            c.with_envs(**env_common, KCHAOS_CONFIG=broker_properties(s, b, self.client_ports[b], private),
                        **{LOG_DIRS_ENV: str(s.log_dirs)})
            c.start()
        self.fault_formation(started)
        try:
            self.wait_ready(timeout_s, restart_lost_boots=s.formation is None)
        except ClusterError as e:
            raise self.formation_failed(e) from e
        self.formed()

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
        if s.losable_answers:  # before any node starts: the toxics read each connection from its first byte
            for link in topo.kafka_links():
                self.toxi.add_kafka_toxics(link)

    def _start_coordination(self, n: int, net: Network, env_common: dict[str, str]) -> None:
        """Start ZooKeeper server K or KRaft controller K on its own network (not waiting for it)."""
        s, k = self.settings, self.topo.index(n)
        key = self.topo.node_key(n)
        c = self._container(key, self.kafka_image, net, [self.topo.node_name(k), self.topo.server_name(k)],
                            command="zookeeper" if s.mode == "zk" else "controller")
        if s.mode == "zk":
            c.with_envs(KCHAOS_CONFIG=zookeeper_config(s, k), KCHAOS_HEAP="-Xms64m -Xmx256m", KCHAOS_ZK_MYID=str(k),
                        **self._node_env())
        else:
            c.with_envs(**env_common, KCHAOS_CONFIG=controller_properties(s, k),
                        KCHAOS_FORMAT_ARGS=controller_format_args(s, k, self.directory_ids))
            c.with_env("KCHAOS_HEAP", "-Xms128m -Xmx384m")
            self._with_faultable_disk(c)
        c.start()

    def _with_faultable_disk(self, c: DockerContainer) -> None:
        """What the pass-through log directory needs: the FUSE device and the right to mount it."""
        if self.settings.faultable_disks:
            c.with_kwargs(**{**c._kwargs, "devices": DEVICES, "cap_add": CAPABILITIES})

    def _node_env(self) -> dict[str, str]:
        """What every node's entrypoint reads besides its role's settings: libfaketime preloaded (a
        skewable wall clock), whether the JVM starts from the image's class-data archive, and the
        loggers whose levels differ from the image's log4j configuration (``name=LEVEL,...``)."""
        s = self.settings
        levels = ",".join(f"{name}={level}" for name, level in s.log_levels.items())
        return {**({CLOCK_ENV: "1"} if s.skewable_clocks else {}),
                **({} if s.class_data_archive else {"KCHAOS_CDS": "0"}),
                **({LOG_LEVELS_ENV: levels} if levels else {})}

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










    # ---------------------------------------------------------------- topics

    # ---------------------------------------------------------------- process faults








    # ---------------------------------------------------------------- network faults










    # ---------------------------------------------------------------- dynamic quorum (KIP-853)




    # ---------------------------------------------------------------- files
    def exec(self, key: str, cmd: list[str]) -> tuple[int, str]:
        """Run a command in a container (e.g. 'kafka-1'); returns (exit code, its output: stdout, then
        stderr). The two are kept apart and joined whole: the engine interleaves them chunk by chunk,
        which can cut a line of a tool's output (a DumpLogSegments record) with a warning."""
        res = self._containers[key].get_wrapped_container().exec_run(cmd, demux=True)
        return res.exit_code, joined_output(res.output)

    def files(self, key: str, directory: str, pattern: str) -> dict[str, bytes]:
        """The files matching a shell ``pattern`` under ``directory`` of a container, by their path
        relative to it: one tar stream through the engine (tar is in every image kchaos builds)."""
        res = self._containers[key].get_wrapped_container().exec_run(
            ["sh", "-c", f"cd {shlex.quote(directory)} && tar cf - {pattern}"], stdout=True, stderr=False)
        if res.exit_code != 0:
            raise RuntimeError(f"{key}: could not read {directory}/{pattern} (exit {res.exit_code})")
        try:
            with tarfile.open(fileobj=io.BytesIO(res.output)) as tar:
                return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
        except tarfile.TarError as e:  # a stream the engine cut or garbled on a loaded machine
            raise RuntimeError(f"{key}: the tar stream of {directory}/{pattern} was unreadable ({e})") from e

    def container_keys(self) -> list[str]:
        return sorted(k for k in self._containers if k != "toxiproxy")

    def follow_truncations(self) -> TruncationFollower:
        """Every broker's log followed from now on for the truncations it writes (close it when done)."""
        return TruncationFollower({b: self._node(b) for b in self.settings.broker_ids})

    def write_logs(self, logs_dir: Path, missing_ok: bool = False) -> None:
        """Every container's own log (but Toxiproxy's) into ``logs_dir`` as KEY.log, for whoever explains
        an anomaly; with ``missing_ok`` a container already gone is left out (a run that failed)."""
        logs_dir.mkdir(parents=True, exist_ok=True)
        for key in self.container_keys():
            try:
                (logs_dir / f"{key}.log").write_text(self.logs(key, tail="all"))
            except (DockerException, ClusterError) as e:
                if not missing_ok:
                    raise
                LOG.warning("no log of %s: %s", key, e)

    def logs(self, key: str, tail: int | str = 200, timestamps: bool = False) -> str:
        """A container's log; with ``timestamps``, each line after the engine's own RFC 3339 time of it."""
        return self._containers[key].get_wrapped_container().logs(tail=tail, timestamps=timestamps).decode(
            errors="replace")

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
            "coordination_config": {k: (zookeeper_config(self.settings, k) if self.settings.mode == "zk" else
                                        controller_properties(self.settings, k))
                                    for k in range(1, len(self.settings.coordination_ids) + 1)},
            "broker_properties": {b: broker_properties(self.settings, b, p, [self.private_ports[n][b] for n in
                                                                             self.settings.private_clients])
                                  for b, p in self.client_ports.items()},
        }
