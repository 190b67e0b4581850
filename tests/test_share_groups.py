"""Share groups against real Kafka: a group's members are killed and frozen while they share a
topic, every delivery and acknowledgement is recorded, the group is drained after healing, and
the verdict judges KIP-932's promises in the group's own row."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checker import check_runs
from harness.clients.java.share_groups import poison
from harness.history import DELIVERIES, SHARE_ACKS
from harness.run import runner
from harness.scenario import load
from harness.versions import KAFKA_VERSIONS
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
NEWEST = max(KAFKA_VERSIONS, key=lambda v: tuple(map(int, v.split("."))))


# A 4.4.0 cluster of its own and a 22 s schedule: the long tier (nightly). The default tier judges share
# histories the tests build (tests/test_checker_share.py).
@pytest.mark.chaos_long
def test_a_share_group_under_member_faults_delivers_everything_and_keeps_kip_932s_promises(tmp_path):
    require_docker([NEWEST])  # the default tier builds the newest version's image anyway
    # The request log at DEBUG: a logger's level reaches Kafka 4's log4j2 configuration too. The
    # catalogue's schedule, closer together: each member fault still outlasts the 5 s locks (and the
    # pause the 6 s session), one after another, in 22 s rather than 30. One controller: the share
    # group is under test, not the quorum (two JVMs fewer on a two-core machine).
    s = load(SCENARIOS / "share-group-member-faults.toml", [
        f"kafka_version={NEWEST}", 'cluster.log_levels={"kafka.request.logger" = "DEBUG"}', "duration_s=22",
        "controllers=1",
        "faults.1.at_s=7", "faults.1.duration_s=5", "faults.2.at_s=13", "faults.2.duration_s=7"])
    res = runner.execute(s, tmp_path / "run", log=lambda m: None)
    assert "Completed request:" in (res.path / "logs" / "kafka-1.log").read_text(), "the request log at DEBUG"
    (v,) = check_runs([res.path])
    run = json.loads((res.path / "run.json").read_text())
    (g,) = run["share_groups"]
    keys = {f"{s.topic.name}:{p}" for p in range(s.topic.partitions)}
    assert set(g["start_offsets"]) == keys and set(g["final_start_offsets"]) == keys
    deliveries = pq.read_table(res.path / DELIVERIES).to_pylist()
    acks = pq.read_table(res.path / SHARE_ACKS).to_pylist()
    produced = pq.read_table(res.path / "produced.parquet").to_pylist()
    acked = {r["value"] for r in produced if r["status"] == "ok"}
    assert acked <= {d["value"] for d in deliveries}, "every acknowledged record was given to the group"
    assert {a["type"] for a in acks} == {"accept", "release", "reject"}
    assert {d["member"] for d in deliveries} >= {"s-1", "s-2"}
    # The killed member came back as s-1.2; whether it is given anything depends on how soon its JVM
    # starts against how soon s-2 drains the topic, so its start is what is asserted
    assert '"t":"started"' in (res.path / "members" / "s" / "s-1.2.jsonl").read_text()
    assert max(d["delivery_count"] for d in deliveries) >= 2, "released records were given again"
    events = [json.loads(x) for x in (res.path / "events.jsonl").read_text().splitlines()]
    faults = [e for e in events if e["type"] == "fault"]
    assert [e["kind"] for e in faults] == ["kill", "client_kill", "client_pause"], [
        e for e in events if e["type"] == "fault_skipped"]
    assert faults[0]["target"] == "share_coordinator" and faults[0]["group"] == "s" and len(faults[0]["brokers"]) == 1
    (row,) = [r for r in v.by_group if r.group == "s"]
    assert row.settings["commit"] == "share" and row.verdict == "pass", (row.counts, row.broken)
    # A delivery in flight when the share coordinator's broker (often a partition's leader too) dies is
    # given again under the same count (KIP-932 keeps an acquisition in memory): counted, not held
    assert all(n == 0 for a, n in v.anomalies.items() if a.startswith("share_") and a != "share_over_delivered")
    assert v.anomalies["share_over_delivered"] == row.forgotten, (v.anomalies, row.forgotten)


def poison_run(tmp_path: Path, overrides: list[str]) -> tuple:
    """share-poison-records run: its verdict, its share group's row, deliveries by value, and the
    values members died on."""
    s = load(SCENARIOS / "share-poison-records.toml", overrides)
    require_docker([s.kafka_version])
    res = runner.execute(s, tmp_path / "run", log=lambda m: None)
    (v,) = check_runs([res.path])
    (row,) = [r for r in v.by_group if r.group == "s"]
    given: dict[str, list[dict]] = {}
    for d in pq.read_table(res.path / DELIVERIES).to_pylist():
        given.setdefault(d["value"], []).append(d)
    died = [json.loads(x)["value"] for f in (res.path / "members" / "s").glob("*.jsonl")
            for x in f.read_text().splitlines() if '"t":"crash"' in x]
    return s, v, row, given, died


@pytest.mark.chaos_long
def test_poison_records_are_archived_after_the_attempt_limit(tmp_path):
    """Kafka 4.4.0: each poison record kills the member given it, and is given at most
    delivery_count_limit times, each time under a higher count; then the group goes on."""
    s, v, row, given, died = poison_run(tmp_path, [])
    limit = s.share_groups[0].delivery_count_limit
    assert died and all(poison(x, s.share_groups[0].crash_ratio) for x in died), "only poison records kill"
    for value in set(died):
        counts = sorted(d["delivery_count"] for d in given[value])
        assert counts == list(range(1, len(counts) + 1)) and len(counts) <= limit, (value, counts)
    assert row.verdict == "pass" and v.verdict == "pass" and all(n == 0 for n in row.counts.values()), row.counts


@pytest.mark.chaos_long
def test_kafka_4_1_gives_a_poison_record_again_under_the_same_count_kafka_19972(tmp_path):
    """Kafka 4.1.2: a crashed member's records come back with their count lowered, so a poison
    record is given past the limit under a count that never reaches it: share_over_delivered,
    named as KAFKA-19972."""
    s, v, row, given, died = poison_run(tmp_path, ["kafka_version=4.1.2", "features.share.version=1"])
    limit = s.share_groups[0].delivery_count_limit
    over = {x: [d["delivery_count"] for d in given[x]] for x in set(died) if len(given[x]) > limit}
    assert over and all(max(c) <= limit for c in over.values()), over
    assert row.broken == ["share_over_delivered"] and row.forgotten == 0
    assert any(k.issue == "KAFKA-19972" for k in v.known_issues), v.known_issues
