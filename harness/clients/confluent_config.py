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

LIBRARY = f"librdkafka {libversion()[0]}"
_QUIET = logging.getLogger("kchaos.client-config")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False

HARNESS = "the harness sets it (it routes, names or records every client)"
# Per kind of client: the properties it may not set, and why (the key of its own table, or HARNESS).
OWNED: dict[str, dict[str, str]] = {
    "producer": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "transactional.id": HARNESS,
        "acks": "use the producer's acks", "enable.idempotence": "use idempotence", "retries": "use retries",
        "max.in.flight.requests.per.connection": "use max_in_flight", "linger.ms": "use linger_ms",
        "delivery.timeout.ms": "use delivery_timeout_ms", "transaction.timeout.ms": "use transaction_timeout_ms",
        "queue.buffering.max.messages": HARNESS,
    },
    "consumer": {
        "bootstrap.servers": HARNESS, "group.id": HARNESS, "isolation.level": "use isolation_level",
        "enable.auto.commit": HARNESS, "auto.offset.reset": HARNESS, "enable.partition.eof": HARNESS,
    },
    "group": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "group.id": "use the group's name",
        "isolation.level": "use isolation_level", "group.protocol": "use protocol",
        "partition.assignment.strategy": "use assignor", "enable.auto.commit": "use commit",
        "auto.commit.interval.ms": "use auto_commit_interval_ms", "session.timeout.ms": "use session_timeout_ms",
        "max.poll.interval.ms": "use max_poll_interval_ms", "enable.partition.eof": HARNESS,
    },
    "copier": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "group.id": "use group", "transactional.id": HARNESS,
        "isolation.level": HARNESS, "enable.auto.commit": HARNESS, "enable.idempotence": HARNESS, "acks": HARNESS,
        "transaction.timeout.ms": "use transaction_timeout_ms",
    },
}
# The library's client types a kind of client is made of.
MADE_OF = {"producer": (Producer,), "consumer": (Consumer,), "group": (Consumer,), "copier": (Producer, Consumer)}


def refusal(table, kafka_version: str = "") -> str | None:
    """Why the client ``table`` describes cannot take its ``config`` ("config.KEY: why (allowed: ...)"),
    or None; librdkafka is one library for every broker version."""
    kind, config = table.client, table.config
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
