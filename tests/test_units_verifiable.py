"""Kafka's verifiable-client protocol read into the history contract, before any broker: the events a
VerifiableProducer and VerifiableConsumer print (their shapes as kafka-tools' sources write them)
become produced.parquet's rows and a member's lines; a failed send's partition is the one Kafka's
partitioner gives its key (murmur2 checked against Kafka's own test vectors); what the protocol does
not report is declared and the verdict says what it left unjudged; tables the tools cannot run are
refused with the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import clients
from harness.checker.capabilities import not_judged
from harness.clients.java_errors import classify
from harness.clients.registry import LIBRARIES
from harness.clients.verifiable import events
from harness.clients.verifiable.driver import consumer_args, value_prefix
from harness.history.contract import RunConfig
from harness.scenario import ConsumerSpec, GroupSpec, ProducerSpec

# org.apache.kafka.common.utils.UtilsTest#testMurmur2: Kafka's own expected values
KAFKA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                 b"a-little-bit-longer-string": -1486304829,
                 b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}


@pytest.mark.parametrize("data", list(KAFKA_MURMUR2))
def test_murmur2_is_kafkas(data):
    assert events.murmur2(data) == KAFKA_MURMUR2[data]


def test_a_keys_partition_is_the_default_partitioners():
    # toPositive(murmur2("21")) % 3: -973932308 & 0x7fffffff = 1173551340, % 3 = 0
    assert events.key_partition("21", 3) == 1173551340 % 3
    assert {events.key_partition(str(k), 4) for k in range(50)} == {0, 1, 2, 3}


def success(seq: int, partition: int, offset: int, ts: int, prefix: int = 7) -> dict:
    return {"timestamp": ts, "name": "producer_send_success", "key": str(seq), "value": f"{prefix}.{seq}",
            "topic": "t", "partition": partition, "offset": offset}


def error(seq: int, ts: int, exception: str, message: str, prefix: int = 7) -> dict:
    return {"timestamp": ts, "name": "producer_send_error", "key": str(seq), "value": f"{prefix}.{seq}",
            "topic": "t", "exception": f"class org.apache.kafka.common.errors.{exception}", "message": message}


def rows(evs: list[dict], acks: str = "all", retries: int = 5) -> list[dict]:
    return events.producer_rows(evs, "a", 7, "t", acks, 3, 997, lambda e: classify(e, retries))


def test_a_producers_events_are_its_sends():
    evs = [{"timestamp": 100, "name": "startup_complete"}, success(0, 2, 0, 110), success(1, 0, 0, 111),
           error(2, 130, "TimeoutException", "Expiring 1 record(s)"), error(3, 131, "RecordTooLargeException", "big"),
           {"timestamp": 140, "name": "shutdown_complete"},
           {"timestamp": 141, "name": "tool_data", "sent": 6, "acked": 2, "target_throughput": 10,
            "avg_throughput": 1.0}]
    out = rows(evs)
    assert [r["seq"] for r in out] == [0, 1, 2, 3, 4, 5] and [r["value"] for r in out][:2] == ["7.0", "7.1"]
    assert [r["status"] for r in out] == ["ok", "ok", "info", "fail", "info", "info"]
    assert (out[0]["partition"], out[0]["offset"], out[0]["send_ts_ms"], out[0]["ack_ts_ms"]) == (2, 0, 110, 110)
    assert out[2]["error"] == "TimeoutException: Expiring 1 record(s)" and out[2]["offset"] is None
    assert out[2]["partition"] == events.key_partition("2", 3), "a failed send's partition: its key's"
    assert out[4] | {"partition": 0} == {"value": "7.4", "producer": "a", "seq": 4, "topic": "t", "acks": "all",
                                         "partition": 0, "status": "info", "offset": None, "send_ts_ms": 141,
                                         "ack_ts_ms": None, "error": events.NO_CALLBACK}
    assert out[4]["partition"] == events.key_partition("4", 3)


def test_sends_without_tool_data_end_at_the_highest_sequence_an_event_names():
    out = rows([success(0, 0, 0, 10), success(3, 1, 0, 12)])  # killed: no shutdown, no tool_data
    assert [r["status"] for r in out] == ["ok", "info", "info", "ok"]


def test_an_acks0_success_keeps_no_offset():
    assert rows([success(0, 1, -1, 10)], acks="0")[0]["offset"] is None


def test_two_producers_values_differ():
    assert value_prefix("a") != value_prefix("b") and value_prefix("a") == value_prefix("a")


def test_a_members_events_are_its_lines():
    evs = [{"timestamp": 1, "name": "startup_complete"},
           {"timestamp": 2, "name": "partitions_assigned", "partitions": [{"topic": "t", "partition": 1},
                                                                          {"topic": "t", "partition": 0}]},
           {"timestamp": 3, "name": "record_data", "key": "0", "value": "7.0", "topic": "t", "partition": 0,
            "offset": 0},
           {"timestamp": 3, "name": "records_consumed", "count": 1, "partitions": []},
           {"timestamp": 4, "name": "offsets_committed", "offsets": [{"topic": "t", "partition": 0, "offset": 1}],
            "success": True},
           {"timestamp": 5, "name": "offsets_committed", "offsets": [], "success": False,
            "error": "Commit cannot be completed since the group has already rebalanced"},
           {"timestamp": 6, "name": "partitions_revoked", "partitions": [{"topic": "t", "partition": 0}]},
           {"timestamp": 7, "name": "partitions_assigned", "partitions": [{"topic": "t", "partition": 0}]},
           {"timestamp": 8, "name": "record_data", "key": "0", "value": "7.0", "topic": "t", "partition": 0,
            "offset": 0}]
    lines = events.member_lines(evs, "g-1", "g", "read_committed")
    assert [x["t"] for x in lines] == ["rebalance", "read", "commit_failed", "rebalance", "rebalance", "read"]
    assert lines[0] == {"t": "rebalance", "kind": "assign", "partitions": [0, 1], "generation": 1, "ts_ms": 2}
    assert lines[1] == {"t": "read", "consumer": "g-1", "seq": 0, "topic": "t", "partition": 0, "offset": 0,
                        "value": "7.0", "poll_ts_ms": 3, "hw": None, "phase": "live", "isolation": "read_committed",
                        "group": "g", "generation": 1}
    assert lines[2]["error"].startswith("Commit cannot") and lines[3]["kind"] == "revoke"
    assert lines[5]["consumer"] == "g-1/2" and lines[5]["generation"] == 2, "a partition back: a new reader name"
    assert not [x for x in lines if x["t"] == "commit"], "the group's commits are the coordinator's record"


def test_other_stdout_lines_are_not_events():
    found, other = events.parse(['{"timestamp": 1, "name": "startup_complete"}', "Option --producer.config has "
                                 "been deprecated", "", "[1, 2]"])
    assert found == [{"timestamp": 1, "name": "startup_complete"}] and len(other) == 2


def test_the_consumer_reads_every_record_from_the_start():
    args = consumer_args("t", "g", "127.0.0.1:1", Path("/x.properties"), "classic", "roundrobin", 6000)
    assert args[args.index("--assignment-strategy") + 1] == "org.apache.kafka.clients.consumer.RoundRobinAssignor"
    assert "--verbose" in args and args[args.index("--reset-policy") + 1] == "earliest"
    assert "--group-protocol" in consumer_args("t", "g", "s", Path("/p"), "consumer")


def test_what_the_protocol_cannot_tell_is_in_the_verdict():
    run = RunConfig.model_validate({"clients": [{"name": "verifiable", "version": "kafka-tools 4.4.0",
                                                 "cannot_tell": list(LIBRARIES["verifiable"].cannot_tell)},
                                                {"name": "librdkafka", "version": "2.16.0"}]})
    found = {(n.client, n.unjudged, n.extent) for n in not_judged(run)}
    assert ("verifiable kafka-tools 4.4.0", "uncommitted_read", "part") in found
    assert ("verifiable kafka-tools 4.4.0", "latency", "whole") in found
    assert all(c.startswith("verifiable") for c, _, _ in found), "librdkafka reports all of it"


@pytest.mark.parametrize(("table", "key"), [
    (ProducerSpec(transactional=True), "transactional"),
    (ProducerSpec(quiet=True), "quiet"),
    (GroupSpec(commit="async"), "commit"),
    (GroupSpec(commit_every_records=40), "commit_every_records"),
    (ProducerSpec(config={"key.serializer": "x"}), "config.key.serializer"),
    (ProducerSpec(config={"kchaos.command": "/no/such/client"}), "config.kchaos.command"),
])
def test_what_the_tools_cannot_do_is_refused(table, key):
    why = clients.refusal("verifiable", table, "4.4.0")
    assert why is not None and why.startswith(f"{key}:") and "allowed" in why, why


def test_kip848_groups_need_a_tool_that_has_them():
    assert clients.refusal("verifiable", GroupSpec(protocol="consumer"), "2.8.2").startswith("protocol:")
    assert clients.refusal("verifiable", GroupSpec(protocol="consumer"), "4.4.0") is None
    assert clients.refusal("verifiable", GroupSpec(), "3.9.1") is None
    assert clients.refusal("verifiable", ConsumerSpec(), "3.9.1") is None
    assert clients.refusal("verifiable", ProducerSpec(idempotence=True, config={"compression.type": "lz4"}),
                           "3.9.1") is None


def test_an_executable_that_speaks_another_protocol_fails_its_run_with_its_name():
    from harness.clients.verifiable.driver import ToolProcess

    other = ToolProcess("p", ["sh", "-c", "echo 'hello, not JSON'; echo oops >&2"])
    other.launch()
    assert other.proc is not None
    other.proc.wait(10)
    why = other.failed(other.terminate(5))  # its output read to the end
    assert why is not None and "p (sh)" in why and "no startup_complete" in why and "oops" in why, why
    speaker = ToolProcess("q", ["sh", "-c", 'echo \'{"timestamp": 1, "name": "startup_complete"}\'; exit 3'])
    speaker.launch()
    assert speaker.proc is not None
    speaker.proc.wait(10)  # ended on its own before the stop's SIGTERM
    code = speaker.terminate(5)
    assert code == 3 and "exited 3" in speaker.failed(code)


def test_a_tools_acknowledgements_are_counted_as_it_writes_them_and_its_directory_goes_with_it():
    """Triggers count acknowledgements live while the tool's stdout is a file nobody parses until it ended."""
    import time

    from harness.clients.verifiable.driver import ToolProcess

    class Counting(ToolProcess):
        counted = b"producer_send_success"

    line = '{"timestamp": 1, "name": "producer_send_success", "value": "1.%d"}'
    script = "echo '{\"timestamp\": 1, \"name\": \"startup_complete\"}'; " + \
        "; ".join(f"echo '{line % i}'" for i in range(3)) + "; exec sleep 30"
    t = Counting("c", ["sh", "-c", script])
    t.launch()
    deadline = time.monotonic() + 10
    while t.seen < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert t.seen == 3 and t.events == []  # counted live, parsed only at the end
    assert t.stdout_path.exists()
    code = t.terminate(5)
    assert t.failed(code) is None
    assert [e["name"] for e in t.events] == ["startup_complete"] + ["producer_send_success"] * 3
    assert not t.stdout_path.parent.exists()


