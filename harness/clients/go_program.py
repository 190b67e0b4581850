"""What every Go client library's driver shares: its program (one Go program per library, every
role in it, built per library version from the Go module proxy), the checks made of it before any
container starts, and the processes that run it (the process protocol of docs/drivers.md, through
clients/process.py). The Go side of the protocol is one package, ``goprotocol/``, that each
library's program imports; a library's folder holds only its program's sources, its property names
and how its errors read (harness/clients/franz_go/, harness/clients/sarama/)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.clients import CopierClient, ProducerClient
from harness.clients.groups import Group
from harness.clients.owned import owned
from harness.clients.process import (
    ClientProcess,
    ConsumerProcess,
    ProducerProcess,
    TxnProcess,
    TxnProducerProcess,
    bootstrap,
)
from harness.clients.registry import BuildError
from harness.cluster import KafkaCluster
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec
from harness.setup.java import cache_dir
from harness.setup.tools import build_lock, run_tool
from harness.versions import KAFKA_VERSIONS

PROTOCOL_SRC = Path(__file__).resolve().parent / "goprotocol"
PROTOCOL_MODULE = "kchaos/goprotocol"
VERSION_TEXT = re.compile(r"^\d+\.\d+\.\d+$")
OWNED = owned({})


class DriverBuildError(BuildError):
    """A Go driver could not be built: the command that failed and the end of its output."""


def as_properties(props: dict) -> dict[str, str]:
    """Properties as a Go program reads them: every value a string, booleans as Kafka spells them."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}


@dataclass(frozen=True)
class GoProgram:
    """One Go client library's driver program. ``src``: its sources (a Go module that requires
    ``module`` and imports goprotocol); built into the cache under the library's version and a
    digest of the sources, written beside and renamed, so nothing half-built is ever used."""

    library: str  # "franz-go"
    module: str  # "github.com/twmb/franz-go"
    src: Path
    default_version: str  # the newest release the module proxy serves here
    protocols: tuple[str, ...] = ("classic",)  # the group protocols its members run
    # Kafka's properties the library has no setting for, with why and what to use: refused before
    # the names kchaos owns are, whose refusal would point at a scenario key the library ignores
    lacks: tuple[tuple[str, str], ...] = ()
    # what else a table may ask that the library cannot do (an idempotent producer, an auto-commit), or None
    cannot: Callable[[object], str | None] | None = None

    @property
    def name(self) -> str:
        return f"kchaos-{self.library}"

    def version(self, version: str) -> str:
        """The library version a table runs: its ``client_version``, or the default where it names
        none (a scenario's client version defaults to the broker's, which is not the library's)."""
        return self.default_version if version in KAFKA_VERSIONS else version

    def _digest(self, version: str) -> str:
        h = hashlib.sha256(version.encode())
        for d in (self.src, PROTOCOL_SRC):
            for p in sorted(d.glob("*")):
                h.update(p.name.encode() + p.read_bytes())
        return h.hexdigest()[:12]

    def build_dir(self, version: str) -> Path:
        return cache_dir() / "go-driver" / f"{self.library}-{version}-{self._digest(version)}"

    def built(self, version: str) -> bool:
        return (self.build_dir(version) / self.name).is_file()

    def path(self, version: str) -> Path:
        """The program for library ``version``, built first if it is not yet."""
        return self.build(version, log=lambda m: None) / self.name

    def build(self, version: str, log: Callable[[str], object] = print) -> Path:
        """Build the program for library ``version`` unless it is built; its directory."""
        final = self.build_dir(version)
        if self.built(version):
            return final
        with build_lock(f"{self.library}-driver-{version}"):
            if not self.built(version):
                self._build(version, final, log)
        return final

    def _build(self, version: str, final: Path, log: Callable[[str], object]) -> None:
        log(f"building the {self.library} client driver for {self.library} {version} (the Go module proxy)")
        final.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{final.name}-", dir=final.parent) as tmp:
            work = Path(tmp) / "src"
            shutil.copytree(self.src, work)
            shutil.copytree(PROTOCOL_SRC, Path(tmp) / "goprotocol")
            env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}

            def go(args: list[str], what: str) -> None:
                run_tool(["go", *args], what, DriverBuildError, cwd=work, env=env)

            go(["mod", "edit", f"-replace={PROTOCOL_MODULE}=../goprotocol", f"-require={self.module}@v{version}"],
               f"require {self.library} {version}")
            go(["mod", "tidy"], f"resolve {self.library} {version}")
            out = Path(tmp) / "out"
            out.mkdir()
            go(["build", "-o", str(out / self.name), "."], f"go build the {self.library} driver for {version}")
            shutil.rmtree(final, ignore_errors=True)
            out.rename(final)

    def build_all(self, versions: list[str], log: Callable[[str], object] = print) -> None:
        for v in versions:
            self.build(v, log=log)

    def version_refusal(self, version: str) -> str | None:
        """Why library ``version`` cannot run here (not a release, or not served), or None; builds it."""
        v = self.version(version)
        allowed = f"a version such as {self.default_version} that the Go module proxy serves"
        if not VERSION_TEXT.match(v):
            return f"client_version: {v!r} is not a {self.library} release (allowed: {allowed})"
        try:
            self.build(v, log=lambda m: print(m, file=sys.stderr))
        except DriverBuildError as e:
            return f"client_version: {self.library} {v} could not be built (allowed: {allowed}): " \
                   f"{str(e).splitlines()[0][:200]}"
        return None

    def refusal(self, table, version: str) -> str | None:
        """Why this library at ``version`` cannot make the client ``table`` describes, or None: a
        property kchaos owns, a group protocol the program does not run, or a property the library
        has no option for (the program's ``check`` says which and names the allowed)."""
        kind, v = table.kind, self.version(version)
        for key, why in self.lacks:
            if key in table.config:
                return f"config.{key}: {why}"
        for key in table.config:
            if key in OWNED[kind]:
                return (f"config.{key}: {OWNED[kind][key]} "
                        f"(allowed: any other property {self.library} has an option for)")
        if self.cannot is not None and (why := self.cannot(table)):
            return why
        if kind == "group" and (p := getattr(table, "protocol", "classic")) not in self.protocols:
            return f"protocol: the {self.library} driver runs no {p} groups (allowed: {', '.join(self.protocols)})"
        if not table.config:
            return None
        with tempfile.TemporaryDirectory(prefix=f"kchaos-{self.library}-check-") as d:
            cfg = Path(d) / "config.json"
            cfg.write_text(json.dumps({"properties": as_properties(table.config)}))
            proc = subprocess.run([str(self.path(v)), "check", str(cfg)], capture_output=True, text=True)
        if proc.returncode != 0:
            return f"config.{proc.stderr.strip().splitlines()[-1]}"
        return None


