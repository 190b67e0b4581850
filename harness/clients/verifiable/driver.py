"""The driver for any client that speaks Kafka's verifiable-client protocol: by default Apache
Kafka's own ``VerifiableProducer`` and ``VerifiableConsumer`` (kafka-tools, from the image of the
table's ``client_version``, default the broker's: build.py), or any executable named by a table's
``config."kchaos.command"`` that takes the same flags and prints the same events, as Kafka's system
tests plug other clients in (kafkatest's ``verifiable_client.py``).

kchaos starts the tool with its documented flags and reads its events (events.py); nothing of kchaos
runs inside it. A producer is one process started just before the workload starts, which waits for
its ``startup_complete`` and its first acknowledged send, as it waits for every library's producer
to be made and connected (the tool sends as soon as it is up and takes no "go", so its first sends
come a moment before the workload's start); SIGTERM stops it (its shutdown hook flushes and closes).
A consumer is a VerifiableConsumer alone in a group of its own (the tool always subscribes), reading
every partition from the start. A group's members are VerifiableConsumers, acted on as every
library's members are (groups.py): SIGKILL, SIGTERM (a clean leave), and for a freeze SIGSTOP where
the process stands, since the tool has no point to stop itself at; their commits are the
coordinator's own record (events.py says why).
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import zlib
from pathlib import Path

from harness.clients.groups import Group, Member
from harness.clients.process import bootstrap
from harness.clients.verifiable import events
from harness.clients.verifiable.build import tool_command
from harness.cluster import KafkaCluster, reaper
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec

COMMAND_KEY = "kchaos.command"  # a table's config key naming another executable that speaks the protocol
LOG4J = Path(__file__).resolve().parent / "log4j.properties"  # the tool's log to stderr (Kafka 3.x: reload4j)
LOG4J2 = Path(__file__).resolve().parent / "log4j2.properties"  # the same for Kafka 4.x (log4j 2)
REPEATING_KEYS = 997  # keys 0..996 over the records: a failed send's partition is its key's (events.py)
ACKS = {"0": "0", "1": "1", "all": "-1"}
ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
             "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
             "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}
STOP_S = 30.0  # a tool's clean stop (a producer flushes what it holds) before it is killed
COUNT_EVERY_S = 0.05  # how often the stdout file's new lines are counted
LIBRARY = "verifiable"
log = logging.getLogger(f"kchaos.{LIBRARY}")


def command(version: str, role: str, config: dict) -> list[str]:
    """The executable of a table's clients: its ``kchaos.command``, else Kafka ``version``'s tool
    with its log on stderr."""
    if COMMAND_KEY in config:
        return shlex.split(str(config[COMMAND_KEY]))
    java, *rest = tool_command(version, role)
    return [java, f"-Dlog4j.configuration=file:{LOG4J}", f"-Dlog4j2.configurationFile={LOG4J2}", *rest]


def properties_file(directory: Path, props: dict, name: str = "client") -> Path:
    """The client's properties as a Java properties file (``--producer.config``, ``--consumer.config``),
    ``directory/NAME.properties``."""
    path = directory / f"{name}.properties"
    lines = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in props.items() if k != COMMAND_KEY]
    path.write_text("\n".join(lines) + "\n")
    return path


def value_prefix(name: str) -> int:
    """The integer a producer's values start with (``--value-prefix``): its name's CRC-32, so the
    values of two producers of a run differ however they are named."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


