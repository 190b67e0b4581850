"""The driver for franz-go (github.com/twmb/franz-go): every client is a process of its own running
the program in ``src/`` (built per franz-go version by build.py), talked to by the process protocol
of docs/drivers.md (harness/clients/go_program.py, the same for every Go library).

Producers (plain, idempotent and transactional), consumers, consumer-group members (classic
protocol; acted on and read as librdkafka's and Java's members are: groups.py) and the exactly-once
copier (franz-go's GroupTransactSession) are built. A franz-go client's ``config`` table takes
Kafka's property names where franz-go has an option for them (src/options.go).
"""

from __future__ import annotations

from harness.clients.franz_go.build import PROGRAM
from harness.clients.go_program import (
    GoDriver,
    GoLibrary,
    as_properties,
    copier_consumer_properties,
    member_properties,
    txn_properties,
)
from harness.clients.process import bootstrap
from harness.cluster import KafkaCluster
from harness.scenario import ProducerSpec


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict[str, str]:
    """The producer's table under Kafka's property names. An idempotent franz-go producer keeps up to
    5 requests in flight itself and refuses the option, so ``max_in_flight`` is given only without
    idempotence."""
    in_flight = {} if spec.idempotence else {"max.in.flight.requests.per.connection": spec.max_in_flight}
    return as_properties({
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "enable.idempotence": spec.idempotence,
        "retries": spec.retries, **in_flight, "linger.ms": spec.linger_ms,
        "delivery.timeout.ms": spec.delivery_timeout_ms,
        "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, **spec.config})


FRANZ_GO = GoLibrary(PROGRAM, producer_properties, txn_properties, member_properties, copier_consumer_properties)


def driver_for(version: str) -> GoDriver:
    return GoDriver(FRANZ_GO, version)
