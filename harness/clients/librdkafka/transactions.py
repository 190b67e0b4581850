"""Transactional clients that record what the v2 contract needs: a transactional producer and an
exactly-once copier (consume-transform-produce), each with its sends, its transactions and, for the
copier, what it read and the offsets it committed.

Errors are handled as confluent-kafka documents them: an error that requires an abort aborts the
transaction and goes on; a retriable error on commit retries the commit until the transaction
timeout; anything else (fenced, fatal, a commit whose outcome stays open) records the transaction's
outcome as "unknown" and replaces the client by a new instance with the same ``transactional.id``,
which fences the old one. ``kill()`` makes the current instance die mid-transaction (its queue is
purged and it is never used again) and a new one take over: the ``client_kill`` fault.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.clients.groups import committed_offsets
from harness.clients.librdkafka.workload import RecordingProducer, classify, idempotence_debug
from harness.cluster import KafkaCluster
from harness.history.events import now_ms
from harness.scenario import CopierSpec, ProducerSpec

LOG = logging.getLogger("kchaos.transactions")
ABORT_FLUSH_S = 1.0  # a seeded abort waits this long for its records' acks, then aborts what is in flight
TXN_CALL_TIMEOUT_S = 10.0  # one init/begin/commit/abort call; a commit is retried up to the transaction timeout
READ_COMMITTED = "read_committed"


@dataclass
class TxnLog:
    """What one transactional client recorded: produced rows (v2 columns) and txns rows."""

    name: str
    sends: list[dict] = field(default_factory=list)
    txns: list[dict] = field(default_factory=list)

    def send_row(self, topic: str, partition: int, txn: str, source: str | None = None) -> dict:
        seq = len(self.sends)
        row = {"value": f"{self.name}-{seq}", "producer": self.name, "seq": seq, "topic": topic,
               "partition": partition, "acks": "all", "status": "info", "offset": None, "send_ts_ms": now_ms(),
               "ack_ts_ms": None, "error": "run ended before a delivery report", "txn": txn, "source": source}
        self.sends.append(row)
        return row

    def begin(self, txn: str) -> dict:
        row = {"txn": txn, "producer": self.name, "outcome": "unknown", "begin_ts_ms": now_ms(),
               "commit_ts_ms": None, "end_ts_ms": None}
        self.txns.append(row)
        return row


def _on_delivery(row: dict):
    def report(err: KafkaError | None, msg) -> None:
        row["ack_ts_ms"] = now_ms()
        if err is None:
            row.update(status="ok", offset=msg.offset(), error=None)
        else:
            row.update(status=classify(err, 1), offset=None, error=err.name())
    return report


def txn_conf(cluster: KafkaCluster, name: str, txn_id: str, timeout_ms: int, **extra) -> dict:
    """librdkafka settings of a transactional producer named ``name`` whose transactional.id is ``txn_id``."""
    return cluster.client_config(name, **{
        "transactional.id": txn_id, "enable.idempotence": True, "acks": "all",
        "transaction.timeout.ms": timeout_ms, "request.timeout.ms": 5000,
        "delivery.timeout.ms": max(timeout_ms, 10000), "metadata.max.age.ms": 5000,
        "topic.metadata.refresh.interval.ms": 2000, **extra})


class TxnClient:
    """One transactional.id across the instances that hold it (a new one after each fatal error or kill)."""

    def __init__(self, name: str, conf: dict, timeout_ms: int, after_call=lambda: None):
        self.name, self.instances, self.conf = name, 0, conf
        self.timeout_s = timeout_ms / 1000
        self.after_call = after_call  # run after each commit or abort (the producer notes its reports' arrival)
        self.dead: list[Producer] = []  # instances that died; kept so their teardown never blocks the run
        self.p: Producer | None = None

    def fresh(self, within_s: float = 60) -> Producer:
        """A new instance with the same transactional.id; init_transactions fences the previous one.
        A retriable failure is retried for ``within_s``."""
        if self.p is not None:
            self.retire()
        self.instances += 1
        p = Producer(self.conf, logger=LOG)
        deadline = time.monotonic() + within_s
        while True:
            try:
                p.init_transactions(TXN_CALL_TIMEOUT_S)
                break
            except KafkaException as e:
                if time.monotonic() > deadline or not e.args[0].retriable():
                    raise
        self.p = p
        return p

    def retire(self) -> None:
        """The current instance dies: what it still queued is dropped, and it is never called again."""
        if self.p is not None:
            self.p.purge(in_queue=True, in_flight=True, blocking=False)
            self.dead.append(self.p)
            self.p = None

    def finish(self, row: dict, abort: bool) -> str:
        """Commit or abort the open transaction; the outcome as the contract names it. A failure that
        leaves the outcome open replaces the instance."""
        p = self.p
        assert p is not None
        deadline = time.monotonic() + self.timeout_s
        if not abort:
            row["commit_ts_ms"] = now_ms()
        while True:
            try:
                (p.abort_transaction if abort else p.commit_transaction)(TXN_CALL_TIMEOUT_S)
                row["end_ts_ms"], row["outcome"] = now_ms(), "aborted" if abort else "committed"
                self.after_call()
                return row["outcome"]
            except KafkaException as e:
                self.after_call()
                err: KafkaError = e.args[0]
                if err.txn_requires_abort() and not abort:
                    abort = True
                    continue
                if err.retriable() and time.monotonic() < deadline:
                    continue
                LOG.info("%s: transaction %s outcome unknown (%s); new instance", self.name, row["txn"], err)
                row["end_ts_ms"], row["outcome"] = now_ms(), "unknown"
                self.fresh()
                return "unknown"

    def fail(self, row: dict, err: KafkaError) -> None:
        """A call inside the transaction failed: abort it if the error allows, else a new instance."""
        if err.txn_requires_abort():
            self.finish(row, abort=True)
            return
        LOG.info("%s: transaction %s failed (%s); new instance", self.name, row["txn"], err)
        row["end_ts_ms"] = now_ms()
        self.fresh()


class TransactionalProducer(RecordingProducer):
    """Writes ``txn_records`` records per transaction, in equal runs over the topic's partitions,
    at the spec's rate; a seeded share of the transactions is aborted after their records went out.

    The recording producer's bookkeeping (runs of consecutive sequence numbers handed over with
    produce_batch, delivery reports stored raw and matched after the workload) with, per run, the
    transaction it belongs to.
    """

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, seed: int):
        super().__init__(name, spec, cluster, topic, partitions, stop)
        self.conf.update(txn_conf(cluster, name, spec.transactional_id_of(name), spec.transaction_timeout_ms,
                                  **{"linger.ms": spec.linger_ms},
                                  **{**spec.config, **idempotence_debug(spec)}))
        self.conf.pop("retries", None)  # a transactional producer retries as it must
        self.log = TxnLog(name)  # its transactions; the sends are the columns below
        self.client = TxnClient(name, self.conf, spec.transaction_timeout_ms, after_call=self._mark)
        self.rng = random.Random(f"{seed}:{name}")
        self._run_txn: list[str] = []  # per run of sends: its transaction
        self._kill = threading.Event()

    def txns(self) -> list[dict]:
        """Every transaction it began, as txns.parquet's rows."""
        return self.log.txns

    def kill(self) -> None:
        """client_kill: the instance dies mid-transaction; a new one with the same id takes over."""
        self._kill.set()

    def ready(self, timeout_s: float) -> None:
        """Its transactions initialised before the workload's clock starts, as the Java driver's are:
        the first InitProducerId on a cluster waits for __transaction_state to be created and led,
        which on a loaded machine can take most of a short run. A failure here is raised again by
        the thread (``_run`` starts a new instance when none was made)."""
        try:
            self.client.fresh(timeout_s)
        except KafkaException as e:
            LOG.info("%s: init_transactions before the workload failed (%s)", self.pname, e)

    def _send(self, p: Producer, seq: int, n: int, part: int) -> None:
        super()._send(p, seq, n, part)
        self._run_txn.append(self.log.txns[-1]["txn"])

    def _run(self) -> None:
        c, n, parts = self.client, self.spec.txn_records, self.partitions
        if c.p is None:
            c.fresh()
        t0, k, seq, part = time.monotonic(), 0, 0, 0
        while not self.stop_event.is_set():
            due = t0 + k * n / self.spec.rate - time.monotonic()
            if due > 0 and self.stop_event.wait(min(due, 0.5)):
                break
            if due < -1:  # fell behind (paused by a fault): start again from now, no burst
                t0, k = time.monotonic(), 0
            k += 1
            row = self.log.begin(f"{self.pname}:{len(self.log.txns)}")
            try:
                c.p.begin_transaction()
                for chunk in _spread(n, parts):
                    self._send(c.p, seq, chunk, part)
                    seq, part = seq + chunk, (part + 1) % parts
                    self._poll(c.p, 0)
                if self._kill.is_set():
                    self._kill.clear()
                    row["end_ts_ms"] = now_ms()
                    c.fresh()
                    continue
                self._end(row)
            except KafkaException as e:
                c.fail(row, e.args[0])

    def _end(self, row: dict) -> None:
        """Commit, or (a seeded share) abort. An abort waits up to ABORT_FLUSH_S for the records' acks,
        so on a healthy cluster they are in the log, aborted; a slowed client aborts with requests
        still on their way, which is how a late request can land in the next transaction (KAFKA-17754)."""
        abort = self.rng.random() < self.spec.abort_ratio
        if abort:
            self.client.p.flush(ABORT_FLUSH_S)
            self._mark()
        self.client.finish(row, abort=abort)

    def columns(self) -> dict[str, list]:
        """produced.parquet's columns, the transaction of each send included."""
        cols = super().columns()
        txn: list[str] = []
        for (count, _, _), t in zip(self._runs, self._run_txn, strict=True):
            txn += [t] * count
        cols["txn"] = txn[: self._sent]
        cols["source"] = [None] * self._sent
        return cols


