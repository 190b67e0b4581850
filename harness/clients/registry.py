"""The client libraries kchaos has a driver for, by the name a scenario's ``client`` gives them,
and the check of a client table's ``config`` that scenario validation asks of the library."""

from __future__ import annotations

import importlib

# client name (a scenario's `client`) -> (its driver's module, its config check's module)
DRIVERS: dict[str, tuple[str, str]] = {
    "confluent-kafka": ("harness.clients.confluent", "harness.clients.confluent_config"),
}
DEFAULT_CLIENT = "confluent-kafka"


def refusal(client: str, kind: str, config: dict[str, str]) -> str | None:
    """Why a ``kind`` client (producer, consumer, group, copier) of library ``client`` cannot take
    ``config``, or None; asked before any container starts."""
    return importlib.import_module(DRIVERS[client][1]).refusal(kind, config)
