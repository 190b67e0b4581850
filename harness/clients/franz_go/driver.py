"""The driver for franz-go (github.com/twmb/franz-go): every client is a process of its own running
the program in ``src/`` (built per franz-go version by build.py), talked to by the process protocol
of docs/drivers.md (clients/process.py).

Producers (plain, idempotent and transactional), consumers, consumer-group members (classic
protocol; acted on and read as librdkafka's and Java's members are: groups.py) and the exactly-once
copier (franz-go's GroupTransactSession) are built. A franz-go client's
``config`` table takes Kafka's property names where franz-go has an option for them (config.py).
"""

from __future__ import annotations

import threading
from pathlib import Path

from harness.clients import CopierClient, ProducerClient
from harness.clients.franz_go import build as franz_build
from harness.clients.franz_go.config import franz_version
from harness.clients.groups import Group
from harness.clients.process import ClientProcess, ProducerCounts, TxnProcess, bootstrap
from harness.cluster import KafkaCluster
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec, ShareGroupSpec

# Broker answers after which the record was definitely not written; the rest (timeouts, connections
# lost, the client's own retry limit) leave it unknown.
DEFINITELY_NOT_WRITTEN = {"MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD", "CORRUPT_MESSAGE",
                          "TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION"}
REFUSED_BEFORE_APPEND = {"NOT_ENOUGH_REPLICAS", "INVALID_TIMESTAMP"}  # definite only when nothing was retried


def classify(error: str | None, retries: int) -> str:
    """A send's status from its promise's error (``NAME: description`` for a broker's answer)."""
    if error is None:
        return "ok"
    name = error.split(":", 1)[0]
    if name in DEFINITELY_NOT_WRITTEN or (name in REFUSED_BEFORE_APPEND and retries == 0):
        return "fail"
    return "info"


class FranzProcess(ClientProcess):
    """A franz-go client: the driver program of franz-go ``version`` in its role."""

    library = "franz-go"

    def command_line(self) -> list[str]:
        return [str(franz_build.program(self.version)), self.role]


class FranzProducer(ProducerCounts, FranzProcess):
    """A recording producer: produced.parquet's columns, from the program's history rows."""

    role = "producer"

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, version: str):
        super().__init__(name, cluster, version, stop, producer_properties(cluster, name, spec),
                         skewable_clock=spec.clock_skewed(name), topic=topic, partitions=partitions, rate=spec.rate,
                         quiet=spec.quiet)
        self.pname, self.spec, self.topic = name, spec, topic
        self.sending_s = 0.0
        self._steps: list[threading.Event] = []
        self._rows: list[list] = []

    def on_line(self, line: dict) -> None:
        self.count(line)
        if line["t"] == "done":
            self.sending_s = line["sending_ms"] / 1000
        elif line["t"] == "step" and self._steps:
            self._steps.pop(0).set()

    def read_history(self, rows: list[list]) -> None:
        self._rows = rows

    def txns(self) -> list[dict]:
        return []

    def kill(self) -> None:
        raise ValueError(f"producer {self.pname} is not transactional; client_kill needs a transactional producer")

    def send_one(self, partition: int) -> None:
        """A quiet producer's step: one record to ``partition``, returned once its promise ran."""
        if not self.spec.quiet:
            raise ValueError(f"producer {self.pname} is not quiet; send steps need quiet = true")
        done = threading.Event()
        self._steps.append(done)
        self.command(f"send {partition}")
        if not done.wait(self.spec.delivery_timeout_ms / 1000 + 10):
            raise TimeoutError(f"producer {self.pname}: the send step had no promise")

    def columns(self) -> dict[str, list]:
        rows = sorted(self._rows, key=lambda r: r[0])
        n = len(rows)
        status = ["info" if r[3] is None else classify(r[5], self.spec.retries) for r in rows]
        error = ["run ended before a promise" if r[3] is None else r[5] for r in rows]
        keep_offset = self.spec.acks != "0"
        offset = [r[4] if keep_offset and s == "ok" else None for r, s in zip(rows, status, strict=True)]
        return {
            "value": [f"{self.pname}-{r[0]}" for r in rows], "producer": [self.pname] * n, "seq": [r[0] for r in rows],
            "topic": [self.topic] * n, "partition": [r[1] for r in rows], "acks": [self.spec.acks] * n,
            "status": status, "offset": offset,
            "send_ts_ms": [r[2] for r in rows], "ack_ts_ms": [r[3] for r in rows], "error": error,
        }


def _text(props: dict) -> dict[str, str]:
    """Properties as the program reads them: every value a string, booleans as Kafka spells them."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}


def txn_properties(cluster: KafkaCluster, name: str, timeout_ms: int, config: dict) -> dict[str, str]:
    """A transactional client's properties under Kafka's names (the program takes the transactional
    id and timeout as franz-go's options)."""
    return _text({"bootstrap.servers": bootstrap(cluster, name), "transactional.id": f"kchaos-{name}",
                  "transaction.timeout.ms": timeout_ms, "request.timeout.ms": 5000,
                  "delivery.timeout.ms": max(timeout_ms, 10000), "metadata.max.age.ms": 5000, **config})


class FranzTxnProcess(TxnProcess, FranzProcess):
    """A franz-go transactional client; its sends' errors read as a plain producer's."""

    classify = staticmethod(classify)


class FranzTransactionalProducer(ProducerCounts, FranzTxnProcess):
    """``txn_records`` records per transaction over the partitions at the spec's rate; a seeded share aborted."""

    role = "txn-producer"

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int, version: str):
        props = txn_properties(cluster, name, spec.transaction_timeout_ms, {"linger.ms": spec.linger_ms,
                                                                           **spec.config})
        super().__init__(name, cluster, version, stop, props, topic=topic, partitions=partitions, rate=spec.rate,
                         txn_records=spec.txn_records, abort_ratio=spec.abort_ratio, seed=str(seed),
                         transaction_timeout_ms=spec.transaction_timeout_ms)
        self.pname, self.spec = name, spec

    def on_line(self, line: dict) -> None:
        self.count(line)

    def send_one(self, partition: int) -> None:
        raise ValueError(f"producer {self.pname} is transactional; send steps need a quiet plain producer")


