"""Disk faults on a real cluster: the leader's log directory fills up, then another broker's fails
with I/O errors and a third's slows down, while acks=all writes go on. Kafka takes a failed log
directory as the broker's end (it halts); each heal gives the disk back and starts the broker
again; nothing acknowledged is lost, and the brokers' own logs say why each one stopped."""

from __future__ import annotations

import json

import pytest

from harness.checker import check_runs
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

SAFE_WORKLOAD = """
[[producers]]
acks = "all"
idempotence = true
rate = 300
"""

DISKS = """
name = "disks"
kafka_version = "3.9.1"
duration_s = 24
zookeepers = 1

[topic]
partitions = 3
replication_factor = 3
min_insync_replicas = 2
""" + SAFE_WORKLOAD + """
[[faults]]
at_s = 3
duration_s = 3
kind = "disk_full"
target = "broker:1"

[[faults]]
at_s = 9
duration_s = 3
kind = "disk_error"
target = "broker:2"
op = "write"

[[faults]]
at_s = 16
duration_s = 3
kind = "slow_disk"
target = "broker:3"
latency_ms = 150
"""


@pytest.mark.chaos_long  # the default tier stays under 15 minutes
def test_full_failing_and_slow_disks_lose_nothing_acknowledged(tmp_path):
    require_docker(["3.9.1"])
    (tmp_path / "d.toml").write_text(DISKS)
    res = runner.execute(load(tmp_path / "d.toml"), tmp_path / "run", log=lambda m: None)
    events = [json.loads(line) for line in (res.path / "events.jsonl").read_text().splitlines()]
    faults = {e["kind"]: e for e in events if e["type"] == "fault"}
    assert sorted(faults) == ["disk_error", "disk_full", "slow_disk"]
    assert faults["disk_full"]["restarted"] == [1] and faults["disk_error"]["restarted"] == [2], \
        "a broker whose only log directory failed halted, and its heal started it again"
    assert "restarted" not in faults["slow_disk"], "a slow disk fails nothing"
    logs = {b: (res.path / "logs" / f"kafka-{b}.log").read_text() for b in (1, 2)}
    assert "No space left on device" in logs[1] and "Input/output error" in logs[2]
    (v,) = check_runs([res.path])
    assert v.verdict == "pass" and not any(v.anomalies.values()), v.anomalies


JBOD = """
name = "jbod"
kafka_version = "3.9.1"
duration_s = 18
log_dirs = 2

[topic]
partitions = 4
replication_factor = 3
min_insync_replicas = 2
""" + SAFE_WORKLOAD + """
[[faults]]
at_s = 3
duration_s = 6
kind = "log_dir_failure"
target = "broker:1"
dir = 2
"""


def jbod_run(tmp_path, **fields):
    (tmp_path / "j.toml").write_text(JBOD)
    s = load(tmp_path / "j.toml", **fields)
    require_docker([s.kafka_version])
    res = runner.execute(s, tmp_path / "run", log=lambda m: None)
    events = [json.loads(line) for line in (res.path / "events.jsonl").read_text().splitlines()]
    (fault,) = [e for e in events if e["type"] == "fault"]
    log = (res.path / "logs" / "kafka-1.log").read_text()
    (v,) = check_runs([res.path])
    return fault, log, v


@pytest.mark.chaos_long  # the default tier stays under 15 minutes
def test_one_failed_log_directory_of_two_and_the_broker_carries_on(tmp_path):
    """Broker 1's second log directory fails: Kafka stops serving the replicas in it and the broker
    runs on with its first; the heal mends it and restarts the broker, which serves it again."""
    fault, log, v = jbod_run(tmp_path, zookeepers=1)
    assert "Stopping serving replicas in dir /var/lib/kafka/data-2" in log
    assert "have failed" not in log, "the broker did not halt: its other directory was fine"
    assert fault["restarted"] == [1]
    assert v.verdict == "pass" and not any(v.anomalies.values()), v.anomalies


@pytest.mark.chaos_long
def test_one_failed_log_directory_of_two_in_kraft_jbod(tmp_path):
    """The same on KRaft (JBOD since 3.7, KIP-858): the controller learns of the failed directory."""
    fault, log, v = jbod_run(tmp_path, kafka_version="4.1.2", mode="kraft")
    assert "Stopping serving replicas in dir /var/lib/kafka/data-2" in log
    assert fault["restarted"] == [1]
    assert v.verdict == "pass" and not any(v.anomalies.values()), v.anomalies