class ToolProcess:
    """One verifiable tool's process, started by ``start`` and stopped when ``stop`` is set: its stdout
    written by the tool itself to a file of its own, read into events once the process has ended, and
    meanwhile only counted (lines naming ``counted``, for what triggers count live); other stdout lines
    and its stderr into the run's client log (``kchaos.verifiable NAME ...``); a failure of its own
    fails the run with its name.

    Why a file and not a pipe read line by line: a tool blocks on its ``println`` when its stdout is not
    read fast enough, and the producer prints from the client's I/O thread, so a reader parsing JSON in
    Python as it comes halved the tool's throughput (benchmarks/verifiable.py); counting bytes in a file
    the tool writes costs it nothing. ``directory`` (removed when the process has been read) holds the
    file and whatever else the caller wrote for the tool."""

    counted = b""  # the event whose lines are counted as they come (b"": none)

    def __init__(self, name: str, argv: list[str], stop: threading.Event | None = None, stop_s: float = STOP_S,
                 directory: Path | None = None):
        self.cname, self.argv = name, argv
        self.stop_event, self.stop_s = stop or threading.Event(), stop_s
        self.failure: BaseException | None = None
        self.events: list[dict] = []
        self.proc: subprocess.Popen | None = None
        self.seen = 0  # lines naming ``counted`` so far
        self._dir = directory or Path(tempfile.mkdtemp(prefix=f"kchaos-verifiable-{name}-"))
        self._tail: list[str] = []
        self._threads: list[threading.Thread] = []
        self._waiter = threading.Thread(target=self._run, name=f"{LIBRARY}-{name}", daemon=True)

    @property
    def stdout_path(self) -> Path:
        return self._dir / f"{self.cname}.events"

    def start(self) -> None:
        self._waiter.start()

    def started(self) -> bool:
        """Whether its stdout holds the protocol's ``startup_complete`` event (the tool's first line)."""
        try:
            return b'"startup_complete"' in self.stdout_path.read_bytes()[:65536]
        except FileNotFoundError:
            return False

    def launch_and_wait_started(self, timeout_s: float) -> None:
        """Launch the process and wait until it says ``startup_complete``, ends, or ``timeout_s`` passes
        (a tool that never says it fails the run once stopped: ``failed``)."""
        self.launch()
        deadline = time.monotonic() + timeout_s
        while not self.started() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(COUNT_EVERY_S)

    def join(self, timeout: float | None = None) -> None:
        self._waiter.join(timeout)

    def _run(self) -> None:
        if self.failure is not None:  # it could not be started: ready says why
            return
        try:
            if self.proc is None:
                self.launch()
            self.stop_event.wait()
            if why := self.failed(self.terminate(self.stop_s)):
                self.failure = RuntimeError(why)
            self.finished()
        except BaseException as e:  # a tool that cannot be started fails the run with its name
            self.failure = e

    def finished(self) -> None:
        """What it recorded, read once the process has ended."""

    def launch(self) -> None:
        with open(self.stdout_path, "wb") as out:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE,
                                         text=True, bufsize=1, preexec_fn=reaper.die_with_parent)
        for target in (self._count, self._log):
            t = threading.Thread(target=target, name=f"{LIBRARY}-{self.cname}", daemon=True)
            t.start()
            self._threads.append(t)

    def _count(self) -> None:
        """``seen``: complete lines of the stdout file naming ``counted``, as the tool writes them."""
        if not self.counted:
            return
        token, carry = b'"' + self.counted + b'"', b""
        with open(self.stdout_path, "rb") as f:
            while True:
                ended = self.proc is None or self.proc.poll() is not None
                chunk = carry + f.read()
                complete = chunk.rfind(b"\n") + 1
                self.seen += chunk.count(token, 0, complete)
                carry = chunk[complete:]
                if ended:
                    return
                time.sleep(COUNT_EVERY_S)

    def _log(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._note(raw.rstrip("\n"))

    def _note(self, line: str) -> None:
        log.info("%s %s", self.cname, line)
        self._tail = [*self._tail[-19:], line]

    def _read(self) -> None:
        """The stdout file's events; its other lines to the client's log."""
        with open(self.stdout_path, errors="replace") as f:
            found, other = events.parse(f)
        self.events = found
        for text in other:
            self._note(str(text))

    def terminate(self, timeout_s: float = STOP_S) -> int | None:
        """SIGTERM (the tool's shutdown hook closes its client), SIGKILL after ``timeout_s``; its exit
        code, its stdout read into ``events`` and its directory removed."""
        if self.proc is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for t in self._threads:
            t.join(5)
        self._read()
        shutil.rmtree(self._dir, ignore_errors=True)
        return self.proc.returncode

    def failed(self, code: int | None) -> str | None:
        """Why the process failed the run: it exited with an error of its own, or never said
        ``startup_complete`` (an executable that speaks another protocol)."""
        said = " | ".join(self._tail[-8:])
        if code not in (0, 143, -signal.SIGTERM):
            return f"{LIBRARY} {self.cname} ({shlex.join(self.argv[:1])}) exited {code}: {said}"
        if not any(e["name"] == "startup_complete" for e in self.events):
            return (f"{LIBRARY} {self.cname} ({shlex.join(self.argv[:1])}) printed no startup_complete event: it does "
                    f"not speak Kafka's verifiable-client protocol: {said}")
        return None


class VerifiableProducer(ToolProcess):
    """A producer table as a VerifiableProducer: ``--throughput`` the table's rate, ``--acks`` its
    acks, everything else (idempotence, retries, in-flight, linger, timeouts, its ``config``) in the
    properties file, which the tool applies over its own defaults (it sets ``retries=0`` itself)."""

    counted = b"producer_send_success"

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str):
        self.pname, self.spec, self.topic, self.partitions = name, spec, topic, partitions
        self.prefix = value_prefix(name)
        props = {"bootstrap.servers": bootstrap(cluster, name), "client.id": name,
                 "enable.idempotence": spec.idempotence, "retries": spec.retries,
                 "max.in.flight.requests.per.connection": spec.max_in_flight, "linger.ms": spec.linger_ms,
                 "delivery.timeout.ms": spec.delivery_timeout_ms,
                 "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
                 "metadata.max.age.ms": 5000, **spec.config}
        directory = Path(tempfile.mkdtemp(prefix=f"kchaos-verifiable-{name}-"))
        argv = [*command(version, "producer", spec.config), "--topic", topic,
                "--bootstrap-server", props["bootstrap.servers"], "--acks", ACKS[spec.acks],
                "--throughput", str(int(spec.rate)), "--value-prefix", str(self.prefix),
                "--repeating-keys", str(REPEATING_KEYS), "--producer.config", str(properties_file(directory, props))]
        super().__init__(name, argv, stop, spec.delivery_timeout_ms / 1000 + STOP_S, directory)
        self._acked: int | None = None  # once the process has been read

    @property
    def sent(self) -> int:
        return max((events.seq_of(e["value"]) + 1 for e in self.events[-50:] if "value" in e), default=0)

    def acked(self) -> int:
        """Acknowledged so far: the lines counted while the tool runs, its events once it has ended."""
        return self.seen if self._acked is None else self._acked

    def _read(self) -> None:
        super()._read()
        self._acked = sum(e["name"] == "producer_send_success" for e in self.events)

    def ready(self, timeout_s: float) -> None:
        """The tool started and its first send acknowledged, waited for: a JVM's start and its first
        metadata and connection, seconds on a loaded machine, are not taken from the workload's time.
        The tool sends as soon as it is up and its first send waits for the metadata (the Java
        driver's producer asks for it before it says it is ready); a tool that is late catches up
        at full speed, and a stop in the middle of that burst interrupts a send in progress."""
        deadline = time.monotonic() + timeout_s
        try:
            self.launch_and_wait_started(timeout_s)
            while self.seen == 0 and self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(COUNT_EVERY_S)
        except BaseException as e:  # as in _run: a tool that cannot be started fails the run with its name
            self.failure = e

    def columns(self) -> dict[str, list]:
        from harness.clients.java_errors import classify

        rows = events.producer_rows(self.events, self.pname, self.prefix, self.topic, self.spec.acks,
                                    self.partitions, REPEATING_KEYS, lambda err: classify(err, self.spec.retries))
        cols = ("value", "producer", "seq", "topic", "partition", "acks", "status", "offset", "send_ts_ms",
                "ack_ts_ms", "error")
        return {c: [r[c] for r in rows] for c in cols}

    def txns(self) -> list[dict]:
        return []

    def kill(self) -> None:
        raise ValueError(f"producer {self.pname} is not transactional; client_kill needs a transactional producer")

    def send_one(self, partition: int) -> None:
        raise ValueError(f"producer {self.pname}: Kafka's verifiable producer takes no send steps (quiet = false)")


