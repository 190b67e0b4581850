"""The driver contract (docs/drivers.md) against real Kafka: every client library kchaos has a driver
for, as a run's client, records every producer's sends with all their outcomes, every read with the
high watermark its client knew, transactions, the copier's copies and a group's reads and commits,
into the same history contract, and the checker judges it as any other run. A third driver passes
this test unchanged once it has its line in ``harness/clients/registry.py``."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checker import check_runs
from harness.checker.excuses import client_label
from harness.checker.verdict import Verdict
from harness.clients import registry
from harness.clients.java import build as java_driver
from harness.clients.registry import LIBRARIES
from harness.run.kept_cluster import with_topic_and_ids_of_its_own
from harness.scenario import GroupSpec, ProducerSpec, Scenario, ScenarioError, load
from tests.conftest import assert_sends_recorded, require_docker

pytestmark = pytest.mark.docker

# Every kind of client, no fault on a broker; the scenario's client comes from the test. Seed 11: both
# drivers' seeded draws commit the transactional producer's first transaction and abort its second.
BASE = """
name = "conformance"
seed = 11
kafka_version = "3.9.1"
mode = "zk"
zookeepers = 1
duration_s = 6
[topic]
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[consumers]
count = 1
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
commit = "async"
[[faults]]
at_s = 3
duration_s = 2
kind = "client_pause"
target = "client:g-1"
"""


def require_driver(version: str) -> None:
    """The Java driver for kafka-clients ``version``, built here if no test has built it yet (as a
    command builds it the first time a scenario uses it)."""
    try:
        java_driver.build(version, log=lambda m: None)
    except java_driver.DriverBuildError as e:
        pytest.fail(f"the Java driver for kafka-clients {version} cannot be built: {e}", pytrace=False)


def cannot_make(client: str) -> list[int]:
    """BASE's producer tables library ``client`` refuses (kafka-go has no idempotent or transactional
    producer): they run on another library beside it, as a table the library makes no clients of
    (the copier, for kafka-go) does."""
    return [i for i, p in enumerate(tomllib.loads(BASE)["producers"])
            if registry.refusal(client, ProducerSpec(**p), "3.9.1") is not None]


def scenario(tmp_path: Path, client: str) -> tuple[list[str], Scenario]:
    """BASE with ``client`` as the scenario's library and producer b on another library beside it
    (a table's own ``client``); a Java run's group is a kafka-clients of another version than the
    broker's (a table's own ``client_version``)."""
    other = next(c for c in LIBRARIES if c != client)
    sets = [f"client={client}", f"producers.1.client={other}"]
    sets += [f"producers.{i}.client={other}" for i in cannot_make(client)]
    if registry.refusal(client, GroupSpec(**tomllib.loads(BASE)["groups"][0]), "3.9.1") is not None:
        sets.append("groups.0.commit=sync")  # Kafka's verifiable consumer commits synchronously, after every poll
    if client == "java":
        sets.append("groups.0.client_version=4.1.2")
    p = tmp_path / "s.toml"
    p.write_text(BASE)
    try:
        return sets, load(p, sets)
    except ScenarioError as e:
        pytest.fail(f"{client}: {e}", pytrace=False)


@dataclass
class DriverRun:
    """One driver's run of BASE and its verdict, or why it has none (its case fails with that)."""

    scenario: Scenario | None = None
    path: Path | None = None
    verdict: Verdict | None = None
    error: str = ""


def selected_clients(request: pytest.FixtureRequest) -> list[str]:
    """The libraries whose case this session runs (all of them, or those ``-k`` kept)."""
    cases = [i for i in request.session.items if i.originalname == "test_every_driver_records_the_contract"]
    return [c for c in LIBRARIES if any(i.callspec.params["client"] == c for i in cases)]


