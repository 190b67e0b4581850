"""Apache Kafka's Java client against real Kafka, beyond the driver contract every driver keeps
(test_driver_conformance.py): a property kafka-clients refuses, or one the harness sets, exits 2
before any container; Java consumers and a KIP-848 group under a leader kill (chaos_long)."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from harness.checker import check_runs
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker
from tests.test_driver_conformance import BASE, require_driver

pytestmark = pytest.mark.docker


@pytest.mark.parametrize(("sets", "said"), [
    (["producers.0.config.no.such.thing=1"], "producers.0.config.no.such.thing: kafka-clients 3.9.1 has no producer"),
    (["producers.0.config.batch.size=many"], "producers.0.config.batch.size: Invalid value many"),
    (["producers.0.config.acks=all"], "producers.0.config.acks: use the producer's acks"),
    (["copier.config.max.poll.records=5"], "copier.config.max.poll.records: "),
    (["groups.0.config.group.id=mine"], "groups.0.config.group.id: use the group's name"),
])
def test_what_the_java_client_refuses_exits_2_before_any_container(tmp_path, sets, said):
    require_driver("3.9.1")
    p = tmp_path / "s.toml"
    p.write_text(BASE)
    args = [a for s in ["client=java", *sets] for a in ("--set", s)]
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(p), *args, "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and said in " ".join((r.stdout + r.stderr).split()), r.stdout + r.stderr
    assert not (tmp_path / "run").exists()


KIP848 = """
name = "jk"
kafka_version = "4.1.2"
mode = "kraft"
controllers = 1
duration_s = 10
client = "java"
[topic]
partitions = 3
[[producers]]
acks = "all"
idempotence = true
rate = 100
[consumers]
isolation_level = "both"
[[groups]]
name = "g"
members = 2
protocol = "consumer"
commit = "sync"
[[faults]]
at_s = 3
duration_s = 3
kind = "kill"
target = "leader"
"""


@pytest.mark.chaos_long  # a second cluster and Kafka version: the run above covers the driver in the default suite
def test_java_consumers_at_both_levels_and_a_kip848_group_keep_their_promises_under_a_leader_kill(tmp_path):
    require_docker(["4.1.2"])
    require_driver("4.1.2")
    p = tmp_path / "s.toml"
    p.write_text(KIP848)
    res = runner.execute(load(p), tmp_path / "run", log=lambda m: None)
    (v,) = check_runs([res.path])
    assert v.verdict == "pass" and v.anomalies["lost"] == 0, v.anomalies
    consumed = pq.read_table(res.path / "consumed.parquet").to_pylist()
    acked = {r["value"] for r in pq.read_table(res.path / "produced.parquet").to_pylist() if r["status"] == "ok"}
    assert acked <= {r["value"] for r in consumed if r["group"] == "g"}, "the group returned every acknowledged record"
    assert {r["isolation"] for r in consumed if r["phase"] == "live" and r["group"] is None} == \
        {"read_committed", "read_uncommitted"}
    logs = "".join(f.read_text() for f in (res.path / "members" / "g").glob("*.log"))
    assert logs.count("group.protocol = consumer") == 2, "both members on KIP-848's protocol"