def test_a_producer_tool_slow_to_start_is_waited_for_before_the_workload_starts():
    """A JVM's start and its first metadata take seconds on a loaded machine: the producer's ``ready``
    returns once the tool said ``startup_complete`` and its first send was acknowledged (not at
    once, which took the start from the workload's seconds and, where it outlasted them, failed a
    tool that does speak the protocol; not at ``startup_complete``, after which the tool's first
    send waits for the metadata and the late tool then bursts to catch up), and gives up at its
    timeout on a tool that never says either."""
    import threading
    import time

    from harness.clients.verifiable.driver import ToolProcess, VerifiableProducer

    class Slow(VerifiableProducer):
        def __init__(self, argv: list[str]):
            ToolProcess.__init__(self, "a", argv, threading.Event())
            self._acked = None

    started = "echo '{\"timestamp\": 1, \"name\": \"startup_complete\"}'"
    acked = ("echo '{\"timestamp\": 2, \"name\": \"producer_send_success\", \"key\": \"0\", "
             "\"value\": \"7.0\", \"topic\": \"t\", \"partition\": 0, \"offset\": 0}'")
    slow = Slow(["sh", "-c", f"sleep 1.5; {started}; sleep 1.5; {acked}; exec sleep 30"])
    t0 = time.monotonic()
    slow.ready(20)
    assert 2.9 < time.monotonic() - t0 < 12 and slow.started() and slow.seen == 1
    slow.start()  # the process ready launched, not a second one
    slow.stop_event.set()
    slow.join(10)
    assert slow.failure is None and [e["name"] for e in slow.events] == ["startup_complete", "producer_send_success"]
    unacked = Slow(["sh", "-c", f"{started}; exec sleep 30"])
    t0 = time.monotonic()
    unacked.ready(1.0)
    assert 0.9 < time.monotonic() - t0 < 5 and unacked.started() and unacked.seen == 0
    unacked.proc.kill()
    mute = Slow(["sh", "-c", "exec sleep 30"])
    t0 = time.monotonic()
    mute.ready(0.5)
    assert time.monotonic() - t0 < 5 and not mute.started()
    mute.start()
    mute.stop_event.set()
    mute.join(10)
    assert "no startup_complete" in str(mute.failure)
