"""Clock faults on a real cluster: the leader's wall clock jumps an hour ahead and comes back, as the
times it stamps on the records it appends show (LogAppendTime); the machine's clock does not move."""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

from harness import history
from harness.checker import check_runs
from harness.cluster import KafkaCluster
from harness.run import runner
from harness.scenario import load
from harness.setup import cluster_images, engine
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

SKEWED = """
name = "skewed"
kafka_version = "3.9.1"
duration_s = 12
zookeepers = 1

[topic]
partitions = 1
config = { "message.timestamp.type" = "LogAppendTime" }

[[producers]]
acks = "all"
idempotence = true
rate = 200

[[faults]]
at_s = 3
duration_s = 5
kind = "clock_skew"
target = "leader"
offset_s = 3600
"""


def record_times(c: KafkaCluster, topic: str, kind: int | None = None) -> dict[str, int]:
    """Each record's value and its timestamp (of ``kind``, asserted, when given)."""
    consumer = Consumer(c.client_config(**{"group.id": f"clock-test-{kind}", "enable.auto.commit": False}))
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: dict[str, int] = {}
        idle = 0
        while idle < 5:
            batch = consumer.consume(500, timeout=1)
            idle = idle + 1 if not batch else 0
            for m in batch:
                if m.error() is None:
                    got, ts = m.timestamp()
                    assert kind is None or got == kind
                    out[m.value().decode()] = ts
        return out
    finally:
        consumer.close()


@pytest.mark.chaos_long  # the default tier stays under 15 minutes
def test_the_leaders_clock_jumps_an_hour_and_back_while_the_machines_does_not(tmp_path):
    require_docker(["3.9.1"])
    (tmp_path / "s.toml").write_text(SKEWED)
    s = load(tmp_path / "s.toml")
    wall0, mono0 = time.time(), time.monotonic()
    with KafkaCluster(s.cluster_settings(), cluster_images(s.kafka_version)) as c:
        res = runner.execute(s, tmp_path / "run", log=lambda m: None, cluster=c)
        stamped = record_times(c, s.topic.name, TIMESTAMP_LOG_APPEND_TIME)
    assert abs((time.time() - wall0) - (time.monotonic() - mono0)) < 1.0, "the machine's clock did not move"
    events = [json.loads(line) for line in (res.path / "events.jsonl").read_text().splitlines()]
    (skew,) = [e for e in events if e["type"] == "fault"]
    start, end = skew["start_ms"], skew["end_ms"]
    sent = pq.read_table(res.path / history.PRODUCED, columns=["value", "send_ts_ms", "ack_ts_ms", "status"])
    ahead = {}  # the leader's stamp minus the machine's time of each acknowledged record
    for value, send, ack, status in zip(*sent.to_pydict().values(), strict=True):
        if status == "ok" and value in stamped:
            ahead[value] = (send, ack, (stamped[value] - ack) / 1000)
    during = [d for send, ack, d in ahead.values() if start + 1500 < send and ack < end - 200]
    outside = [d for send, ack, d in ahead.values() if ack < start - 200 or send > end + 1500]
    assert during and all(3598 < d < 3601 for d in during), during[:5]
    assert outside and all(abs(d) < 2 for d in outside), [d for d in outside if abs(d) >= 2][:5]
    (v,) = check_runs([res.path])
    assert v.verdict == "pass", v.anomalies
    assert not engine.client().containers.list(all=True, filters={"name": c.name})


CLIENT_SKEWED = """
name = "client-skewed"
kafka_version = "3.9.1"
duration_s = 10
zookeepers = 1

[topic]
partitions = 1

[[producers]]
name = "r"
acks = "all"
rate = 100

[[producers]]
name = "j"
client = "java"
acks = "all"
rate = 100

[[faults]]
at_s = 3
duration_s = 4
kind = "client_clock_skew"
target = "client:r"
offset_s = -3600

[[faults]]
at_s = 3
duration_s = 4
kind = "client_clock_skew"
target = "client:j"
offset_s = -3600
"""


@pytest.mark.chaos_long  # a cluster of its own; the default tier tests the clock's moves (test_units_clocks.py)
def test_a_producers_clock_moves_an_hour_back_and_returns_while_the_machines_does_not(tmp_path):
    """librdkafka's records are stamped from the moved clock; the Java producer's JVM runs on it
    (libfaketime): its own stamps move while the history it writes, and the machine, keep true time."""
    require_docker(["3.9.1"])
    (tmp_path / "s.toml").write_text(CLIENT_SKEWED)
    s = load(tmp_path / "s.toml")
    wall0, mono0 = time.time(), time.monotonic()
    with KafkaCluster(s.cluster_settings(), cluster_images(s.kafka_version)) as c:
        res = runner.execute(s, tmp_path / "run", log=lambda m: None, cluster=c)
        stamped = record_times(c, s.topic.name)
    assert abs((time.time() - wall0) - (time.monotonic() - mono0)) < 1.0, "the machine's clock did not move"
    events = [json.loads(line) for line in (res.path / "events.jsonl").read_text().splitlines()]
    windows = {e["target"]: (e["start_ms"], e["end_ms"]) for e in events if e["type"] == "fault"}
    sent = pq.read_table(res.path / history.PRODUCED, columns=["value", "producer", "send_ts_ms", "status"])
    for producer in ("r", "j"):
        start, end = windows[f"client:{producer}"]
        behind = [(send, (stamped[v] - send) / 1000) for v, who, send, status in zip(*sent.to_pydict().values(),
                                                                                      strict=True)
                  if who == producer and status == "ok" and v in stamped]
        # libfaketime reads its file at the first call of each second: a second's grace at each end
        during = [d for send, d in behind if start + 1200 < send < end - 200]
        outside = [d for send, d in behind if send < start - 200 or send > end + 1200]
        assert during and all(-3601.5 < d < -3598.5 for d in during), (producer, during[:5])
        assert outside and all(abs(d) < 1.5 for d in outside), (producer, [d for d in outside if abs(d) >= 1.5][:5])
    (v,) = check_runs([res.path])
    assert v.verdict == "pass", v.anomalies
