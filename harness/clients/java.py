"""The driver for Apache Kafka's Java client (kafka-clients): every client is a JVM process of its own
running ``java_src/kchaos/Driver.java``, built at set-up from Maven Central (setup/java_driver.py)
for the broker's Kafka version. The process protocol (docs/drivers.md): a config file in, commands on
stdin, JSON lines on stdout, the history in a file, the library's log on stderr (written to the run's
``logs/clients.log`` through the ``kchaos.java`` logger).

Producers (plain and idempotent), consumers and consumer-group members (GroupMember.java, acted on
and read as librdkafka's members are: groups.py) are built; transactional producers and the copier
are refused at scenario validation (java_config.py) until they are. The final read
and a group's final offsets are the harness's own measurement of the brokers, whatever client is
under test: they are read with librdkafka, as every run's are.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from harness.clients.confluent import DRIVER as LIBRDKAFKA  # the harness's own reader of the brokers
from harness.cluster import KafkaCluster
from harness.groups import Group
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec
from harness.setup import java_driver

LOG = logging.getLogger("kchaos.java")
START_S = 60  # a JVM and its client up, on a loaded two-core machine
# Exceptions after which the record was definitely not written (the others, timeouts and
# disconnections among them, leave it unknown: "info").
DEFINITELY_NOT_WRITTEN = {"RecordTooLargeException", "RecordBatchTooLargeException", "InvalidRecordException",
                          "TopicAuthorizationException", "SerializationException", "InvalidTopicException"}
REFUSED_BEFORE_APPEND = {"NotEnoughReplicasException"}  # definite only when nothing was retried


class DriverProcessError(RuntimeError):
    """A Java client process could not start, or died: its name, exit code and the end of its log."""


def classify(error: str | None, retries: int) -> str:
    """A send's status from its callback's exception (``Class: message``), as workload.classify does for librdkafka."""
    if error is None:
        return "ok"
    cls = error.split(":", 1)[0]
    if cls in DEFINITELY_NOT_WRITTEN or (cls in REFUSED_BEFORE_APPEND and retries == 0):
        return "fail"
    return "info"


class ClientProcess:
    """One driver process, started when the client is made (a JVM takes seconds to start, so a run's
    processes start side by side before its workload): ``start`` waits for its client and tells it to
    go, ``stop`` being set tells it to stop; its stdout lines go to ``on_line``, its stderr to the
    ``kchaos.java`` log."""

    role = ""

    def __init__(self, name: str, cluster: KafkaCluster, version: str, stop: threading.Event, properties: dict,
                 **fields):
        self.cname = name
        self.version = version
        self.stop_event = stop
        self.failure: BaseException | None = None
        self._ready = threading.Event()
        self._log_tail: list[str] = []
        self._dir = Path(tempfile.mkdtemp(prefix=f"kchaos-java-{name}-"))
        self.history_path = self._dir / "history.jsonl"
        cfg = {"name": name, "history": str(self.history_path), "properties": properties, **fields}
        (self._dir / "config.json").write_text(json.dumps(cfg))
        self.proc = subprocess.Popen(
            [*java_command(version, self.role), str(self._dir / "config.json")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, name=f"java-{self.role}-{name}", daemon=True)
        self._reader.start()
        self._stderr = threading.Thread(target=self._log_stderr, name=f"java-{self.role}-{name}-log", daemon=True)
        self._stderr.start()
        # Told to stop whenever ``stop`` is set, started or not: a run that ends before its workload
        # (a topic that could not be made) leaves no process waiting for "go".
        threading.Thread(target=self._stop_when_told, name=f"java-{self.role}-{name}-stop", daemon=True).start()

    @property
    def name(self) -> str:
        """As a librdkafka client's thread is named: how a failure names the client."""
        return f"java-{self.role}-{self.cname}"

    def ready(self, timeout_s: float = START_S) -> None:
        """Wait until its client is made (or the process ended, or ``timeout_s`` passed: ``start`` says so)."""
        self._ready.wait(timeout_s)

    def start(self) -> None:
        """Once its client is made, tell it to go (producers send from then on)."""
        if not self._ready.wait(START_S) and self.failure is None:
            self.failure = DriverProcessError(f"Java {self.role} {self.cname} did not start in {START_S} s")
            self.proc.kill()
            return
        with contextlib.suppress(BrokenPipeError, ValueError):  # it died: _read says how
            self.command("go")

    def join(self, timeout: float | None = None) -> None:
        """Wait for the process to end; one that has not ended by ``timeout`` hangs: it is killed and
        fails the run with its name and its log's end (its history would be incomplete)."""
        self._reader.join(timeout)
        if self._reader.is_alive():
            self.failure = DriverProcessError(f"Java {self.role} {self.cname} did not stop within {timeout:g} s: "
                                              + " | ".join(self._log_tail[-8:]))
            self.proc.kill()
            self._reader.join(10)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = json.loads(raw)
            if line["t"] == "ready":
                self._ready.set()
            self.on_line(line)
        code = self.proc.wait()
        self._stderr.join(5)  # its log's last lines, for a failure to quote
        self._ready.set()
        try:
            if code != 0:
                raise DriverProcessError(f"Java {self.role} {self.cname} exited {code}: "
                                         + " | ".join(self._log_tail[-8:]))
            self.read_history([json.loads(x) for x in self.history_path.read_text().splitlines()])
        except BaseException as e:
            self.failure = self.failure or e  # a hang's kill keeps the hang's own account
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def command(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def _stop_when_told(self) -> None:
        self.stop_event.wait()
        with contextlib.suppress(BrokenPipeError, ValueError):  # it ended already
            self.command("stop")

    def _log_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.rstrip("\n")
            LOG.info("%s %s", self.cname, line)
            self._log_tail = [*self._log_tail[-19:], line]

    def on_line(self, line: dict) -> None:
        """What the process says while it runs (``ready``, ``progress``, ``step``, ``done``)."""

    def read_history(self, rows: list[list]) -> None:
        """The history file's rows, after the process ended."""


class JavaProducer(ClientProcess):
    """A recording producer in a JVM: produced.parquet's columns, as RecordingProducer's."""

    role = "producer"

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str):
        super().__init__(name, cluster, version, stop, producer_properties(cluster, name, spec), topic=topic,
                         partitions=partitions, rate=spec.rate, quiet=spec.quiet)
        self.pname, self.spec, self.topic = name, spec, topic
        self._sent = self._acked = 0
        self.sending_s = 0.0
        self._steps: list[threading.Event] = []
        self._rows: list[list] = []

    @property
    def sent(self) -> int:
        return self._sent

    def acked(self) -> int:
        return self._acked

    def on_line(self, line: dict) -> None:
        if line["t"] in ("progress", "done"):
            self._sent, self._acked = line["sent"], line["acked"]
        if line["t"] == "done":  # from "go" to the last callback, without the history's writing (benchmarks)
            self.sending_s = line["sending_ms"] / 1000
        elif line["t"] == "step" and self._steps:
            self._steps.pop(0).set()

    def read_history(self, rows: list[list]) -> None:
        self._rows = rows

    def txns(self) -> list[dict]:
        return []

    def kill(self) -> None:
        raise ValueError(f"producer {self.pname} is not transactional; client_kill needs a transactional producer")

    def send_one(self, partition: int) -> None:
        """A quiet producer's step: one record to ``partition``, returned once its callback ran."""
        if not self.spec.quiet:
            raise ValueError(f"producer {self.pname} is not quiet; send steps need quiet = true")
        done = threading.Event()
        self._steps.append(done)
        self.command(f"send {partition}")
        if not done.wait(self.spec.delivery_timeout_ms / 1000 + 10):
            raise TimeoutError(f"producer {self.pname}: the send step had no callback")

    def columns(self) -> dict[str, list]:
        rows = sorted(self._rows, key=lambda r: r[0])
        n = len(rows)
        status, error = [], []
        for _, _, _, ack, _, err in rows:
            if ack is None:
                status.append("info")
                error.append("run ended before a callback")
            else:
                status.append(classify(err, self.spec.retries))
                error.append(err)
        keep_offset = self.spec.acks != "0"
        offset = [r[4] if keep_offset and s == "ok" else None for r, s in zip(rows, status, strict=True)]
        return {
            "value": [f"{self.pname}-{r[0]}" for r in rows], "producer": [self.pname] * n, "seq": [r[0] for r in rows],
            "topic": [self.topic] * n, "partition": [r[1] for r in rows], "acks": [self.spec.acks] * n,
            "status": status, "offset": offset,
            "send_ts_ms": [r[2] for r in rows], "ack_ts_ms": [r[3] for r in rows], "error": error,
        }


