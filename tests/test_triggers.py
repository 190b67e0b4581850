"""Triggers on a real cluster: a fault fired by the producer's acknowledgements, a second fired by
the first one's end, and a third whose event never comes, which makes the run "not exercised"; a
fault fired by a replica truncating its log, as the broker's own log says it did."""

from __future__ import annotations

import json
import re

import pytest

from harness.checker import check_runs
from harness.cluster.broker_log import truncation
from harness.report.page import write_report
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker, run_on_kept

pytestmark = pytest.mark.docker  # its first test shares tests/test_run.py's cluster (conftest.CLUSTER_GROUPS)

SCENARIO = """
name = "triggered"
kafka_version = "3.9.1"
duration_s = 14
zookeepers = 1  # the brokers' events are under test, not the ensemble's

[topic]
partitions = 1

[[producers]]
acks = "all"
idempotence = true
rate = 300

# On a saturated machine a kill takes a second to apply and up to five to heal (the broker's
# restart): the first fault fires early and is short, so the second, on its end, fires well
# before the workload ends.
[[faults]]          # 0: the leader killed at the 300th acknowledgement, 0.2 s later
at_s = 0
duration_s = 2
kind = "kill"
target = "leader"
[faults.on]
event = "acked"
count = 300
delay_s = 0.2

[[faults]]          # 1: a follower paused as soon as the kill is healed
at_s = 0
duration_s = 2
kind = "pause"
target = "follower"
[faults.on]
event = "fault_end"
fault = 0

[[faults]]          # 2: waits for a high watermark the run never reaches
at_s = 0
duration_s = 1
kind = "pause"
target = "leader"
[faults.on]
event = "hw"
offset = 1000000

[cluster]  # tests/test_run.py's cluster settings: the two share a cluster
replica_lag_time_max_ms = 15000
"""


def test_triggered_faults_fire_on_their_events_and_an_unfired_one_is_not_exercised(tmp_path, kept_cluster):
    require_docker(["3.9.1"])
    (tmp_path / "t.toml").write_text(SCENARIO)
    res = run_on_kept(kept_cluster, load(tmp_path / "t.toml"), tmp_path / "run", "triggered")
    (v,) = check_runs([res.path])
    events = [json.loads(line) for line in (res.path / "events.jsonl").read_text().splitlines()]
    fired = {e["fault"]: e for e in events if e["type"] == "trigger"}
    faults = {e["kind"]: e for e in events if e["type"] == "fault"}
    assert sorted(fired) == [0, 1]
    assert fired[0]["observed"].endswith("acknowledged") and int(fired[0]["observed"].split()[0]) >= 300
    kill, pause = faults["kill"], faults["pause"]
    # Order, not speed (the latency is a figure, not a test): the delay is kept, the second fault
    # follows the first's end, and neither waits for anything else.
    assert 200 <= kill["start_ms"] - kill["trigger_ms"] < 5000, "fired 0.2 s after its event"
    assert kill["end_ms"] <= pause["trigger_ms"] <= pause["start_ms"] < kill["end_ms"] + 5000
    assert [e["fault"] for e in events if e["type"] == "trigger_unfired"] == [2]
    assert v.verdict == "not exercised" and v.not_exercised and not v.failed
    assert not any(v.anomalies.values()), v.anomalies
    html = write_report([res.path], tmp_path / "report.html").read_text()
    assert "fault_end fault=0: fault 0 ended" in html and "never fired" in html


TRUNCATED = """
name = "truncated"
kafka_version = "3.9.1"
duration_s = 16
zookeepers = 1

[topic]
partitions = 1

[[producers]]
acks = "1"
rate = 300

[[faults]]          # 0: both followers stop fetching: what the leader takes next, only it has
at_s = 2
duration_s = 3
kind = "cut_fetch"
target = "followers"

[[faults]]          # 1: the leader leaves cleanly a second later; a follower without those records leads
at_s = 3
duration_s = 2
kind = "restart"
target = "leader"

[[faults]]          # 2: back, the old leader drops what nobody else has: fired on that truncation
at_s = 0
duration_s = 1
kind = "pause"
target = "follower"
[faults.on]
event = "truncation"
delay_s = 0.2
"""


