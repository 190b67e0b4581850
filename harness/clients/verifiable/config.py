"""What a scenario may ask of the verifiable-client driver, checked before any container starts.

Kafka's VerifiableProducer sends increasing integers at a throughput with one acks setting and any
producer property; VerifiableConsumer subscribes one group member and commits synchronously after
every poll, or auto-commits. What a table asks beyond that is refused, naming what the tools can do:
transactions and send steps, asynchronous commits and a commit cadence, KIP-848 groups before 3.7.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from harness.clients.owned import owned
from harness.clients.verifiable.driver import COMMAND_KEY
from harness.versions import KAFKA_VERSIONS, version_key

OWNED = owned({"producer": ["key.serializer", "value.serializer"],
               "consumer": ["key.deserializer", "value.deserializer", "group.protocol", "group.instance.id"],
               "group": ["key.deserializer", "value.deserializer", "group.instance.id"]})
CONSUMER_PROTOCOL_FROM = "3.7.0"  # VerifiableConsumer's --group-protocol


def version_refusal(version: str) -> str | None:
    """Kafka's tools of every version kchaos has an image recipe for."""
    if version not in KAFKA_VERSIONS:
        return f"client_version: Kafka {version!r} has no image recipe to take its verifiable clients from " \
               f"(allowed: {', '.join(KAFKA_VERSIONS)})"
    return None


def _command_refusal(config: dict) -> str | None:
    if COMMAND_KEY not in config:
        return None
    argv = shlex.split(str(config[COMMAND_KEY]))
    if not argv or (shutil.which(argv[0]) is None and not Path(argv[0]).is_file()):
        return f"config.{COMMAND_KEY}: {config[COMMAND_KEY]!r} is no executable here (allowed: the command " \
               "of a client that speaks Kafka's verifiable-client protocol, as a path or on PATH)"
    return None


def _table_refusal(table, version: str) -> str | None:
    kind = table.kind
    if kind == "producer" and table.transactional:
        return "transactional: Kafka's verifiable producer has no transactions (allowed: false, or a client " \
               "library with transactions: java, librdkafka, franz-go, sarama)"
    if kind == "producer" and table.quiet:
        return "quiet: Kafka's verifiable producer sends at a throughput and takes no send steps (allowed: false)"
    if kind != "group":
        return None
    if table.commit == "async":
        return "commit: Kafka's verifiable consumer commits synchronously after every poll, or auto-commits " \
               "(allowed: sync, auto)"
    if cadence := sorted({"commit_every_records", "commit_every_ms"} & table.model_fields_set):
        return f"{cadence[0]}: Kafka's verifiable consumer commits after every poll (allowed: leave it unset)"
    if table.protocol == "consumer" and version_key(version) < version_key(CONSUMER_PROTOCOL_FROM):
        return f"protocol: Kafka {version}'s verifiable consumer has no consumer-protocol groups " \
               f"(allowed: classic, or client_version {CONSUMER_PROTOCOL_FROM} or later)"
    return None


def refusal(table, version: str) -> str | None:
    """Why the verifiable clients of Kafka ``version`` cannot make the client ``table`` describes, or None."""
    for key in table.config:
        if key in OWNED[table.kind]:
            return f"config.{key}: {OWNED[table.kind][key]} (allowed: any other Kafka {table.kind} property)"
    return _command_refusal(table.config) or _table_refusal(table, version)