class JavaConsumer(ClientProcess):
    """A recording consumer in a JVM: consumed.parquet's rows, as RecordingConsumer's."""

    role = "consumer"

    def __init__(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str, version: str):
        props = {"bootstrap.servers": bootstrap(cluster, ""), "isolation.level": isolation, "fetch.max.wait.ms": "100",
                 "metadata.max.age.ms": "2000", **spec.config}
        super().__init__(name, cluster, version, stop, props, topic=topic, partitions=partitions)
        self.topic, self.isolation = topic, isolation
        self.rows: list[dict] = []

    def read_history(self, rows: list[list]) -> None:
        self.rows = [{"consumer": self.cname, "seq": i, "topic": self.topic, "partition": p, "offset": o, "value": v,
                      "poll_ts_ms": ts, "hw": hw, "phase": "live", "isolation": self.isolation, "group": None,
                      "generation": None} for i, (p, o, v, ts, hw) in enumerate(rows)]


def java_command(version: str, role: str) -> list[str]:
    """The command of a driver process of ``role``, its config file's path to be appended. A producer
    runs with the JVM's full JIT, as kafka-producer-perf-test does (its speed is measured against
    perf-test's); consumers and members, which wait on the network, start faster on C1 alone."""
    jit = [] if role == "producer" else ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    return [java_driver.JAVA, "-Xmx384m", *jit, "-cp", java_driver.classpath(version), "kchaos.Driver", role]


ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
             "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
             "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}


