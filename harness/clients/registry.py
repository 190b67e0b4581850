"""The client libraries kchaos has a driver for, by the name a scenario's ``client`` gives them,
and the check of a client table's ``config`` that scenario validation asks of the library."""

from __future__ import annotations

import importlib

# client name (a scenario's `client`) -> (its driver's module, its config check's module)
DRIVERS: dict[str, tuple[str, str]] = {
    "confluent-kafka": ("harness.clients.confluent", "harness.clients.confluent_config"),
    "java": ("harness.clients.java", "harness.clients.java_config"),
}
DEFAULT_CLIENT = "confluent-kafka"


def refusal(client: str, table, kafka_version: str) -> str | None:
    """Why library ``client`` cannot make the client ``table`` describes (a scenario's producer,
    consumer, group or copier table: its kind, its ``config``) against brokers of ``kafka_version``,
    or None; asked before any container starts."""
    return importlib.import_module(DRIVERS[client][1]).refusal(table, kafka_version)