def consumer_args(topic: str, group: str, servers: str, props_file: Path, protocol: str = "classic",
                  assignor: str = "range", session_timeout_ms: int | None = None,
                  auto_commit: bool = False) -> list[str]:
    """VerifiableConsumer's flags: every record printed (``--verbose``), from the earliest offset."""
    args = ["--topic", topic, "--group-id", group, "--bootstrap-server", servers, "--verbose",
            "--reset-policy", "earliest", "--consumer.config", str(props_file)]
    if protocol == "consumer":
        args += ["--group-protocol", "consumer"]
    else:
        args += ["--assignment-strategy", ASSIGNORS[assignor]]
        if session_timeout_ms is not None:
            args += ["--session-timeout", str(session_timeout_ms)]
    return args + (["--enable-autocommit"] if auto_commit else [])


class VerifiableConsumer(ToolProcess):
    """A consumer table: a VerifiableConsumer alone in a group of its own, every partition from the start."""

    def __init__(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str, version: str):
        self.topic, self.isolation = topic, isolation
        self.rows: list[dict] = []
        directory = Path(tempfile.mkdtemp(prefix=f"kchaos-verifiable-{name}-"))
        servers = bootstrap(cluster, "")
        props = {"isolation.level": isolation, "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000, **spec.config}
        argv = [*command(version, "consumer", spec.config),
                *consumer_args(topic, f"kchaos-reader-{topic}-{name}", servers, properties_file(directory, props))]
        super().__init__(name, argv, stop, directory=directory)

    def highest_read(self) -> None:
        """Its reads are known once the process has ended."""
        return None

    def finished(self) -> None:
        lines = events.member_lines(self.events, self.cname, None, self.isolation)
        self.rows = [{k: v for k, v in r.items() if k != "t"} for r in lines if r["t"] == "read"]


class VerifiableMember(Member):
    """A group member as a VerifiableConsumer: its stdout's events in ``work/NAME.events`` (read into
    the member's lines by ``VerifiableGroup.lines``), its log in ``work/NAME.log``."""

    def __init__(self, *args, tool: list[str], servers: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.tool, self.servers = tool, servers

    def start(self) -> None:
        with self._lock:
            self.incarnation += 1
            props = properties_file(self.work, {**self.conf, "client.id": self.consumer}, self.consumer)
            argv = [*self.tool, *consumer_args(self.topic, self.spec.group_id, self.servers, props, self.spec.protocol,
                                               self.spec.assignor, self.spec.session_timeout_ms,
                                               self.spec.commit == "auto")]
            self.proc = self.spawner.submit(self._spawn_tool, argv).result()

    def _spawn_tool(self, argv: list[str]) -> subprocess.Popen:
        events_file, log_file = self.work / f"{self.consumer}.events", self.work / f"{self.consumer}.log"
        with open(events_file, "w") as out, open(log_file, "w") as err:
            return subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    preexec_fn=reaper.die_with_parent)

    def pause(self, wait_s: float = 0.0) -> None:
        """client_pause: SIGSTOP where the process stands (the tool has no point to stop itself at)."""
        self.signal(signal.SIGSTOP)

    def failure(self) -> str | None:
        """As every member's, and a process that ended on its own, exit 0, without a
        ``startup_complete`` event (an executable that speaks another protocol; one killed or stopped
        by a fault before its start is not one)."""
        if why := super().failure():
            return why
        if self.proc is None or self.proc.poll() != 0:
            return None
        found, _ = events.parse((self.work / f"{self.consumer}.events").read_text(errors="replace").splitlines())
        if not any(e["name"] == "startup_complete" for e in found):
            return "it printed no startup_complete event: it does not speak Kafka's verifiable-client protocol: " + \
                (self.work / f"{self.consumer}.log").read_text(errors="replace")[-500:]
        return None


def member_conf(g: GroupSpec, base: dict) -> dict:
    """A member's properties beyond the tool's flags (its bootstrap servers, group, assignor, session
    and auto-commit are flags)."""
    conf = {"isolation.level": g.isolation_level, "max.poll.interval.ms": g.max_poll_interval_ms,
            "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000}
    if g.protocol == "classic":
        conf["heartbeat.interval.ms"] = max(200, g.session_timeout_ms // 6)
    if g.commit == "auto":
        conf["auto.commit.interval.ms"] = g.auto_commit_interval_ms
    return {**conf, **g.config}


class VerifiableGroup(Group):
    """A group of VerifiableConsumers; their lines are read from the events each process printed."""

    def __init__(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path, version: str):
        super().__init__(spec, cluster, topic, partitions, work, conf=member_conf, reports_commits=False)
        tool = command(version, "consumer", spec.config)
        self.members = [VerifiableMember(m.name, spec, m.conf, topic, work, self.spawner, tool=tool,
                                         servers=bootstrap(cluster, m.name)) for m in self.members]

    def lines(self, who: str = "member_file") -> list[dict]:
        out = []
        for path in sorted(self.work.glob("*.events")):
            found, _ = events.parse(path.read_text(errors="replace").splitlines())
            out += [{**r, who: path.stem} for r in
                    events.member_lines(found, path.stem, self.spec.name, self.spec.isolation_level)]
        return out


class VerifiableDriver:
    """Makes a run's clients as verifiable-protocol processes of Kafka ``version``'s tools (or a table's command)."""

    name = LIBRARY

    def __init__(self, version: str):
        self.lib_version = version
        self.version = f"kafka-tools {version}"

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> VerifiableProducer:
        return VerifiableProducer(name, spec, cluster, topic, partitions, stop, self.lib_version)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> VerifiableConsumer:
        return VerifiableConsumer(name, spec, cluster, topic, partitions, stop, isolation, self.lib_version)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event):
        raise ValueError("the verifiable-client protocol has no copier (its registry line refuses the table)")

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        return VerifiableGroup(spec, cluster, topic, partitions, work, self.lib_version)

    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int):
        raise ValueError("the verifiable-client protocol has no share consumer (its registry line refuses the table)")


def driver_for(version: str) -> VerifiableDriver:
    return VerifiableDriver(version)