def member_properties(g: GroupSpec, base: dict) -> dict:
    """A group member's kafka-clients properties, as groups.member_conf's are librdkafka's."""
    conf = {"bootstrap.servers": base["bootstrap.servers"], "group.id": g.name, "isolation.level": g.isolation_level,
            "auto.offset.reset": "earliest", "enable.auto.commit": g.commit == "auto",
            "auto.commit.interval.ms": g.auto_commit_interval_ms, "max.poll.interval.ms": g.max_poll_interval_ms,
            "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000}
    if g.protocol == "consumer":  # session and heartbeat are the broker's settings
        return {**conf, "group.protocol": "consumer", **g.config}
    return {**conf, "group.protocol": "classic", "partition.assignment.strategy": ASSIGNORS[g.assignor],
            "session.timeout.ms": g.session_timeout_ms, "heartbeat.interval.ms": max(200, g.session_timeout_ms // 6),
            **g.config}


def bootstrap(cluster: KafkaCluster, client: str) -> str:
    return cluster.client_config(client)["bootstrap.servers"]


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict:
    """The producer's table as kafka-clients properties; the request timeout leaves room in the
    delivery timeout, which the Java client requires to cover linger and one request."""
    return {
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "enable.idempotence": spec.idempotence,
        "retries": spec.retries, "max.in.flight.requests.per.connection": spec.max_in_flight,
        "linger.ms": spec.linger_ms, "delivery.timeout.ms": spec.delivery_timeout_ms,
        "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, **spec.config,
    }


class JavaDriver:
    """Makes a run's clients as kafka-clients processes of the broker's version."""

    name = "java"

    def __init__(self, kafka_version: str):
        self.kafka_version = kafka_version
        self.version = f"kafka-clients {kafka_version}"

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> JavaProducer:
        return JavaProducer(name, spec, cluster, topic, partitions, stop, self.kafka_version)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> JavaConsumer:
        return JavaConsumer(name, spec, cluster, topic, partitions, stop, isolation, self.kafka_version)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event):
        raise ValueError("client java: the copier is not built for the Java driver yet")

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        """Members are GroupMember.java processes, acted on and read as librdkafka's are (groups.py)."""
        return Group(spec, cluster, topic, partitions, work, command=java_command(self.kafka_version, "member"),
                     conf=member_properties)

    def final_read(self, cluster: KafkaCluster, topic: str, partitions: int) -> list[dict]:
        return LIBRDKAFKA.final_read(cluster, topic, partitions)

    def group_final_offsets(self, cluster: KafkaCluster, group: str, topic: str) -> list[dict]:
        return LIBRDKAFKA.group_final_offsets(cluster, group, topic)


def driver_for(kafka_version: str) -> JavaDriver:
    """The driver of kafka-clients of the broker's version."""
    return JavaDriver(kafka_version)