@pytest.mark.chaos_long  # the default tier stays under 15 minutes
def test_a_fault_fires_on_a_replicas_truncation_as_its_log_records_it(tmp_path):
    """Replicas that had records the new leader lacks drop them (acks=1: the old leader on its
    return, a follower that had fetched more than the one elected); the triggered fault fires on the
    first such truncation, and what it says it saw is that line of that broker's own log."""
    require_docker(["3.9.1"])
    (tmp_path / "t.toml").write_text(TRUNCATED)
    res = runner.execute(load(tmp_path / "t.toml"), tmp_path / "run", log=lambda m: None)
    events = [json.loads(line) for line in (res.path / "events.jsonl").read_text().splitlines()]
    (fired,) = [e for e in events if e["type"] == "trigger"]
    m = re.fullmatch(r"broker (\d+) truncated (\S+)-0 to offset (\d+)", fired["observed"])
    assert m and m[2] == load(tmp_path / "t.toml").topic.name, fired
    logged = sorted((t for path in (res.path / "logs").glob("kafka-*.log")
                     for x in path.read_text().splitlines()
                     if (t := truncation(int(path.stem.split("-")[1]), x)) and t.topic == m[2]),
                    key=lambda t: t.ts_ms)
    first = [t for t in logged if t.ts_ms == logged[0].ts_ms]  # the earliest (two in one millisecond: either)
    assert (int(m[1]), int(m[3])) in {(t.broker, t.offset) for t in first}, (fired, logged)
    assert first[0].ts_ms <= fired["ts_ms"] <= first[0].ts_ms + 1000, "seen as the broker wrote it"
    pause = next(e for e in events if e["type"] == "fault" and e["kind"] == "pause")
    assert pause["start_ms"] - pause["trigger_ms"] >= 200


QUIET = """
name = "steps"
kafka_version = "3.9.1"
duration_s = 10
zookeepers = 1
[topic]
partitions = 2
[[producers]]
name = "q"
acks = "all"
idempotence = true
quiet = true
[[producers]]
name = "load"
acks = "all"
rate = 50
[[faults]]          # 0: one record to partition 1
at_s = 2
duration_s = 0
kind = "send"
target = "client:q"
partition = 1
[[faults]]          # 1: the next, once the first is acknowledged
at_s = 0
duration_s = 0
kind = "send"
target = "client:q"
partition = 1
[faults.on]
event = "fault_end"
fault = 0
[[faults]]          # 2: and a third, on partition 0
at_s = 0
duration_s = 0
kind = "send"
target = "client:q"
[faults.on]
event = "fault_end"
fault = 1
"""


@pytest.mark.chaos_long  # a cluster of its own; the default suite's triggers are the test above
def test_a_quiet_producer_sends_one_record_per_step_each_acknowledged_before_the_next(tmp_path):
    require_docker(["3.9.1"])
    p = tmp_path / "s.toml"
    p.write_text(QUIET)
    res = runner.execute(load(p), tmp_path / "run", log=lambda m: None)
    import pyarrow.parquet as pq

    rows = sorted((r for r in pq.read_table(res.path / "produced.parquet").to_pylist() if r["producer"] == "q"),
                  key=lambda r: r["seq"])
    assert [(r["value"], r["partition"], r["status"]) for r in rows] == [
        ("q-0", 1, "ok"), ("q-1", 1, "ok"), ("q-2", 0, "ok")], "three steps, three records, nothing else"
    assert rows[0]["ack_ts_ms"] <= rows[1]["send_ts_ms"] and rows[1]["ack_ts_ms"] <= rows[2]["send_ts_ms"]
    (v,) = check_runs([res.path])
    assert v.verdict == "pass" and all(n == 0 for n in v.anomalies.values()), v.anomalies