# Broker answers after which the record was definitely not written; the rest (timeouts, connections
# lost, the client's own retry limit) leave it unknown. Every Go program gives a broker's answer as
# ``NAME: description`` under Kafka's error name.
DEFINITELY_NOT_WRITTEN = {"MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD", "CORRUPT_MESSAGE",
                          "TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION"}
REFUSED_BEFORE_APPEND = {"NOT_ENOUGH_REPLICAS", "INVALID_TIMESTAMP"}  # definite only when nothing was retried


def classify(error: str | None, retries: int) -> str:
    """A send's status from its promise's error (``NAME: description`` for a broker's answer)."""
    if error is None:
        return "ok"
    name = error.split(":", 1)[0]
    if name in DEFINITELY_NOT_WRITTEN or (name in REFUSED_BEFORE_APPEND and retries == 0):
        return "fail"
    return "info"


@dataclass(frozen=True)
class GoLibrary:
    """A Go library's driver: its program and the properties, under Kafka's names, that its clients
    are given (each library's own folder says which it takes)."""

    program: GoProgram
    producer_properties: Callable[[KafkaCluster, str, ProducerSpec], dict[str, str]]
    txn_properties: Callable[[KafkaCluster, str, str, int, dict], dict[str, str]]
    member_properties: Callable[[GroupSpec, dict], dict[str, str]]
    copier_consumer_properties: Callable[[CopierSpec], dict[str, str]]
    reports_commits: bool = True  # whether a member learns which commits the coordinator acknowledged


class GoProcess(ClientProcess):
    """A client of a Go library: its program in this process's role."""

    go: GoLibrary

    def command_line(self) -> list[str]:
        return [str(self.go.program.path(self.version)), self.role]


def _bind(cls: type, go: GoLibrary) -> type:
    """``cls`` for library ``go``: its name in messages, threads and the log is the library's."""
    return type(f"{cls.__name__}", (cls,), {"go": go, "library": go.program.library})


class GoProducer(ProducerProcess, GoProcess):
    """A recording producer (the program's ``producer`` role)."""

    classify = staticmethod(classify)

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str, bare: bool = False):
        super().__init__(name, spec, cluster, topic, partitions, stop, version,
                         self.go.producer_properties(cluster, name, spec), bare=bare)


class GoTxnProcess(TxnProcess, GoProcess):
    """A transactional client; its sends' errors read as a plain producer's."""

    classify = staticmethod(classify)


class GoTransactionalProducer(TxnProducerProcess, GoTxnProcess):
    """The program's ``txn-producer`` role."""

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int, version: str):
        props = self.go.txn_properties(cluster, name, spec.transactional_id_of(name), spec.transaction_timeout_ms,
                                       {"linger.ms": spec.linger_ms, **spec.config})
        super().__init__(name, spec, cluster, topic, partitions, stop, seed, version, props)


