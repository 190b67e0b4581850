"""The client libraries kchaos has a driver for, one record each: where its driver, its config check
and its build (made the first time a scenario uses it) live, which scenario tables it makes clients
for, and a line of help. A new library is a folder under harness/clients/ and one line in
``LIBRARIES``: the scenario's validation, the command line's help, the pytest plugin and doctor
read it from here.

This module imports no driver: a library's modules are imported by name when something asks them."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

TABLE_KINDS = ("producer", "consumer", "group", "copier", "share_group")


@dataclass(frozen=True)
class Library:
    """One client library. ``driver``: a module with ``driver_for(kafka_version) -> ClientDriver``;
    ``config``: one with ``version_refusal(version)`` and ``refusal(table, version)``; ``build``: one
    with ``built(version)``, ``build(version, log)`` and ``build_all(versions, log)``, raising
    ``BuildError`` ("" when the library needs nothing built)."""

    name: str
    help: str
    driver: str
    config: str
    tables: frozenset[str]
    build: str = ""
    moved_clocks: bool = True  # whether client_clock_skew can move its clients' wall clock (libfaketime)
    # what its clients cannot report, which the history then lacks for them (run.json's clients carry it;
    # the verdict says what it could not judge: harness/checker/capabilities.py)
    cannot_tell: tuple[str, ...] = ()
    # A line its clients' log (the run's logs/clients.log) writes when an idempotent or transactional
    # producer takes a new epoch of its producer id (a bump after a failure, or a new instance fencing
    # the old): the coverage's producer_epoch_bumped. "" where the library's log does not say it.
    epoch_bumped: str = ""


LIBRARIES: dict[str, Library] = {lib.name: lib for lib in [
    Library("librdkafka", "librdkafka through confluent-kafka, the version pip installed",
            "harness.clients.librdkafka.driver", "harness.clients.librdkafka.config",
            frozenset({"producer", "consumer", "group", "copier"}),
            epoch_bumped=r"bumped epoch to PID\{Id:\d+,Epoch:\d+\}"),  # with debug "eos", which kchaos sets
    Library("java", "Apache Kafka's Java client (kafka-clients), a JVM per client, the broker's version by default",
            "harness.clients.java.driver", "harness.clients.java.config", frozenset(TABLE_KINDS),
            build="harness.clients.java.build",
            epoch_bumped=r"TransactionManager - \[Producer clientId=[^\]]*\] ProducerId set to \d+ with epoch [1-9]"),
    Library("franz-go", "franz-go (github.com/twmb/franz-go), a Go program per client, the newest release by default",
            "harness.clients.franz_go.driver", "harness.clients.franz_go.config",
            frozenset({"producer", "consumer", "group", "copier"}), build="harness.clients.franz_go.build",
            moved_clocks=False),
    Library("sarama", "sarama (github.com/IBM/sarama), a Go program per client, the newest release by default",
            "harness.clients.sarama.driver", "harness.clients.sarama.config",
            frozenset({"producer", "consumer", "group", "copier"}), build="harness.clients.sarama.build",
            moved_clocks=False),
    Library("kafka-go", "kafka-go (github.com/segmentio/kafka-go), a Go program per client, the newest release by "
            "default; plain producers, consumers and groups (it has no idempotent or transactional producer)",
            "harness.clients.kafka_go.driver", "harness.clients.kafka_go.config",
            frozenset({"producer", "consumer", "group"}), build="harness.clients.kafka_go.build", moved_clocks=False),
    Library("verifiable", "any client that speaks Kafka's verifiable-client protocol: Apache Kafka's own "
            "kafka-verifiable-producer and -consumer from the Kafka image of client_version (default: the broker's), "
            "or a table's config.\"kchaos.command\"; plain and idempotent producers, consumers and groups",
            "harness.clients.verifiable.driver", "harness.clients.verifiable.config",
            frozenset({"producer", "consumer", "group"}), build="harness.clients.verifiable.build", moved_clocks=False,
            cannot_tell=("send_time", "poll_hw", "failed_send_partition")),
]}
DEFAULT_CLIENT = "librdkafka"
READER = "librdkafka"  # the harness's own reads of the brokers after healing, whatever library is under test
ALIASES = {"confluent-kafka": "librdkafka"}  # the Python binding's name, which earlier runs recorded


class BuildError(RuntimeError):
    """A library's build failed; the message says what to do."""


def names() -> str:
    """The libraries, for a help text or an "allowed:" list."""
    return ", ".join(LIBRARIES)


def canonical(client: str) -> str:
    """A client's name as LIBRARIES has it (an alias resolved; an unknown name as given)."""
    return ALIASES.get(client, client)


def libraries_for(kind: str) -> list[str]:
    """The libraries that make clients for a scenario table of ``kind`` (``TABLE_KINDS``)."""
    return [lib.name for lib in LIBRARIES.values() if kind in lib.tables]


def builds() -> dict[str, ModuleType]:
    """Each library that needs a build, with its build module (doctor reports what is built)."""
    return {lib.name: importlib.import_module(lib.build) for lib in LIBRARIES.values() if lib.build}


def version_refusal(client: str, version: str) -> str | None:
    """Why library ``client`` cannot run at ``version`` on this machine (a table's ``client_version``), or None."""
    return importlib.import_module(LIBRARIES[client].config).version_refusal(version)


def refusal(client: str, table, version: str) -> str | None:
    """Why library ``client`` at ``version`` (a Java client's: kafka-clients of that version;
    librdkafka is the one installed) cannot make the client ``table`` describes (a scenario's
    producer, consumer, group, copier or share group table: its kind, its ``config``), or None;
    asked before any container starts."""
    lib = LIBRARIES[client]
    if table.kind not in lib.tables:
        return (f"client: {client} makes no {table.kind.replace('_', ' ')} clients "
                f"(allowed: {', '.join(libraries_for(table.kind))})")
    return importlib.import_module(lib.config).refusal(table, version)