@pytest.fixture(scope="module")
def driver_runs(request, kept_cluster, tmp_path_factory) -> dict[str, DriverRun]:
    """Each selected driver's run on this worker's kept cluster (tests/conftest.py's cluster groups),
    one after another, then all of them checked in one Spark call: a check's fixed cost (the plans,
    the Parquet scans' start) is most of a small run's, and paid once instead of once a driver.

    Each run has a topic and ids of its own (group.id, transactional.id: with_topic_and_ids_of_its_own,
    tagged with the client's name), as every run on a kept cluster has, so nothing one run leaves on
    the cluster is read by another, and each driver shows that it takes its ids from the tables. A
    driver whose run fails fails its own case, not the others'."""
    require_docker(["3.9.1"])
    require_driver("3.9.1")
    runs: dict[str, DriverRun] = {}
    for client in selected_clients(request):
        tmp = tmp_path_factory.mktemp(f"conformance-{client}")
        try:
            sets, s = scenario(tmp, client)
            s = with_topic_and_ids_of_its_own(s, client)
            res = kept_cluster.execute(s, tmp / "run", reuse=True, overrides=sets, log=lambda m: None)
            runs[client] = DriverRun(scenario=s, path=res.path)
        except (Exception, pytest.fail.Exception) as e:
            runs[client] = DriverRun(error=f"{client}'s run: {type(e).__name__}: {e}")
    done = [r for r in runs.values() if r.path is not None]
    for r, v in zip(done, check_runs([r.path for r in done]) if done else [], strict=True):
        r.verdict = v
    return runs


# Two Go libraries' cases in the long tier (nightly): franz-go's, in the default one, runs the
# protocol package and the producer and consumer loops all three Go drivers share.
LONG_TIER = ("sarama", "kafka-go")


@pytest.mark.parametrize("client", [pytest.param(c, marks=pytest.mark.chaos_long) if c in LONG_TIER else c
                                    for c in LIBRARIES])