class GoCopier(GoTxnProcess):
    """Consume-transform-produce with exactly-once semantics in one process: a read_committed member
    of ``spec.group`` whose offsets each transaction commits (the library's own way: docs/drivers.md)."""

    role = "copier"

    def __init__(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
                 out_partitions: int, stop: threading.Event, version: str):
        super().__init__(spec.name, cluster, version, stop,
                         self.go.txn_properties(cluster, spec.name, spec.transactional_id, spec.transaction_timeout_ms,
                                                spec.config),
                         consumer_properties=self.go.copier_consumer_properties(spec), group=spec.group_id,
                         input_topic=input_topic, output_topic=output_topic, output_partitions=out_partitions,
                         transaction_timeout_ms=spec.transaction_timeout_ms)
        self.spec, self.cluster, self.input = spec, cluster, input_topic


class GoConsumer(ConsumerProcess, GoProcess):
    """A recording consumer (the program's ``consumer`` role)."""


def txn_properties(cluster: KafkaCluster, name: str, txn_id: str, timeout_ms: int, config: dict) -> dict[str, str]:
    """A transactional client's properties under Kafka's names (each program takes the transactional
    id and timeout as its library's options)."""
    return as_properties({"bootstrap.servers": bootstrap(cluster, name), "transactional.id": txn_id,
                          "transaction.timeout.ms": timeout_ms, "request.timeout.ms": 5000,
                          "delivery.timeout.ms": max(timeout_ms, 10000), "metadata.max.age.ms": 5000, **config})


def member_properties(g: GroupSpec, base: dict) -> dict[str, str]:
    """A group member's properties under Kafka's names, which each program maps to its library's options.
    A consumer-protocol (KIP-848) member names the protocol; the broker assigns and keeps the session,
    and the client's balancer is range (franz-go joins a KIP-848 group only with range or sticky)."""
    group = {"partition.assignment.strategy": g.assignor, "session.timeout.ms": g.session_timeout_ms,
             "heartbeat.interval.ms": max(200, g.session_timeout_ms // 6)}
    if g.protocol == "consumer":
        group = {"group.protocol": "consumer", "partition.assignment.strategy": "range"}
    return as_properties({
        "bootstrap.servers": base["bootstrap.servers"], "group.id": g.group_id, "isolation.level": g.isolation_level,
        "auto.offset.reset": "earliest", "enable.auto.commit": g.commit == "auto",
        "auto.commit.interval.ms": g.auto_commit_interval_ms, "max.poll.interval.ms": g.max_poll_interval_ms,
        "fetch.max.wait.ms": 100, "metadata.max.age.ms": 2000, **group, **g.config})


def copier_consumer_properties(spec: CopierSpec) -> dict[str, str]:
    """The copier's reading side: a read_committed member of its group, a poll a transaction."""
    return as_properties({
        "group.id": spec.group_id, "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 6000,
        "fetch.max.wait.ms": 100, "max.poll.records": spec.txn_records})


class GoDriver:
    """Makes a run's clients as processes of a Go library's program."""

    def __init__(self, go: GoLibrary, version: str):
        self.go, self.name = go, go.program.library
        self.lib_version = go.program.version(version)
        self.version = f"{self.name} {self.lib_version}"
        self._classes = {cls: _bind(cls, go) for cls in (GoProducer, GoTransactionalProducer, GoCopier, GoConsumer)}

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> ProducerClient:
        if spec.transactional:
            return self._classes[GoTransactionalProducer](name, spec, cluster, topic, partitions, stop, seed,
                                                          self.lib_version)
        return self._classes[GoProducer](name, spec, cluster, topic, partitions, stop, self.lib_version)

    def bare_producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                      stop: threading.Event) -> ProducerClient:
        """The same program as a plain producer that records nothing: the library driven flat out with
        the same settings, the throughput a recording producer is measured against (benchmarks/producer.py)."""
        return self._classes[GoProducer](name, spec, cluster, topic, partitions, stop, self.lib_version, bare=True)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> GoConsumer:
        return self._classes[GoConsumer](name, spec, cluster, topic, partitions, stop, isolation, self.lib_version)

    def bare_consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                      stop: threading.Event) -> GoConsumer:
        """The same program as a consumer that records nothing: the library reading flat out with the
        same settings, the throughput a recording consumer is measured against (benchmarks/consumer.py)."""
        return self._classes[GoConsumer](name, spec, cluster, topic, partitions, stop, "read_uncommitted",
                                         self.lib_version, bare=True)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event) -> CopierClient:
        return self._classes[GoCopier](spec, cluster, input_topic, output_topic, out_partitions, stop, self.lib_version)

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        """Members are the program's ``member`` role, acted on and read as every library's are (groups.py)."""
        return Group(spec, cluster, topic, partitions, work,
                     command=[str(self.go.program.path(self.lib_version)), "member"], conf=self.go.member_properties,
                     reports_commits=self.go.reports_commits)

    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int):
        raise ValueError(f"the {self.name} driver has no share consumer (its registry line refuses the table)")
