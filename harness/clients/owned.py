"""The client properties a scenario's `config` table may not set, because the harness sets them: from
a key of the table itself (`acks` from the producer's acks) or for its recording (who a client is,
where it connects, how it commits). Both client libraries name these alike (librdkafka took Kafka's
names); each library's config module adds what only it has (``confluent_config``, ``java_config``)."""

from __future__ import annotations

HARNESS = "the harness sets it (it routes, names or records every client)"

# Per kind of client: the property, and why it may not be set (the key of its own table, or HARNESS).
OWNED: dict[str, dict[str, str]] = {
    "producer": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "transactional.id": HARNESS,
        "acks": "use the producer's acks", "enable.idempotence": "use idempotence", "retries": "use retries",
        "max.in.flight.requests.per.connection": "use max_in_flight", "linger.ms": "use linger_ms",
        "delivery.timeout.ms": "use delivery_timeout_ms", "transaction.timeout.ms": "use transaction_timeout_ms",
    },
    "consumer": {
        "bootstrap.servers": HARNESS, "group.id": HARNESS, "isolation.level": "use isolation_level",
        "enable.auto.commit": HARNESS, "auto.offset.reset": HARNESS,
    },
    "group": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "group.id": "use the group's name",
        "isolation.level": "use isolation_level", "group.protocol": "use protocol",
        "partition.assignment.strategy": "use assignor", "enable.auto.commit": "use commit",
        "auto.commit.interval.ms": "use auto_commit_interval_ms", "session.timeout.ms": "use session_timeout_ms",
        "max.poll.interval.ms": "use max_poll_interval_ms",
    },
    "copier": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "group.id": "use group", "transactional.id": HARNESS,
        "isolation.level": HARNESS, "enable.auto.commit": HARNESS, "enable.idempotence": HARNESS, "acks": HARNESS,
        "transaction.timeout.ms": "use transaction_timeout_ms",
    },
    "share_group": {
        "bootstrap.servers": HARNESS, "client.id": HARNESS, "group.id": "use the share group's name",
    },
}


def owned(extra: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    """OWNED, with a library's own properties the harness sets (``extra``: kind -> names) added."""
    return {kind: {**props, **dict.fromkeys(extra.get(kind, []), HARNESS)} for kind, props in OWNED.items()}
