"""The process protocol of docs/drivers.md, the Java driver's side: one JVM per client running
``src/kchaos/Driver.java`` in a role, a config file in, commands on stdin, JSON lines on stdout,
the history in a file, the library's log on stderr (written to the run's ``logs/clients.log``
through the ``kchaos.java`` logger). Every Java client (java.py, java_transactions.py) is a
``ClientProcess``; ``classify`` reads a send's outcome from its callback's exception.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from harness.clients.java import build as java_driver
from harness.cluster import KafkaCluster
from harness.cluster.clocks import offset_text

LOG = logging.getLogger("kchaos.java")
START_S = 60  # a JVM and its client up, on a loaded two-core machine
# Exceptions after which the record was definitely not written (the others, timeouts and
# disconnections among them, leave it unknown: "info"). TransactionAbortedException fails the batches an
# abort found still in the accumulator, never sent (in-flight ones complete), as librdkafka's _PURGE_QUEUE.
DEFINITELY_NOT_WRITTEN = {"RecordTooLargeException", "RecordBatchTooLargeException", "InvalidRecordException",
                          "TopicAuthorizationException", "SerializationException", "InvalidTopicException",
                          "TransactionAbortedException"}
# Definite only when nothing was retried (workload.REFUSED_BEFORE_APPEND says why).
REFUSED_BEFORE_APPEND = {"NotEnoughReplicasException", "InvalidTimestampException"}


# libfaketime (Debian's faketime package), thread-safe build, as the brokers' JVMs load it
# (docker/kafka/kchaos-entrypoint.sh, harness/cluster/clocks.py says why each setting).
FAKETIME_LIB = "/usr/lib/*/faketime/libfaketimeMT.so.1"
CLOCK_FILE = "clock-offset"


class DriverProcessError(RuntimeError):
    """A Java client process could not start, or died: its name, exit code and the end of its log."""


def faketime_env(clock_file: Path) -> dict[str, str]:
    """The environment that starts a JVM on a wall clock kchaos moves by rewriting ``clock_file``
    (true time to begin with)."""
    libs = sorted(glob.glob(FAKETIME_LIB))
    if not libs:
        raise DriverProcessError(f"no libfaketime here ({FAKETIME_LIB}): client_clock_skew on a Java client needs "
                                 "Debian's faketime package (scripts/setup.sh installs it)")
    clock_file.write_text(offset_text(0) + "\n")
    return {"LD_PRELOAD": libs[0], "FAKETIME_TIMESTAMP_FILE": str(clock_file), "FAKETIME_CACHE_DURATION": "0",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


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
                 skewable_clock: bool = False, **fields):
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
        self.clock_file = self._dir / CLOCK_FILE if skewable_clock else None
        self.proc = subprocess.Popen(
            [*java_command(version, self.role), str(self._dir / "config.json")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            env=None if self.clock_file is None else {**os.environ, **faketime_env(self.clock_file)})
        self._reader = threading.Thread(target=self._read, name=f"java-{self.role}-{name}", daemon=True)
        self._reader.start()
        self._stderr = threading.Thread(target=self._log_stderr, name=f"java-{self.role}-{name}-log", daemon=True)
        self._stderr.start()
        # Told to stop whenever ``stop`` is set, started or not: a run that ends before its workload
        # (a topic that could not be made) leaves no process waiting for "go".
        threading.Thread(target=self._stop_when_told, name=f"java-{self.role}-{name}-stop", daemon=True).start()

    def skew_clock(self, offset_s: float) -> None:
        """client_clock_skew: this JVM's wall clock runs ``offset_s`` off the true time from now (0:
        true again), within about a second (libfaketime reads the file once a second); its monotonic
        clock runs on, and its history is stamped from that (TrueClock.java)."""
        if self.clock_file is None:
            raise ValueError(f"{self.name} was started without a clock kchaos can move")
        self.clock_file.write_text(offset_text(offset_s) + "\n")

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


def java_command(version: str, role: str) -> list[str]:
    """The command of a driver process of ``role``, its config file's path to be appended. A producer
    runs with the JVM's full JIT, as kafka-producer-perf-test does (its speed is measured against
    perf-test's); consumers and members, which wait on the network, start faster on C1 alone."""
    jit = [] if role == "producer" else ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    return [java_driver.JAVA, "-Xmx384m", *jit, "-cp", java_driver.classpath(version), "kchaos.Driver", role]


def bootstrap(cluster: KafkaCluster, client: str) -> str:
    return cluster.client_config(client)["bootstrap.servers"]


class ProducerCounts:
    """A producer process's counts, as its ``progress`` and ``done`` lines give them: records handed
    to the client (``sent``) and acknowledged (``acked``, which ``acked`` triggers watch)."""

    _sent = 0
    _acked = 0

    @property
    def sent(self) -> int:
        return self._sent

    def acked(self) -> int:
        return self._acked

    def count(self, line: dict) -> None:
        if line["t"] in ("progress", "done"):
            self._sent, self._acked = line["sent"], line["acked"]
