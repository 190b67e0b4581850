"""Producers and consumers that record everything the reconciler needs.

Producers send unique payload ids (``<producer>-<seq>``) round-robin over partitions at a target
rate, recording every send and its delivery report. Consumers are assigned every partition from
offset 0 and record each record with the high watermark the client knew when it returned it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from itertools import islice

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from harness.cluster import KafkaCluster
from harness.history.events import now_ms
from harness.scenario import UNLIMITED_RATE, ConsumerSpec, ProducerSpec
from harness.waiting import until

LOG = logging.getLogger("kchaos.workload")

# Errors after which the record was definitely not written. Everything else (timeouts, transport
# errors, NOT_LEADER_OR_FOLLOWER, which can follow a committed write: KAFKA-13574) is "info".
DEFINITELY_NOT_WRITTEN = {
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.INVALID_RECORD,
    KafkaError.INVALID_REQUIRED_ACKS,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._PURGE_QUEUE,  # dropped from the client's queue (an abort, a client that died) before it was sent
}
# Refused before the append, so definite, but only when no earlier attempt could have landed (a
# timestamp outside the broker's window, log.message.timestamp.before/after.max.ms, may have been
# inside it at an earlier attempt).
REFUSED_BEFORE_APPEND = {KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.INVALID_TIMESTAMP}


ACKS0_LINGER_S = 1.0  # how long an acks=0 producer stays connected after flush()
QUEUE_MAX = 500_000  # queue.buffering.max.messages
QUEUE_HEADROOM = 10_000  # kept free so a produce_batch call is never cut short by a full queue
# Records handed over per loop iteration, and per produce_batch call (one partition). Large runs
# let librdkafka fill whole batches when the producer runs flat out: a run cut into batches leaves
# one partial batch, and partial batches cost the brokers as much per request as full ones.
BATCH_MAX = 120_000
CHUNK_MAX = 40_000


def classify(err: KafkaError | None, retries: int) -> str:
    if err is None:
        return "ok"
    code = err.code()
    if code in DEFINITELY_NOT_WRITTEN or (code in REFUSED_BEFORE_APPEND and retries == 0):
        return "fail"
    return "info"


def idempotence_debug(spec: ProducerSpec) -> dict[str, str]:
    """An idempotent or transactional producer's debug contexts: the scenario's own and "eos", its idempotence machinery
    (producer id, drains, epoch bumps, duplicate sequences, implicit acks), a few lines a state change
    and none a message: the lines that show known issues' mechanisms (harness/checker/known_issues.py)."""
    if not (spec.idempotence or spec.transactional):  # a transactional producer is idempotent too
        return {}
    own = [c for c in str(spec.config.get("debug", "")).split(",") if c]
    return {"debug": ",".join([*own, "eos"] if "eos" not in own else own)}


