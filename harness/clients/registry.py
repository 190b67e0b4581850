"""The client libraries kchaos has a driver for, by the name a scenario's ``client`` gives them,
the client versions each can run, and the check of a client table's ``config`` that scenario
validation asks of the library."""

from __future__ import annotations

import importlib

# client name (a table's or a scenario's `client`) -> (its driver's module, its config check's module)
DRIVERS: dict[str, tuple[str, str]] = {
    "librdkafka": ("harness.clients.confluent", "harness.clients.confluent_config"),
    "java": ("harness.clients.java", "harness.clients.java_config"),
}
DEFAULT_CLIENT = "librdkafka"
ALIASES = {"confluent-kafka": "librdkafka"}  # the Python binding's name, which earlier runs recorded


def canonical(client: str) -> str:
    """A client's name as DRIVERS has it (an alias resolved; an unknown name as given)."""
    return ALIASES.get(client, client)


def version_refusal(client: str, version: str) -> str | None:
    """Why library ``client`` cannot run at ``version`` on this machine (a table's ``client_version``), or None."""
    return importlib.import_module(DRIVERS[client][1]).version_refusal(version)


def refusal(client: str, table, version: str) -> str | None:
    """Why library ``client`` at ``version`` (a Java client's: kafka-clients of that version;
    librdkafka is the one installed) cannot make the client ``table`` describes (a scenario's
    producer, consumer, group or copier table: its kind, its ``config``), or None; asked before any
    container starts."""
    return importlib.import_module(DRIVERS[client][1]).refusal(table, version)
