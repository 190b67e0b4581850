"""The client-library properties a scenario passes as is: every producer, consumer, group and the
copier takes a ``config`` table of them (``debug``, ``socket.timeout.ms``, ``fetch.wait.max.ms``,
anything the library has), recorded in run.json with the rest of its table.

Each table is checked before any container starts: a property the harness sets from a key of the
table itself (``acks``, ``isolation_level``) or needs for its recording (``bootstrap.servers``,
``group.id``, ``transactional.id``) is refused with the key to use instead, and the library is asked
whether it knows every other property and takes its value, by making a client that connects nowhere.
"""

from __future__ import annotations

import logging

from confluent_kafka import Consumer, KafkaException, Producer, libversion

from harness.clients.owned import owned

VERSION = libversion()[0]
LIBRARY = f"librdkafka {VERSION}"
_QUIET = logging.getLogger("kchaos.client-config")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False

# The properties only librdkafka has that the harness sets, beside those both libraries name alike.
OWNED = owned({"producer": ["queue.buffering.max.messages"], "consumer": ["enable.partition.eof"],
               "group": ["enable.partition.eof"]})

# The library's client types a kind of client is made of.
MADE_OF = {"producer": (Producer,), "consumer": (Consumer,), "group": (Consumer,), "copier": (Producer, Consumer)}


def version_refusal(version: str) -> str | None:
    """librdkafka runs at the version installed with confluent-kafka, whatever the broker's."""
    if version != VERSION:
        return f"client_version: {version!r} is not installed (allowed: {VERSION}, the librdkafka confluent-kafka " \
               f"brings; another needs another confluent-kafka)"
    return None


def refusal(table, kafka_version: str = "") -> str | None:
    """Why the client ``table`` describes cannot take its ``config`` ("config.KEY: why (allowed: ...)"),
    or None; librdkafka is one library for every broker version."""
    kind, config = table.kind, table.config
    for key in config:
        if key in OWNED[kind]:
            return f"config.{key}: {OWNED[kind][key]} (allowed: any other {LIBRARY} property)"
    for make in MADE_OF[kind]:
        extra = {"group.id": "kchaos-config-check"} if make is Consumer else {}
        try:
            client = make({"bootstrap.servers": "", **extra, **config}, logger=_QUIET)
        except KafkaException as e:
            err = e.args[0]
            key = next((k for k in config if f'"{k}"' in err.str()), "")
            return f"config{'.' + key if key else ''}: {err.str()} ({LIBRARY})"
        if make is Consumer:
            client.close()
    return None