def test_every_driver_records_the_contract(client, driver_runs):
    """Producers (one transactional, a seeded fifth of its transactions aborted), a consumer, the
    exactly-once copier and a group whose member's process is frozen for 2 s, made by ``client``;
    no fault touches a broker, so nothing may be lost, the group returns everything, and every
    committed transactional record has exactly one copy."""
    r = driver_runs[client]
    if r.error:
        pytest.fail(r.error, pytrace=False)
    s = r.scenario
    d, g = r.path, "g"  # the history names the group as the scenario does; the cluster knows it as g-CLIENT
    produced = pq.read_table(d / "produced.parquet").to_pylist()
    consumed = [r for r in pq.read_table(d / "consumed.parquet").to_pylist() if r["topic"] == s.topic.name]
    plain = [r for r in produced if r["producer"] in ("a", "b")]
    acked = {r["value"] for r in plain if r["status"] == "ok"}
    assert len(acked) == len(plain), "fault-free: every send acknowledged"
    # Each plain producer sent for the workload's seconds at its rate (150/s): a tool's JVM start
    # (Kafka's verifiable producer) is waited for before the workload starts, not taken from it.
    per_producer = {p: sum(r["producer"] == p for r in plain if r["status"] == "ok") for p in ("a", "b")}
    assert all(n > 4 * 150 for n in per_producer.values()), per_producer
    untimed = ("a",) if "send_time" in LIBRARIES[client].cannot_tell else ()
    assert_sends_recorded(produced, ("a", "b", "t"), partitions=2, own_timing=untimed)
    final = {r["value"] for r in consumed if r["phase"] == "final"}
    live_rows = [r for r in consumed if r["phase"] == "live"]
    assert acked <= final and acked <= {r["value"] for r in live_rows}
    at = {(r["partition"], r["offset"]): r["value"] for r in consumed if r["phase"] == "final"}
    assert all(at[(r["partition"], r["offset"])] == r["value"] for r in plain), "a callback's offset holds its value"
    assert all(r["send_ts_ms"] <= r["ack_ts_ms"] for r in produced if r["ack_ts_ms"] is not None)
    # The high watermark the consumer knew: never past the log's end (the final read's, which counts
    # the transactions' markers), and above the record it returned, unless the record was committed
    # while the leader read it: a fetch response carries the hw from before its read (stale_hw_read,
    # which the verdict passes), and the final log then holds that record at that offset.
    # A library that reports no high watermark with its reads (Kafka's verifiable consumer) records none
    # and says so (registry's cannot_tell): its reads' hw is null, never made up.
    # A transaction's marker that kafka-go returns as a record (kafka-go#1446) is in no final read: past
    # a stale hw, its offset holds no record there.
    tells_hw = "poll_hw" not in LIBRARIES[client].cannot_tell
    ends = {q: max(r["hw"] for r in consumed if r["phase"] == "final" and r["partition"] == q) for q in (0, 1)}
    sent = {r["value"] for r in produced}
    beyond = [r for r in live_rows if (tells_hw or r["hw"] is not None) and not (
        r["hw"] is not None and r["hw"] <= ends[r["partition"]]
        and (r["offset"] < r["hw"] or at.get((r["partition"], r["offset"])) == r["value"]
             or (r["value"] not in sent and (r["partition"], r["offset"]) not in at)))]
    assert not beyond, ("reads whose hw is missing, past the log's end or below their record", ends, beyond[:5])
    grouped = [r for r in consumed if r["group"] == g]
    assert acked <= {r["value"] for r in grouped}, "the group returned every acknowledged record"
    assert {r["consumer"].split("/")[0] for r in grouped} == {f"{g}-1", f"{g}-2"}
    assert all(r["generation"] >= 1 and (r["hw"] is not None) == tells_hw for r in grouped)
    offsets = pq.read_table(d / "offsets.parquet").to_pylist()
    assert {r["partition"] for r in offsets if r["group"] == g and r["phase"] == "live"} == {0, 1}, \
        "each partition's commits recorded"
    notes = [x for x in (d / "events.jsonl").read_text().splitlines() if '"note"' in x]
    assert not any("had not committed to the end" in x for x in notes), \
        "the group commits past its last record (a transaction's marker is no record to read)"
    txns = pq.read_table(d / "txns.parquet").to_pylist()
    events = [json.loads(x) for x in (d / "events.jsonl").read_text().splitlines()]
    (start,) = [e["ts_ms"] for e in events if e["type"] == "workload_start"]
    (pause,) = [e for e in events if e["type"] == "fault"]
    # The workload's clock starts once every producer is made, its transactions initialised: the
    # transactional producer's first transaction begins before the run's fault does.
    first = min(t["begin_ts_ms"] for t in txns if t["producer"] == "t")
    assert first < pause["start_ms"], ("t's first transaction began after the fault", first - start)
    assert_transactions_recorded(produced, txns, f"{s.topic.name}-copy")
    # Frozen before its heal: the member stops itself after its batch, which on a loaded machine can take
    # most of the 2 s window.
    assert pause["kind"] == "client_pause" and pause["end_ms"] > pause["start_ms"]
    run = json.loads((d / "run.json").read_text())
    assert run["groups"][0]["id"] == s.groups[0].group_id == f"g-{client}", "the group's id on the cluster"
    assert f'"group":"g-{client}"' in (d / "logs" / "group-coordinator.log").read_text(), \
        "the coordinator's record of the group, by its id"
    # The coordinator's record as offsets.parquet's written rows, for a library that reports its commits
    # (the others' live rows are that record): every acknowledged commit is one the coordinator wrote.
    written = [r for r in offsets if r["group"] == g and r["phase"] == "written"]
    acknowledged = {(r["partition"], r["offset"]) for r in offsets if r["group"] == g and r["phase"] == "live"}
    if client in ("librdkafka", "java"):
        assert written and all(r["log_offset"] is not None for r in written), "the coordinator's written rows"
    assert not written or acknowledged <= {(r["partition"], r["offset"]) for r in written}, \
        ("acknowledged commits the coordinator did not write", acknowledged - {(r["partition"], r["offset"])
                                                                               for r in written})
    assert run["client"]["name"] == client and run["producers"][0]["config"] == {"compression.type": "lz4"}
    assert run["producers"][1]["client"]["name"] != client, "a table's own client"
    assert {c["name"] for c in run["clients"]} == {client, run["producers"][1]["client"]["name"]}
    v = r.verdict
    assert {n.capability for n in v.not_judged} == set(LIBRARIES[client].cannot_tell), "what it could not judge"
    # A library's own known bug is no failure of its driver where the run's logs show its mechanism
    # (harness/checker/known_issues.py: kafka-go returns transaction markers as records).
    explained = {a for k in v.known_issues if k.shown for a in k.anomalies}
    assert v.verdict == "pass" or {a for _, a, _ in v.broken()} <= explained, (v.broken(), v.known_issues)
    assert all(n == 0 for a, n in v.anomalies.items() if a != "uncommitted_read" and a not in explained), v.anomalies
    labels = {c.config.split(" acks=")[0] for c in v.by_config}
    assert labels == {client_label(p["client"]) for p in run["producers"]}, "each configuration names its client"
    if client == "java":
        assert run["groups"][0]["client"] == {"name": "java", "version": "kafka-clients 4.1.2"}, "a table's version"
        assert "Kafka version: 4.1.2" in "".join(f.read_text() for f in (d / "members" / g).glob("*.log"))
        log = (d / "logs" / "clients.log").read_text()
        assert "kchaos.java" in log and "ProducerConfig values" in log, "kafka-clients' own log is in the run's log"


