"""Disk faults on a real cluster: the leader's log directory fills up, then another broker's fails
with I/O errors and a third's slows down, while acks=all writes go on. Kafka takes a failed log
directory as the broker's end (it halts); each heal gives the disk back and starts the broker
again; nothing acknowledged is lost, and the brokers' own logs say why each one stopped."""

from __future__ import annotations

import json

import pytest

from harness import runner
from harness.checker import check_runs
from harness.scenario import load
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

DISKS = """
name = "disks"
duration_s = 24
zookeepers = 1

[topic]
partitions = 3
replication_factor = 3
min_insync_replicas = 2

[[producers]]
acks = "all"
idempotence = true
rate = 300

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
