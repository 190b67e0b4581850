"""The process protocol of docs/drivers.md, the harness's side, for any driver whose clients run out
of process (the Java driver's JVMs, the Go drivers' programs): a config file in, commands on stdin,
JSON lines on stdout, the history in a file, the library's log on stderr (written to the run's
``logs/clients.log`` through the ``kchaos.LIBRARY`` logger).
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

from harness.cluster import KafkaCluster
from harness.cluster.clocks import offset_text
from harness.scenario import ConsumerSpec, ProducerSpec

START_S = 60  # a process and its client up (a JVM on a loaded two-core machine)
CLOCK_FILE = "clock-offset"


class DriverProcessError(RuntimeError):
    """A client process could not start, or died: its name, exit code and the end of its log."""


class ClientProcess:
    """One driver process, started when the client is made (a JVM takes seconds to start, so a run's
    processes start side by side before its workload): ``start`` waits for its client and tells it to
    go, ``stop`` being set tells it to stop; its stdout lines go to ``on_line``, its stderr to the
    library's log (``kchaos.LIBRARY``). A library's processes say how they are started
    (``command_line``) and in which environment (``environment``)."""

    role = ""
    library = ""  # how messages, threads and the log name it: "Java", "franz-go"

    def command_line(self) -> list[str]:
        """The command of this client's process, its config file's path to be appended."""
        raise NotImplementedError

    def environment(self, skewable_clock: bool) -> dict[str, str] | None:
        """The process's environment (None: this one's); ``skewable_clock``: a clock kchaos can move."""
        if skewable_clock:
            raise DriverProcessError(f"client_clock_skew: {self.library} clients have no clock kchaos can move")
        return None

    def __init__(self, name: str, cluster: KafkaCluster, version: str, stop: threading.Event, properties: dict,
                 skewable_clock: bool = False, **fields):
        self.cname = name
        self.version = version
        self.stop_event = stop
        self.failure: BaseException | None = None
        self._ready = threading.Event()
        self._log_tail: list[str] = []
        self._dir = Path(tempfile.mkdtemp(prefix=f"kchaos-{self.library.lower()}-{name}-"))
        self.history_path = self._dir / "history.jsonl"
        cfg = {"name": name, "history": str(self.history_path), "properties": properties, **fields}
        (self._dir / "config.json").write_text(json.dumps(cfg))
        self.clock_file = self._dir / CLOCK_FILE if skewable_clock else None
        self.log = logging.getLogger(f"kchaos.{self.library.lower()}")
        self.proc = subprocess.Popen(
            [*self.command_line(), str(self._dir / "config.json")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            env=self.environment(skewable_clock))
        self._reader = threading.Thread(target=self._read, name=f"{self.thread_prefix}-{name}", daemon=True)
        self._reader.start()
        self._stderr = threading.Thread(target=self._log_stderr, name=f"{self.thread_prefix}-{name}-log",
                                        daemon=True)
        self._stderr.start()
        # Told to stop whenever ``stop`` is set, started or not: a run that ends before its workload
        # (a topic that could not be made) leaves no process waiting for "go".
        threading.Thread(target=self._stop_when_told, name=f"{self.thread_prefix}-{name}-stop", daemon=True).start()

    def skew_clock(self, offset_s: float) -> None:
        """client_clock_skew: this process's wall clock runs ``offset_s`` off the true time from now (0:
        true again), within about a second (libfaketime reads the file once a second); its monotonic
        clock runs on, and its history is stamped from that (TrueClock.java)."""
        if self.clock_file is None:
            raise ValueError(f"{self.name} was started without a clock kchaos can move")
        self.clock_file.write_text(offset_text(offset_s) + "\n")

    @property
    def thread_prefix(self) -> str:
        return f"{self.library.lower()}-{self.role}"

    @property
    def name(self) -> str:
        """As a librdkafka client's thread is named: how a failure names the client."""
        return f"{self.thread_prefix}-{self.cname}"

    def ready(self, timeout_s: float = START_S) -> None:
        """Wait until its client is made (or the process ended, or ``timeout_s`` passed: ``start`` says so)."""
        self._ready.wait(timeout_s)

    def start(self) -> None:
        """Once its client is made, tell it to go (producers send from then on)."""
        if not self._ready.wait(START_S) and self.failure is None:
            self.failure = DriverProcessError(f"{self.library} {self.role} {self.cname} did not start in {START_S} s")
            self.proc.kill()
            return
        with contextlib.suppress(BrokenPipeError, ValueError):  # it died: _read says how
            self.command("go")

    def join(self, timeout: float | None = None) -> None:
        """Wait for the process to end; one that has not ended by ``timeout`` hangs: it is killed and
        fails the run with its name and its log's end (its history would be incomplete)."""
        self._reader.join(timeout)
        if self._reader.is_alive():
            self.failure = DriverProcessError(f"{self.library} {self.role} {self.cname} did not stop within "
                                              f"{timeout:g} s: " + " | ".join(self._log_tail[-8:]))
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
                raise DriverProcessError(f"{self.library} {self.role} {self.cname} exited {code}: "
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
            self.log.info("%s %s", self.cname, line)
            self._log_tail = [*self._log_tail[-19:], line]

    def on_line(self, line: dict) -> None:
        """What the process says while it runs (``ready``, ``progress``, ``step``, ``done``)."""

    def read_history(self, rows: list[list]) -> None:
        """The history file's rows, after the process ended."""


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


TXN_RETRIES = 1  # a transactional producer retries as it must: NOT_ENOUGH_REPLICAS is never definite
TXN_SEND_COLUMNS = ("value", "producer", "seq", "topic", "partition", "acks", "status", "offset", "send_ts_ms",
                    "ack_ts_ms", "error", "txn", "source")


class TxnProcess(ClientProcess):
    """A transactional client's process (a transactional producer, the copier): its history is JSON
    lines of one object under its kind (``send``, ``txn``, ``read``, ``offset``: docs/drivers.md),
    ``kill`` its client_kill. A library's subclass says how its send errors read (``classify``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.history: dict[str, list[dict]] = {"send": [], "txn": [], "read": [], "offset": []}

    @staticmethod
    def classify(error: str | None, retries: int) -> str:
        raise NotImplementedError

    def read_history(self, rows: list) -> None:
        for row in rows:
            ((kind, fields),) = row.items()
            self.history[kind].append(fields)

    def send_row(self, s: dict) -> dict:
        """A send of the history as produced.parquet's row."""
        if s["ack_ts_ms"] is None:
            status, error = "info", "run ended before a callback"
        else:
            status, error = self.classify(s["error"], TXN_RETRIES), s["error"]
        return {"value": s["value"], "producer": self.cname, "seq": s["seq"], "topic": s["topic"],
                "partition": s["partition"], "acks": "all", "status": status,
                "offset": s["offset"] if status == "ok" else None, "send_ts_ms": s["send_ts_ms"],
                "ack_ts_ms": s["ack_ts_ms"], "error": error, "txn": s["txn"], "source": s["source"]}

    def sends(self) -> list[dict]:
        """Every send, as produced.parquet's rows (v2 columns included)."""
        return [self.send_row(s) for s in self.history["send"]]

    def txns(self) -> list[dict]:
        """Every transaction it began, as txns.parquet's rows."""
        return self.history["txn"]

    def kill(self) -> None:
        """client_kill: the instance dies mid-transaction; a new one with the same id takes over."""
        self.command("kill")

    def columns(self) -> dict[str, list]:
        rows = self.sends()
        return {k: [r[k] for r in rows] for k in TXN_SEND_COLUMNS}

    @property
    def consumed(self) -> list[dict]:
        """A copier's reads."""
        return self.history["read"]

    @property
    def offsets(self) -> list[dict]:
        """The offsets a copier's committed transactions carried."""
        return self.history["offset"]


class ProducerProcess(ProducerCounts, ClientProcess):
    """A recording producer's process: produced.parquet's columns from its history rows
    ``[seq, partition, send_ts_ms, ack_ts_ms, offset, error]``. A library's subclass gives the
    properties and how its send errors read (``classify``)."""

    role = "producer"

    @staticmethod
    def classify(error: str | None, retries: int) -> str:
        raise NotImplementedError

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str, properties: dict, bare: bool = False):
        """``bare``: the program counts its promises and records no send (a Go program's throughput
        reference in benchmarks/producer.py; its history is then empty)."""
        super().__init__(name, cluster, version, stop, properties, skewable_clock=spec.clock_skewed(name),
                         topic=topic, partitions=partitions, rate=spec.rate, quiet=spec.quiet,
                         **({"bare": True} if bare else {}))
        self.pname, self.spec, self.topic = name, spec, topic
        self.sending_s = 0.0
        self._steps: list[threading.Event] = []
        self._rows: list[list] = []

    def on_line(self, line: dict) -> None:
        self.count(line)
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
        status = ["info" if r[3] is None else self.classify(r[5], self.spec.retries) for r in rows]
        error = ["run ended before a callback" if r[3] is None else r[5] for r in rows]
        keep_offset = self.spec.acks != "0"
        offset = [r[4] if keep_offset and s == "ok" else None for r, s in zip(rows, status, strict=True)]
        return {
            "value": [f"{self.pname}-{r[0]}" for r in rows], "producer": [self.pname] * n, "seq": [r[0] for r in rows],
            "topic": [self.topic] * n, "partition": [r[1] for r in rows], "acks": [self.spec.acks] * n,
            "status": status, "offset": offset,
            "send_ts_ms": [r[2] for r in rows], "ack_ts_ms": [r[3] for r in rows], "error": error,
        }