def assert_transactions_recorded(produced: list[dict], txns: list[dict], copy_topic: str) -> None:
    """The transactional producer's transactions, committed and (a seeded share) aborted, each send
    under one, acknowledged if it committed (an abort fails the sends it finds still queued, never
    sent: librdkafka's _PURGE_QUEUE, kafka-clients' TransactionAbortedException); the copier's
    copies, one per record a read_committed reader sees (the plain producers' and the committed
    transactions') and none of an aborted transaction."""
    outcome = {t["txn"]: t["outcome"] for t in txns}
    mine = [r for r in produced if r["producer"] == "t"]
    assert mine and all(r["txn"] in outcome for r in mine)
    # A transaction whose commit or abort did not return in time, or that the run's end caught open,
    # ends "unknown": its sends are indeterminate, or failed if the abort purged them from the queue
    # before they were sent (on a loaded machine an abort can find all of them still queued).
    bad = [r for r in mine if not (r["status"] == "ok" or (outcome[r["txn"]] == "aborted" and r["status"] == "fail")
                                   or (outcome[r["txn"]] == "unknown" and r["status"] in ("info", "fail")))]
    assert not bad, (len(bad), bad[:3], [outcome[r["txn"]] for r in bad[:3]])
    ended = {outcome[r["txn"]] for r in mine}
    abort_tried = {t["outcome"] for t in txns if t["producer"] == "t" and t["commit_ts_ms"] is None
                   and t["end_ts_ms"] is not None}
    timeline = [(t["txn"], t["outcome"], t["begin_ts_ms"], t["commit_ts_ms"], t["end_ts_ms"])
                for t in txns if t["producer"] == "t"][:4]
    assert "committed" in ended and abort_tried and abort_tried <= {"aborted", "unknown"}, \
        (ended, abort_tried, timeline)
    committed = {r["value"] for r in produced if r["producer"] in ("a", "b") or (r["producer"] == "t" and
                 outcome[r["txn"]] == "committed")}
    copies = [r for r in produced if r["producer"] == "copier" and r["status"] == "ok"]
    assert all(r["topic"] == copy_topic and outcome[r["txn"]] == "committed" for r in copies)
    sources = [r["source"] for r in copies]
    assert len(sources) == len(set(sources)) and set(sources) <= committed
    # How far it got depends on the machine's load; that every record below its group's committed
    # offsets has its copy is eos_lost's, which the verdict counts.
    assert sources, "the copier copied"