def _spread(n: int, parts: int) -> list[int]:
    """``n`` records as runs for consecutive partitions: equal runs, the remainder one by one."""
    if n < parts:
        return [1] * n
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class Copier(threading.Thread):
    """Consume-transform-produce with exactly-once semantics: reads ``input_topic`` (read_committed,
    group ``spec.group``), writes one copy of each record to ``output_topic`` (the same partition
    number modulo the output's partitions), and commits the group's offsets in the same
    transaction. After an abort it rewinds to the committed offsets (what KAFKA-17582 is about)."""

    def __init__(self, spec: CopierSpec, cluster: KafkaCluster, input_topic: str, output_topic: str,
                 out_partitions: int, stop: threading.Event):
        super().__init__(name=f"copier-{spec.name}", daemon=True)
        self._kill = threading.Event()
        self.failure: BaseException | None = None
        self.spec, self.cluster, self.input, self.output = spec, cluster, input_topic, output_topic
        self.out_partitions, self.stop_event = out_partitions, stop
        self.log = TxnLog(spec.name)
        conf = txn_conf(cluster, spec.name, spec.transactional_id, spec.transaction_timeout_ms, **spec.config)
        self.client = TxnClient(spec.name, conf, spec.transaction_timeout_ms)
        self.consumed: list[dict] = []
        self.offsets: list[dict] = []
        self.generation = 0  # assignments this member received: librdkafka does not give Python the group's
        self._dead: list[Consumer] = []  # members that died; kept so their teardown never blocks the run
        self.rewinds = 0  # seeks back to the committed offsets after an abort

    def sends(self) -> list[dict]:
        """Every copy it sent, as produced.parquet's rows (v2 columns included)."""
        return self.log.sends

    def txns(self) -> list[dict]:
        """Every transaction it began, as txns.parquet's rows."""
        return self.log.txns

    def kill(self) -> None:
        """client_kill: the member and its producer die mid-transaction; new ones take over."""
        self._kill.set()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # surfaced by the recording
            self.failure = e

    def _consumer(self) -> Consumer:
        c = Consumer(self.cluster.client_config(self.spec.name, **{
            "group.id": self.spec.group_id, "isolation.level": READ_COMMITTED, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
            "max.poll.interval.ms": 6000, "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 2000,
            **self.spec.config,
        }), logger=LOG)

        def assigned(consumer: Consumer, parts: list[TopicPartition]) -> None:
            self.generation += 1

        c.subscribe([self.input], on_assign=assigned)
        return c

    def _run(self) -> None:
        consumer, instance = self._consumer(), 1
        self.client.fresh()
        try:
            while not self.stop_event.is_set():
                if self._kill.is_set():  # the member dies without leaving; a new one joins
                    self._kill.clear()
                    self._dead.append(consumer)
                    self.client.retire()
                    consumer, instance = self._consumer(), instance + 1
                    self.client.fresh()
                msgs = [m for m in consumer.consume(self.spec.txn_records, timeout=0.2) if m.error() is None]
                if msgs:
                    self._copy(consumer, msgs, f"{self.spec.name}-in{instance}" + (
                        f".{self.rewinds + 1}" if self.rewinds else ""))
        finally:
            consumer.close()

    def _copy(self, consumer: Consumer, msgs: list, reader: str) -> None:
        c = self.client
        row = self.log.begin(f"{self.spec.name}:{len(self.log.txns)}")
        try:
            c.p.begin_transaction()
            for m in msgs:
                self._record_read(consumer, m, reader)
                send = self.log.send_row(self.output, m.partition() % self.out_partitions, row["txn"],
                                         source=m.value().decode(errors="replace"))
                c.p.produce(self.output, send["value"].encode(), partition=send["partition"],
                            on_delivery=_on_delivery(send))
                c.p.poll(0)
            positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
            c.p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), TXN_CALL_TIMEOUT_S)
            if c.finish(row, abort=False) == "committed":
                self.offsets += [{"group": self.spec.group, "topic": tp.topic, "partition": tp.partition,
                                  "offset": tp.offset, "ts_ms": row["end_ts_ms"], "phase": "live"}
                                 for tp in positions]
                return
        except KafkaException as e:
            c.fail(row, e.args[0])
        self._rewind(consumer)

    def _record_read(self, consumer: Consumer, m, reader: str) -> None:
        _, hw = consumer.get_watermark_offsets(TopicPartition(m.topic(), m.partition()), cached=True)
        self.consumed.append({
            "consumer": reader, "seq": len(self.consumed), "topic": m.topic(), "partition": m.partition(),
            "offset": m.offset(), "value": m.value().decode(errors="replace") if m.value() is not None else "",
            "poll_ts_ms": now_ms(), "hw": hw if hw is not None and hw >= 0 else None, "phase": "live",
            "isolation": READ_COMMITTED, "group": self.spec.group, "generation": self.generation})

    def _rewind(self, consumer: Consumer) -> None:
        """After an abort: back to the group's committed offsets, so nothing read in the aborted
        transaction is skipped. The reads after it go under a new reader name ("copier-in1.2"): the
        application moved the position back itself, which nonmonotonic_poll (a client returning
        records out of order on its own) must not count."""
        parts = consumer.assignment()
        if not parts:
            return
        self.rewinds += 1
        for tp in committed_offsets(consumer, parts):
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

