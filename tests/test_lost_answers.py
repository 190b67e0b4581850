"""The lose_answers fault against real Kafka: the answers to the transaction coordinator's
WriteTxnMarkers requests are lost on its links while a transactional producer runs, the fault's line
says how many, the coordinator's own log shows the requests cancelled as their connections went (it
sends them again), and no promise breaks."""

from __future__ import annotations

import json
import textwrap

import pytest

from harness.checker import check_runs
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

SCENARIO = """
name = "lost-marker-answers"
kafka_version = "3.9.1"
mode = "kraft"
duration_s = 14
[topic]
partitions = 3
[[producers]]
name = "t"
transactional = true
txn_records = 10
abort_ratio = 0.2
rate = 300
[consumers]
isolation_level = "both"
[[faults]]
at_s = 3
duration_s = 6
kind = "lose_answers"
api = "write_txn_markers"
target = "txn_coordinator:t"
"""


@pytest.mark.chaos_long  # a cluster of its own; the default tier tests the toxic (test_units_kafka_toxics.py)
def test_lost_marker_answers_are_lost_counted_retried_and_survived(tmp_path):
    require_docker(["3.9.1"])
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(SCENARIO))
    s = load(p)
    assert s.cluster_settings().losable_answers
    res = runner.execute(s, tmp_path / "run", log=lambda m: None)
    events = [json.loads(x) for x in (res.path / "events.jsonl").read_text().splitlines()]
    (fault,) = [e for e in events if e["type"] == "fault"]
    assert fault["answers_to"] == "write_txn_markers" and fault["answer_links"], fault
    assert fault["answers_lost"] >= 1, f"no WriteTxnMarkers answer was lost in {fault['end_ms'] - fault['start_ms']} ms"
    coordinator = fault["brokers"][0]
    log = (res.path / "logs" / f"kafka-{coordinator}.log").read_text()
    # Kafka's NetworkClient, in the coordinator's marker sender, on each connection that lost an answer
    assert "Cancelled in-flight WRITE_TXN_MARKERS request" in log, "the coordinator saw no marker request fail"
    (v,) = check_runs([res.path])
    assert v.verdict == "pass", v.anomalies