class ConsumerProcess(ClientProcess):
    """A recording consumer's process, every partition from offset 0 and no group: consumed.parquet's
    rows from its history (for each partition a poll returned records of, ``{"p", "ts", "hw"}``, then
    ``[offset, value]`` per record)."""

    role = "consumer"

    def __init__(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str, version: str, bare: bool = False):
        """``bare``: the program counts what it reads and records nothing (a Go program's throughput
        reference in benchmarks/consumer.py: ``read`` records between ``first_ms`` and ``last_ms``)."""
        props = {"bootstrap.servers": bootstrap(cluster, ""), "isolation.level": isolation, "fetch.max.wait.ms": "100",
                 "metadata.max.age.ms": "2000", **spec.config}
        super().__init__(name, cluster, version, stop, props, topic=topic, partitions=partitions,
                         **({"bare": True} if bare else {}))
        self.topic, self.isolation = topic, isolation
        self.rows: list[dict] = []
        self.read, self.first_ms, self.last_ms = 0, 0, 0

    def highest_read(self) -> None:
        """Its reads are known once the process has ended."""
        return None

    def on_line(self, line: dict) -> None:
        if line["t"] == "done":
            self.read, self.first_ms, self.last_ms = (line.get(k, 0) for k in ("read", "first_ms", "last_ms"))

    def read_history(self, rows: list) -> None:
        self.rows, at = [], {}
        for row in rows:
            if isinstance(row, dict):
                at = row
                continue
            o, v = row
            self.rows.append({"consumer": self.cname, "seq": len(self.rows), "topic": self.topic, "partition": at["p"],
                              "offset": o, "value": v, "poll_ts_ms": at["ts"], "hw": at["hw"], "phase": "live",
                              "isolation": self.isolation, "group": None, "generation": None})


class TxnProducerProcess(ProducerCounts, TxnProcess):
    """A transactional producer's process: ``txn_records`` records per transaction over the
    partitions at the spec's rate, a seeded share aborted."""

    role = "txn-producer"

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int, version: str, properties: dict):
        super().__init__(name, cluster, version, stop, properties, topic=topic, partitions=partitions, rate=spec.rate,
                         txn_records=spec.txn_records, abort_ratio=spec.abort_ratio, seed=str(seed),
                         transaction_timeout_ms=spec.transaction_timeout_ms)
        self.pname, self.spec = name, spec

    def on_line(self, line: dict) -> None:
        self.count(line)

    def send_one(self, partition: int) -> None:
        raise ValueError(f"producer {self.pname} is transactional; send steps need a quiet plain producer")
