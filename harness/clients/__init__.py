"""The client-driver seam: every producer, consumer, consumer group, copier and share group of a
run is made through a ``ClientDriver``, chosen by the scenario's ``client``. Each library is a folder
of its own (``librdkafka/``: confluent-kafka; ``java/``: Apache Kafka's Java client, a JVM process
per client) and one line in ``registry.LIBRARIES``: the checker, the nemesis, the triggers and the
report do not change. The harness's own reads of the brokers after healing (``HarnessReader``) are
made with ``registry.READER``'s library, whatever library is under test.

What a run needs of the clients a driver makes, and what client faults act on, is the protocols
below: the recording reads their histories as the contract's rows, the nemesis calls ``kill``,
``send_one`` and a group member's ``kill``/``start``/``pause``/``resume``/``stop``.

This module is light: a driver's modules are imported when a run or a scenario asks for them
(registry.py holds the records: names, modules, tables, builds).
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness.clients.registry import DEFAULT_CLIENT, LIBRARIES, READER, canonical, refusal

__all__ = [
    "DEFAULT_CLIENT",
    "LIBRARIES",
    "ClientDriver",
    "ConsumerClient",
    "CopierClient",
    "GroupClient",
    "GroupMember",
    "HarnessReader",
    "ProducerClient",
    "driver",
    "reader",
    "refusal",
]

if TYPE_CHECKING:
    from harness.cluster import KafkaCluster
    from harness.history.events import CommitRefused, Rebalance
    from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec


class ProducerClient(Protocol):
    """A producer instance: a thread that sends at its spec's rate until ``stop`` is set."""

    pname: str
    spec: ProducerSpec
    failure: BaseException | None
    sent: int

    def ready(self, timeout_s: float) -> None:
        """Return once the client can send at once on ``start`` (a process's JVM up and its client
        made); the workload's clock starts after every producer is ready."""
    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...
    def acked(self) -> int:
        """Records acknowledged so far (``acked`` triggers count them live)."""
    def columns(self) -> dict[str, list]:
        """Its sends as produced.parquet's columns (v2's txn and source included), after it ended."""
    def txns(self) -> list[dict]:
        """Its transactions as txns.parquet's rows ([] for a plain producer)."""
    def kill(self) -> None:
        """client_kill: a transactional instance dies mid-transaction; a new one fences it."""
    def send_one(self, partition: int) -> None:
        """A `send` step of a quiet producer: one record, returned once acknowledged."""


class ConsumerClient(Protocol):
    """A reader assigned every partition from offset 0; ``rows`` are consumed.parquet's."""

    cname: str
    rows: list[dict]
    failure: BaseException | None

    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...
    def highest_read(self) -> dict[int, int] | None:
        """The highest offset read so far on each partition it read from; None where the client tells
        what it read only once it has ended (a process's history). The live read after the heal ends
        as soon as every reader that tells has read what was acknowledged."""


class CopierClient(Protocol):
    """An exactly-once copier: its reads, its sends, its transactions and its group's commits."""

    spec: CopierSpec
    input: str  # the topic it copies from
    consumed: list[dict]
    offsets: list[dict]
    failure: BaseException | None

    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...
    def sends(self) -> list[dict]: ...
    def txns(self) -> list[dict]: ...
    def kill(self) -> None: ...


class GroupMember(Protocol):
    """One member of a consumer group, as faults act on it."""

    name: str

    def kill(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...


class GroupClient(Protocol):
    """A consumer group's members, started and stopped together, and their history."""

    spec: GroupSpec
    members: list[GroupMember]

    def start(self) -> None: ...
    def wait_formed(self, timeout_s: float) -> bool: ...
    def wait_caught_up(self, timeout_s: float) -> bool: ...
    def stop(self) -> None: ...
    def failure(self) -> str | None: ...
    def history(self) -> tuple[list[dict], list[dict], list[Rebalance | CommitRefused]]:
        """(consumed rows, live offsets rows, events) of the group's run."""


class ClientDriver(Protocol):
    """Makes a run's clients with one client library."""

    name: str  # as a scenario names it
    version: str  # the library's version, for run.json

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> ProducerClient: ...
    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> ConsumerClient: ...
    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event) -> CopierClient: ...
    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int,
              work: Path) -> GroupClient: ...
    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int) -> GroupClient:
        """A share group's members (a library whose record has no "share_group" table never gets this call:
        the scenario refuses it)."""


class HarnessReader(Protocol):
    """The harness's own reads of the brokers after healing, made with one library for every run."""

    def final_read(self, cluster: KafkaCluster, topic: str, partitions: int) -> list[dict]:
        """Every partition read from offset 0 to its end (phase "final")."""
    def group_final_offsets(self, cluster: KafkaCluster, group: str, topic: str) -> list[dict]:
        """A group's committed offsets (offsets.parquet's "final" rows)."""


def driver(client: str = DEFAULT_CLIENT, kafka_version: str = "") -> ClientDriver:
    """The driver of a client library, by the name a scenario gives it, for brokers of
    ``kafka_version`` (a library built per Kafka version, as the Java client is, takes that one)."""
    client = canonical(client)
    if client not in LIBRARIES:
        raise ValueError(f"client {client!r} has no driver (allowed: {', '.join(LIBRARIES)})")
    return importlib.import_module(LIBRARIES[client].driver).driver_for(kafka_version)


def reader() -> HarnessReader:
    """The harness's reader of the brokers (``registry.READER``'s driver)."""
    return importlib.import_module(LIBRARIES[READER].driver).driver_for("")
