"""librdkafka's clients as benchmarks and runs use them: the bare producer counts its delivery
reports; the recording consumer keeps each poll as the library returned it and builds the rows when
they are read, on polls the test builds (the conformance test runs the recording clients against real Kafka)."""

from __future__ import annotations

import threading

from harness.clients.librdkafka.workload import BareConsumer, BareProducer, RecordingConsumer
from harness.scenario import ConsumerSpec, ProducerSpec


class Conf:
    def client_config(self, *name, **kw):
        return kw


class Msg:
    def __init__(self, partition: int, offset: int, value: bytes | None, error: str | None = None):
        self._p, self._o, self._v, self._e = partition, offset, value, error

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def value(self):
        return self._v

    def error(self):
        return self._e


class Polls:
    """A stand-in for confluent_kafka.Consumer: the polls it returns, and the cached hws."""

    def __init__(self, polls: list[list[Msg]], hws: dict[int, int]):
        self.polls, self.hws = polls, hws

    def consume(self, n, timeout):
        return self.polls.pop(0) if self.polls else []

    def get_watermark_offsets(self, tp, cached):
        return 0, self.hws.get(tp.partition, -1001)


def test_rows_are_built_from_the_kept_polls_in_order_with_each_partitions_hw():
    r = RecordingConsumer("c1", ConsumerSpec(), Conf(), "chaos", 3, threading.Event())
    c = Polls([[Msg(0, 5, b"p-1"), Msg(2, 9, None), Msg(1, 0, None, error="_PARTITION_EOF")],
               [Msg(0, 6, b"p-\xff")]], {0: 7, 2: 10})
    assert r.poll_once(c) == 3 and r.poll_once(c) == 1 and r.poll_once(c) == 0
    rows = r.rows
    assert [(x["seq"], x["partition"], x["offset"], x["value"], x["hw"]) for x in rows] == [
        (0, 0, 5, "p-1", 7), (1, 2, 9, "", 10), (2, 0, 6, "p-\ufffd", 7)], "an error is no row; hw -1001 is none"
    assert rows[0]["poll_ts_ms"] == rows[1]["poll_ts_ms"] <= rows[2]["poll_ts_ms"], "a poll's time, per poll"
    assert {x["isolation"] for x in rows} == {"read_uncommitted"} and {x["phase"] for x in rows} == {"live"}
    c.polls.append([Msg(1, 0, b"q")])
    r.poll_once(c)
    assert [x["seq"] for x in r.rows] == [0, 1, 2, 3], "read again: the rows so far, and the new polls after them"


def test_the_final_reads_rows_say_no_isolation():
    r = RecordingConsumer("final", ConsumerSpec(), Conf(), "chaos", 1, threading.Event(), phase="final",
                          isolation="read_committed")
    r.poll_once(Polls([[Msg(0, 0, b"a")]], {0: 1}))
    assert r.rows[0]["isolation"] is None and r.conf["isolation.level"] == "read_uncommitted"


def test_the_bare_consumer_counts_and_keeps_nothing():
    b = BareConsumer("bare", ConsumerSpec(), Conf(), "chaos", 1, threading.Event())
    c = Polls([[Msg(0, 0, b"a"), Msg(0, 1, b"b")], [], [Msg(0, 2, b"c")]], {0: 3})
    for _ in range(3):
        b.poll_once(c)
    assert b.read == 3 and 0 < b.first_ms <= b.last_ms and b.rows == []


def test_the_bare_producer_counts_the_successful_delivery_reports_and_keeps_nothing():
    from confluent_kafka import KafkaError

    b = BareProducer("bare", ProducerSpec(name="bare"), Conf(), "chaos", 1, threading.Event())
    report = b.conf["on_delivery"]
    report(None, Msg(0, 0, b"bare-0"))
    report(KafkaError(KafkaError._MSG_TIMED_OUT), Msg(0, -1, b"bare-1"))
    report(None, Msg(0, 1, b"bare-2"))
    assert b.acked() == 2 and b._dr_value == [] and b._dr_result == []
