"""Apache Kafka's Java client through the client seam, against real Kafka: a run with ``client = "java"``
(one producer on librdkafka and a group on another kafka-clients version beside it) records what a
librdkafka run records, into the same contract, and the checker judges it the same way;
what the Java driver has not built, or a property kafka-clients refuses, exits 2 before any container."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
import pytest

from harness import runner
from harness.checker import check_runs
from harness.scenario import load
from harness.setup import java_driver
from tests.conftest import assert_sends_recorded, require_docker

pytestmark = pytest.mark.docker

BASE = """
name = "j"
kafka_version = "3.9.1"
mode = "zk"
zookeepers = 1
duration_s = 8
client = "java"
[topic]
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[consumers]
count = 1
config = { "fetch.max.wait.ms" = 50 }
[[producers]]
name = "a"
acks = "all"
idempotence = true
rate = 150
config = { "compression.type" = "lz4" }
[[producers]]
name = "b"
acks = "1"
rate = 150
client = "librdkafka"
[[producers]]
name = "t"
transactional = true
txn_records = 10
abort_ratio = 0.2
rate = 100
[copier]
[[groups]]
name = "g"
members = 2
client_version = "4.1.2"
commit = "async"
commit_every_records = 40
[[faults]]
at_s = 3
duration_s = 2
kind = "client_pause"
target = "client:g-1"
"""


def require_driver(version: str) -> None:
    if not java_driver.built(version):
        pytest.fail(f"the Java driver for kafka-clients {version} is not built: run `kchaos doctor --fix`",
                    pytrace=False)


def test_a_java_run_records_every_acknowledged_record_into_the_contract(tmp_path):
    """Producers (one transactional, a seeded fifth of its transactions aborted), a consumer, the
    exactly-once copier and a group whose member's process is frozen for 2 s, all kafka-clients
    processes; no fault touches a broker, so nothing may be lost, the group returns everything, and
    every committed transactional record has exactly one copy."""
    require_docker(["3.9.1"])
    require_driver("3.9.1")
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE))
    res = runner.execute(load(p), tmp_path / "run", log=lambda m: None)
    d = res.path
    produced = pq.read_table(d / "produced.parquet").to_pylist()
    consumed = [r for r in pq.read_table(d / "consumed.parquet").to_pylist() if r["topic"] == "chaos"]
    plain = [r for r in produced if r["producer"] in ("a", "b")]
    acked = {r["value"] for r in plain if r["status"] == "ok"}
    assert len(acked) > 1500 and len(acked) == len(plain), "fault-free: every send acknowledged"
    assert_sends_recorded(produced, ("a", "b", "t"), partitions=2)
    final = {r["value"] for r in consumed if r["phase"] == "final"}
    live_rows = [r for r in consumed if r["phase"] == "live"]
    assert acked <= final and acked <= {r["value"] for r in live_rows}
    at = {(r["partition"], r["offset"]): r["value"] for r in consumed if r["phase"] == "final"}
    assert all(at[(r["partition"], r["offset"])] == r["value"] for r in plain), "a callback's offset holds its value"
    assert all(r["send_ts_ms"] <= r["ack_ts_ms"] for r in produced if r["ack_ts_ms"] is not None)
    # The high watermark the Java consumer knew: above the record it returned, never past the log's end
    # (the final read's, which counts the transactions' markers).
    ends = {q: max(r["hw"] for r in consumed if r["phase"] == "final" and r["partition"] == q) for q in (0, 1)}
    assert all(r["hw"] is not None and r["offset"] < r["hw"] <= ends[r["partition"]] for r in live_rows)
    grouped = [r for r in consumed if r["group"] == "g"]
    assert acked <= {r["value"] for r in grouped}, "the group returned every acknowledged record"
    assert {r["consumer"].split("/")[0] for r in grouped} == {"g-1", "g-2"}
    assert all(r["generation"] >= 1 and r["hw"] is not None for r in grouped)
    offsets = pq.read_table(d / "offsets.parquet").to_pylist()
    assert {r["partition"] for r in offsets if r["group"] == "g" and r["phase"] == "live"} == {0, 1}, \
        "each partition's commits recorded"
    assert_transactions_recorded(produced, pq.read_table(d / "txns.parquet").to_pylist())
    (pause,) = [e for e in map(json.loads, (d / "events.jsonl").read_text().splitlines()) if e["type"] == "fault"]
    # Frozen for most of its 2 s: the member stops itself after its batch, which can take part of the window.
    assert pause["kind"] == "client_pause" and pause["end_ms"] - pause["start_ms"] >= 1000
    run = json.loads((d / "run.json").read_text())
    assert run["client"] == {"name": "java", "version": "kafka-clients 3.9.1"}
    assert run["producers"][0]["config"] == {"compression.type": "lz4"}
    assert run["producers"][1]["client"]["name"] == "librdkafka", "a table's own client"
    assert run["groups"][0]["client"] == {"name": "java", "version": "kafka-clients 4.1.2"}, "a table's own version"
    assert "Kafka version: 4.1.2" in "".join(f.read_text() for f in (d / "members" / "g").glob("*.log"))
    (v,) = check_runs([d])
    assert v.verdict == "pass" and all(n == 0 for a, n in v.anomalies.items() if a != "uncommitted_read"), v.anomalies
    labels = {c.config.split(" acks=")[0] for c in v.by_config}
    assert labels == {"java 3.9.1", run["producers"][1]["client"]["version"]}, "each configuration names its client"
    log = (d / "logs" / "clients.log").read_text()
    assert "kchaos.java" in log and "ProducerConfig values" in log, "kafka-clients' own log is in the run's log"


def assert_transactions_recorded(produced: list[dict], txns: list[dict]) -> None:
    """The transactional producer's transactions, committed and (a seeded share) aborted, each send
    under one; the copier's copies, one per record a read_committed reader sees (the plain producers'
    and the committed transactions') and none of an aborted transaction."""
    outcome = {t["txn"]: t["outcome"] for t in txns}
    mine = [r for r in produced if r["producer"] == "t"]
    assert mine and all(r["status"] == "ok" and r["txn"] in outcome for r in mine)
    assert {outcome[r["txn"]] for r in mine} == {"committed", "aborted"}
    committed = {r["value"] for r in produced if r["producer"] in ("a", "b") or (r["producer"] == "t" and
                 outcome[r["txn"]] == "committed")}
    copies = [r for r in produced if r["producer"] == "copier" and r["status"] == "ok"]
    assert all(r["topic"] == "chaos-copy" and outcome[r["txn"]] == "committed" for r in copies)
    sources = [r["source"] for r in copies]
    assert len(sources) == len(set(sources)) and set(sources) <= committed
    assert len(sources) > 0.8 * len(committed), "the copier kept up with the committed records"


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
    p.write_text(textwrap.dedent(BASE))
    args = [a for s in sets for a in ("--set", s)]
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