class FranzCopier(FranzTxnProcess):
    """Consume-transform-produce with exactly-once semantics in one process: franz-go's
    GroupTransactSession, a read_committed member of ``spec.group`` whose offsets each transaction commits."""

    role = "copier"

    def __init__(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
                 out_partitions: int, stop: threading.Event, version: str):
        consumer = _text({"group.id": spec.group, "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                          "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 6000,
                          "fetch.max.wait.ms": 100, "max.poll.records": spec.txn_records})
        super().__init__(spec.name, cluster, version, stop,
                         txn_properties(cluster, spec.name, spec.transaction_timeout_ms, spec.config),
                         consumer_properties=consumer, group=spec.group, input_topic=input_topic,
                         output_topic=output_topic, output_partitions=out_partitions,
                         transaction_timeout_ms=spec.transaction_timeout_ms)
        self.spec, self.cluster, self.input = spec, cluster, input_topic


class FranzConsumer(FranzProcess):
    """A recording consumer with no group, every partition from offset 0: consumed.parquet's rows."""

    role = "consumer"

    def __init__(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str, version: str):
        props = {"bootstrap.servers": bootstrap(cluster, ""), "isolation.level": isolation, "fetch.max.wait.ms": "100",
                 "metadata.max.age.ms": "2000", **spec.config}
        super().__init__(name, cluster, version, stop, props, topic=topic, partitions=partitions)
        self.topic, self.isolation = topic, isolation
        self.rows: list[dict] = []

    def read_history(self, rows: list) -> None:
        """Each fetch's partition ({"p", "ts", "hw"}) is followed by its records ([offset, value])."""
        self.rows, at = [], {}
        for row in rows:
            if isinstance(row, dict):
                at = row
                continue
            o, v = row
            self.rows.append({"consumer": self.cname, "seq": len(self.rows), "topic": self.topic, "partition": at["p"],
                              "offset": o, "value": v, "poll_ts_ms": at["ts"], "hw": at["hw"], "phase": "live",
                              "isolation": self.isolation, "group": None, "generation": None})


def member_properties(g: GroupSpec, base: dict) -> dict:
    """A group member's properties under Kafka's names, which the program maps to franz-go's options."""
    return {"bootstrap.servers": base["bootstrap.servers"], "group.id": g.name, "isolation.level": g.isolation_level,
            "auto.offset.reset": "earliest", "enable.auto.commit": str(g.commit == "auto").lower(),
            "auto.commit.interval.ms": str(g.auto_commit_interval_ms),
            "max.poll.interval.ms": str(g.max_poll_interval_ms), "fetch.max.wait.ms": "100",
            "metadata.max.age.ms": "2000", "partition.assignment.strategy": g.assignor,
            "session.timeout.ms": str(g.session_timeout_ms),
            "heartbeat.interval.ms": str(max(200, g.session_timeout_ms // 6)),
            **{k: str(v) for k, v in g.config.items()}}


def producer_properties(cluster: KafkaCluster, name: str, spec: ProducerSpec) -> dict:
    """The producer's table under Kafka's property names. An idempotent franz-go producer keeps up to
    5 requests in flight itself and refuses the option, so ``max_in_flight`` is given only without
    idempotence."""
    in_flight = {} if spec.idempotence else {"max.in.flight.requests.per.connection": spec.max_in_flight}
    return _text({
        "bootstrap.servers": bootstrap(cluster, name), "acks": spec.acks, "enable.idempotence": spec.idempotence,
        "retries": spec.retries, **in_flight, "linger.ms": spec.linger_ms,
        "delivery.timeout.ms": spec.delivery_timeout_ms,
        "request.timeout.ms": max(1, min(5000, spec.delivery_timeout_ms - spec.linger_ms)),
        "metadata.max.age.ms": 5000, **spec.config})


class FranzDriver:
    """Makes a run's clients as franz-go processes."""

    name = "franz-go"

    def __init__(self, version: str):
        self.franz = franz_version(version)
        self.version = f"franz-go {self.franz}"

    def producer(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int) -> ProducerClient:
        if spec.transactional:
            return FranzTransactionalProducer(name, spec, cluster, topic, partitions, stop, seed, self.franz)
        return FranzProducer(name, spec, cluster, topic, partitions, stop, self.franz)

    def consumer(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, isolation: str) -> FranzConsumer:
        return FranzConsumer(name, spec, cluster, topic, partitions, stop, isolation, self.franz)

    def copier(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
               out_partitions: int, stop: threading.Event) -> CopierClient:
        return FranzCopier(spec, cluster, input_topic, output_topic, out_partitions, stop, self.franz)

    def group(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path) -> Group:
        """Members are the program's ``member`` role, acted on and read as every library's are (groups.py)."""
        return Group(spec, cluster, topic, partitions, work, command=[str(franz_build.program(self.franz)), "member"],
                     conf=member_properties)

    def share_group(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                    seed: int):
        raise ValueError("the franz-go driver has no share consumer (config.refusal refuses the table)")


def driver_for(version: str) -> FranzDriver:
    return FranzDriver(version)