class RecordingProducer(threading.Thread):
    """One producer instance; ``columns()`` follows produced.parquet's columns.

    Sends go out through ``produce_batch`` in runs of consecutive sequence numbers, one partition
    per run, rotating over the partitions: per-record Python work is then one list item and one
    delivery callback. The sequence number is still the order in which records were handed to
    the client, so each partition receives its records in seq order.

    While records flow, the producer keeps only what cannot be recomputed: per run its length,
    send time and partition (runs are consecutive, so their starts follow), per delivery report,
    in arrival order, the payload id and the raw result (offset or error), and per poll() that
    served reports, how many had arrived and when it returned: reports reach the application only
    inside poll(), so that is when they arrived. ``columns()`` matches reports to records and
    turns them into status, offset, error and arrival time once, after the workload, so
    bookkeeping does not compete with sending for the CPU.
    """

    def __init__(self, name: str, spec: ProducerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event):
        super().__init__(name=f"producer-{name}", daemon=True)
        self.pname = name
        self.spec = spec
        self.topic = topic
        self.partitions = partitions
        self.stop_event = stop
        self._prefix_len = len(name) + 1
        self._runs: list[tuple[int, int, int]] = []  # (records, send_ts_ms, partition), in seq order
        self._sent = 0
        # Per delivery report, in arrival order: the payload id and what it said: the offset, or None
        # for a success without one (acks=0), or the KafkaError.
        self._dr_value: list[bytes] = []
        self._dr_result: list[int | KafkaError | None] = []
        self._dr_marks: list[tuple[int, int]] = []  # (reports so far, time_ns) after each poll that served some
        self._refused: dict[int, str] = {}  # seq -> the client's error, for records it would not queue
        self.conf = cluster.client_config(name, **{
            "acks": spec.acks,
            "enable.idempotence": spec.idempotence,
            "retries": spec.retries,
            "max.in.flight.requests.per.connection": spec.max_in_flight,
            "linger.ms": spec.linger_ms,
            "delivery.timeout.ms": spec.delivery_timeout_ms,
            "request.timeout.ms": min(5000, spec.delivery_timeout_ms),
            "metadata.max.age.ms": 5000,
            "topic.metadata.refresh.interval.ms": 2000,
            "queue.buffering.max.messages": QUEUE_MAX,
            "on_delivery": self._delivery_callback(),
            **spec.config,  # the scenario's own client properties, passed as is
            **idempotence_debug(spec),
        })
        self.failure: BaseException | None = None
        self._msgs: list[dict] = [{"value": None} for _ in range(CHUNK_MAX)]  # see _send
        self._steps: queue.Queue[tuple[int, threading.Event]] = queue.Queue()  # send steps of a quiet producer
        self._clock_offset_ms = 0  # client_clock_skew: how far this client's wall clock is moved

    @property
    def sent(self) -> int:
        """Records handed to the client so far."""
        return self._sent

    def ready(self, timeout_s: float) -> None:
        """A thread in this process: ready as soon as it is made."""

    def txns(self) -> list[dict]:
        """txns.parquet's rows: a plain producer begins none."""
        return []

    def kill(self) -> None:
        """client_kill acts on transactional producers (a new instance fences the old); scenario
        validation refuses it on a plain one."""
        raise ValueError(f"producer {self.pname} is not transactional; client_kill needs a transactional producer")

    def acked(self) -> int:
        """Records whose delivery report said they were written, so far (triggers count them live)."""
        return sum(1 for r in list(self._dr_result) if not isinstance(r, KafkaError))

    def _reports(self) -> tuple[list[int | None], list[int | KafkaError | None]]:
        """Per seq: the report's arrival in ns (None: no report) and its result."""
        n, plen = self._sent, self._prefix_len
        ack_ns: list[int | None] = [None] * n
        result: list[int | KafkaError | None] = [None] * n
        reports = zip(self._dr_value, self._dr_result, strict=True)
        start = 0
        for end, t in self._dr_marks:
            for v, r in islice(reports, end - start):
                i = int(v[plen:])
                ack_ns[i], result[i] = t, r
            start = end
        return ack_ns, result

    def columns(self) -> dict[str, list]:
        """The recorded sends as produced.parquet columns (call after the thread ended)."""
        n = self._sent
        ack_ns, result = self._reports()
        send_ts: list[int] = []
        partition: list[int] = []
        for k, ts, part in self._runs:
            send_ts += [ts] * k
            partition += [part] * k
        keep_offset, retries = self.spec.acks != "0", self.spec.retries
        status: list[str] = []
        offset: list[int | None] = []
        error: list[str | None] = []
        for a, r in zip(ack_ns, result, strict=True):
            if a is None:
                status.append("info")
                offset.append(None)
                error.append("run ended before a delivery report")
            elif isinstance(r, KafkaError):
                status.append(classify(r, retries))
                offset.append(None)
                error.append(r.name())
            else:
                status.append("ok")
                offset.append(r if keep_offset and r is not None and r >= 0 else None)
                error.append(None)
        for i, why in self._refused.items():
            status[i], error[i] = "fail", why
        return {
            "value": [f"{self.pname}-{i}" for i in range(n)], "producer": [self.pname] * n, "seq": list(range(n)),
            "topic": [self.topic] * n, "partition": partition[:n],
            "acks": [self.spec.acks] * n, "status": status, "offset": offset,
            "send_ts_ms": send_ts[:n], "ack_ts_ms": [None if a is None else a // 1_000_000 for a in ack_ns],
            "error": error,
        }

    def _delivery_callback(self) -> Callable[[KafkaError | None, Message], None]:
        """The delivery report handler, run once per record: two appends and nothing else. Which
        record a report is for (the seq in its payload id) is found after the workload, and when
        it arrived is noted once per poll() (_poll): parsing the id and reading the clock here
        took over half of the handler's time."""
        values, results = self._dr_value.append, self._dr_result.append

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            values(msg.value())
            results(msg.offset() if err is None else err)

        return on_delivery

    def _poll(self, p: Producer, timeout: float) -> None:
        """``p.poll``, noting how many delivery reports had arrived when it returned, and when."""
        p.poll(timeout)
        self._mark()

    def _mark(self) -> None:
        if len(self._dr_result) != (self._dr_marks[-1][0] if self._dr_marks else 0):
            self._dr_marks.append((len(self._dr_result), time.time_ns()))

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # surfaced by the runner
            self.failure = e
        finally:
            self._mark()  # reports served anywhere else (none expected) arrived by now

    def skew_clock(self, offset_s: float) -> None:
        """client_clock_skew: this client's wall clock runs ``offset_s`` off the true time from now
        (0: true again). librdkafka reads the wall clock only to stamp a record's CreateTime
        (rd_kafka_msg_new0: rd_uclock); its timeouts and backoffs run on the monotonic clock. The
        client shares the harness's process, whose clock the history is stamped with, so the moved
        clock is given to librdkafka as each record's timestamp instead of moving the process's."""
        self._clock_offset_ms = round(offset_s * 1000)

    def _send(self, p: Producer, seq: int, n: int, part: int) -> None:
        """Hand records seq..seq+n-1 to the client for one partition, recording the run."""
        prefix = f"{self.pname}-"
        # The message dicts are reused: produce_batch copies each value, and building 40,000
        # fresh dicts per call cost about a tenth of the producer's time.
        msgs = self._msgs if n == len(self._msgs) else self._msgs[:n]
        for m, i in zip(msgs, range(seq, seq + n), strict=True):
            m["value"] = f"{prefix}{i}"
        sent_ms = now_ms()
        self._runs.append((n, sent_ms, part))
        self._sent += n
        if self._clock_offset_ms:  # produce_batch takes no timestamps: one produce() a record
            queued = self._send_stamped(p, msgs, part, sent_ms + self._clock_offset_ms)
        else:
            queued = p.produce_batch(self.topic, msgs, partition=part)
        if queued != n:
            # Not queued, so definitely not written (the queue has headroom, so this is rare).
            for i, m in enumerate(msgs, seq):
                if "_error" in m:
                    err = m.pop("_error")
                    self._refused[i] = err.name() if isinstance(err, KafkaError) else str(err)

    def _send_stamped(self, p: Producer, msgs: list[dict], part: int, stamp_ms: int) -> int:
        """Hand ``msgs`` to the client one by one with CreateTime ``stamp_ms``; one it will not
        queue gets an ``_error``, as produce_batch marks it. Returns how many were queued."""
        queued = 0
        for m in msgs:
            try:
                p.produce(self.topic, m["value"], partition=part, timestamp=stamp_ms)
                queued += 1
            except (BufferError, KafkaException) as e:
                m["_error"] = e.args[0] if isinstance(e, KafkaException) else e
        return queued

    def send_one(self, partition: int) -> None:
        """A workload step: send the next record to ``partition`` and return once it is acknowledged
        (or refused, or its delivery timeout passed). Only a quiet producer takes steps."""
        if not self.spec.quiet:
            raise ValueError(f"producer {self.pname} is not quiet; send steps need quiet = true")
        done = threading.Event()
        self._steps.put((partition, done))
        if not done.wait(self.spec.delivery_timeout_ms / 1000 + 10):
            raise TimeoutError(f"producer {self.pname}: the send step had no delivery report")

    def _run_quiet(self, p: Producer) -> None:
        """Send only what steps ask for, one record at a time, each waited for before the next."""
        seq = 0
        while not self.stop_event.is_set():
            try:
                partition, done = self._steps.get(timeout=0.05)
            except queue.Empty:
                self._poll(p, 0)
                continue
            reports = len(self._dr_result)
            self._send(p, seq, 1, partition)
            seq += 1
            deadline = time.monotonic() + self.spec.delivery_timeout_ms / 1000 + 5
            while len(self._dr_result) == reports and time.monotonic() < deadline:
                self._poll(p, 0.01)
            done.set()

    def _run(self) -> None:
        p = Producer(self.conf, logger=LOG)
        if self.spec.quiet:
            self._run_quiet(p)
            return
        rate, parts, stop = self.spec.rate, self.partitions, self.stop_event
        unlimited = rate >= UNLIMITED_RATE
        t0 = time.monotonic()
        base = 0  # seq at t0: the rate is kept from here
        seq = part = 0
        while not stop.is_set():
            if unlimited:
                due = BATCH_MAX
            else:
                due = base + int((time.monotonic() - t0) * rate) - seq
                if due > rate:  # fell behind by over a second (e.g. paused by a fault): do not burst
                    t0, base, due = time.monotonic(), seq, 1
                if due <= 0:  # wait for the next send's time, serving delivery reports meanwhile
                    self._poll(p, max(0.0, min(0.1, (seq + 1 - base) / rate - (time.monotonic() - t0))))
                    continue
            room = QUEUE_MAX - QUEUE_HEADROOM - len(p)
            if room <= 0:
                self._poll(p, 0.05)  # queue full (brokers unreachable or slow): wait, as produce() would
                continue
            n = min(due, BATCH_MAX, room)
            # Equal runs for every partition (the rest waits for the next turn), or single records
            # round-robin when there are fewer than partitions: the spread stays even either way.
            chunk, runs = (min(CHUNK_MAX, n // parts), parts) if n >= parts else (1, n)
            for _ in range(runs):
                self._send(p, seq, chunk, part)
                seq += chunk
                part = (part + 1) % parts
            self._poll(p, 0)
        # flush() would serve the last reports without saying when each came: poll until none is due.
        deadline = time.monotonic() + self.spec.delivery_timeout_ms / 1000 + 5
        while len(p) and time.monotonic() < deadline:
            self._poll(p, 0.1)
        if self.spec.acks == "0":
            # "Delivered" meant handed to the socket; closing at once can cut the last batch off, a
            # loss the harness would cause itself. Stay connected while the bytes leave.
            time.sleep(ACKS0_LINGER_S)


class BareProducer(RecordingProducer):
    """The recording producer's settings and sending loop with nothing recorded, each delivery report
    only counted: librdkafka driven flat out as an application drives it, what the recording
    producer is measured against (benchmarks/producer.py)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._ok = 0

    def _delivery_callback(self) -> Callable[[KafkaError | None, Message], None]:
        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                self._ok += 1

        return on_delivery

    def acked(self) -> int:
        return self._ok


class RecordingConsumer(threading.Thread):
    """Tails every partition from offset 0 at one isolation level; ``rows`` follows consumed.parquet's
    columns (v2's isolation included; the final read's rows say null, read_uncommitted).

    The polling loop keeps each poll as the library returned it (its messages, the time it returned,
    every partition's cached high watermark just after) and builds no row: a row per message in
    Python costs the loop about fifteen times what the library spends fetching it, and a consumer
    that reads slower than the library would sees another cluster than an application does. The
    rows are built from the kept polls when ``rows`` is read (benchmarks/consumer.py)."""

    def __init__(self, name: str, spec: ConsumerSpec, cluster: KafkaCluster, topic: str, partitions: int,
                 stop: threading.Event, phase: str = "live", isolation: str = "read_uncommitted"):
        super().__init__(name=f"consumer-{name}", daemon=True)
        self.cname = name
        self.topic = topic
        self.partitions = partitions
        self.stop_event = stop
        self.phase = phase
        self.isolation = isolation if phase == "live" else "read_uncommitted"  # the final read: always
        self.conf = cluster.client_config(**{
            "group.id": f"kchaos-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": self.isolation,
            "fetch.wait.max.ms": 100,
            "enable.partition.eof": False,
            "topic.metadata.refresh.interval.ms": 2000,
            **(spec.config if phase == "live" else {}),  # the scenario's own client properties, passed as is
        })
        self.failure: BaseException | None = None
        self._tps = [TopicPartition(topic, p) for p in range(partitions)]
        self._polls: list[tuple[int, list[int], list]] = []  # (returned at, hw per partition, messages)
        self._polls_lock = threading.Lock()  # a poll kept while ``rows`` takes the kept ones
        self._rows: list[dict] = []
        self._highest: dict[int, int] = {}  # partition -> the highest offset in ``_rows``

    def run(self) -> None:
        try:
            c = Consumer(self.conf, logger=LOG)
            c.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
            try:
                while not self.stop_event.is_set():
                    self.poll_once(c)
            finally:
                c.close()
        except BaseException as e:
            self.failure = e

    def poll_once(self, c: Consumer, timeout: float = 0.2) -> int:
        """One poll kept as returned: the messages, when, and each partition's high watermark as the
        library's last fetch response gave it (cached: no request), the hw a row says it came with."""
        messages = c.consume(1000, timeout=timeout)
        if messages:
            poll = (now_ms(), [c.get_watermark_offsets(tp, cached=True)[1] for tp in self._tps], messages)
            with self._polls_lock:
                self._polls.append(poll)
        return len(messages)

    @property
    def rows(self) -> list[dict]:
        """Every message read so far as a consumed.parquet row, in the order the polls returned them."""
        self._take_polls()
        return self._rows

    def highest_read(self) -> dict[int, int]:
        self._take_polls()
        return dict(self._highest)

    def _take_polls(self) -> None:
        """The polls kept since the last call, made rows (and each partition's highest offset read)."""
        with self._polls_lock:
            kept, self._polls = self._polls, []
        for returned_ms, hws, messages in kept:
            for m in messages:
                if m.error() is None:
                    self._rows.append(self._row(m, len(self._rows), returned_ms, hws))
                    p = m.partition()
                    self._highest[p] = max(self._highest.get(p, -1), m.offset())

    def _row(self, m, seq: int, returned_ms: int, hws: list[int]) -> dict:
        hw = hws[m.partition()] if m.partition() < len(hws) else None
        value = m.value()
        return {"consumer": self.cname, "seq": seq, "topic": self.topic, "partition": m.partition(),
                "offset": m.offset(), "value": value.decode(errors="replace") if value is not None else "",
                "poll_ts_ms": returned_ms, "hw": hw if hw is not None and hw >= 0 else None, "phase": self.phase,
                "isolation": self.isolation if self.phase == "live" else None, "group": None, "generation": None}


class BareConsumer(RecordingConsumer):
    """The recording consumer's settings, reading flat out and keeping nothing but counts: librdkafka
    driven as an application drives it, what the recording consumer is measured against."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = 0
        self.first_ms = self.last_ms = 0

    def poll_once(self, c: Consumer, timeout: float = 0.2) -> int:
        n = len(c.consume(1000, timeout=timeout))
        if n:
            self.last_ms = now_ms()
            self.first_ms = self.first_ms or self.last_ms
            self.read += n
        return n

    def ready(self, timeout_s: float) -> None:
        """In the library's process: nothing to wait for (the Go drivers' bare programs start first)."""


def final_read(cluster: KafkaCluster, topic: str, partitions: int, timeout_s: float = 120) -> list[dict]:
    """After healing: read every partition from offset 0 to its end (phase "final")."""
    reader = RecordingConsumer("final", ConsumerSpec(), cluster, topic, partitions, threading.Event(), phase="final")
    c = Consumer(reader.conf, logger=LOG)
    try:
        ends = {}
        for p in range(partitions):
            _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
            ends[p] = hi
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])

        def at_the_end() -> bool:
            reader.poll_once(c, timeout=0.5)
            positions = {tp.partition: tp.offset for tp in c.position(
                [TopicPartition(topic, p) for p in range(partitions)])}
            return all(ends[p] <= 0 or positions[p] >= ends[p] for p in range(partitions))

        until(at_the_end, timeout_s, f"final read did not reach the end offsets {ends}", interval_s=0)
    finally:
        c.close()
    return reader.rows
