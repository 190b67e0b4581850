"""The reconciler on histories built in the tests: each anomaly alone, all together, clean ones,
verdicts against the promise table, unavailability, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.checker import ANOMALIES, check_runs, session, summarize
from harness.checker.promises import V1_ANOMALIES
from harness.checker.verdict import read as read_verdict
from harness.history import HistoryError
from tests.histories import History

pytestmark = pytest.mark.spark

ZERO = dict.fromkeys(ANOMALIES, 0)
RENUMBERING_EXCUSES = {"nonmonotonic_send", "nonmonotonic_poll"}  # what a topic recreated by hand excuses (v1)


def only(**counts: int) -> dict[str, int]:
    return {**ZERO, **counts}


@pytest.fixture
def embedded_driver(monkeypatch):
    """A check on an embedded driver in this process: the one session whose cache a test can see
    (nothing_cached). The rest of the suite, this module's other tests among it, checks on the warm
    server."""
    monkeypatch.setattr(session, "DEFAULT_MASTER", session.EMBEDDED)


def nothing_cached() -> bool:
    """Whether the embedded Spark session holds no cached rows: a check releases what it cached
    however it ends, for a caller that goes on using the session."""
    from pyspark.sql import SparkSession

    s = SparkSession.getActiveSession()
    assert s is not None, "an embedded driver started in this process"
    return s._jsparkSession.sharedState().cacheManager().isEmpty()


def plant(h: History, anomaly: str) -> None:
    """Add exactly one instance of an anomaly to a clean 5-record history on partition 0."""
    if anomaly == "lost":
        h.send("v-lost", 5)
    elif anomaly == "divergence":
        h.replica(3, "not-v0-2", 2)
    elif anomaly == "uncommitted_read":
        h.read("v-uncommitted", 7, consumer="c1", hw=8)
    elif anomaly == "duplicate":
        h.read("v0-1", 6, phase="final", consumer="final")
        for b in (1, 2, 3):
            h.replica(b, "v0-1", 6)
    elif anomaly == "nonmonotonic_send":
        h.run["producers"].append({"name": "p1", "acks": "all", "idempotence": True, "topic": "t"})
        h.send("w0", 1, partition=1, producer="p1")
        h.send("w1", 0, partition=1, producer="p1")
        h.final_from_replica(1, (1, 2, 3))
    elif anomaly == "nonmonotonic_poll":
        h.read("v0-3", 3, consumer="c0", hw=5)
    elif anomaly == "phantom":
        h.read("ghost", 8, phase="final", consumer="final")
        for b in (1, 2, 3):
            h.replica(b, "ghost", 8)
    elif anomaly == "old_topic_read":
        # the topic deleted just after its first record was acknowledged and served again at once: that
        # record, still in the final log, is the deleted topic's
        first = min(r["ack_ts_ms"] for r in h.produced if r["ack_ts_ms"] is not None)
        h.events.append({"type": "fault", "kind": "recreate_topic", "name": "recreate", "start_ms": first + 1,
                         "end_ms": first + 2, "topic": h.topic, "deleted_ms": first + 1, "created_ms": first + 2,
                         "recreated": "recreated"})


# Every history below is checked in one Spark job (as `kchaos check` checks many runs; a check costs
# seconds however small its histories): name -> a function that builds it.
CASES: dict = {}


def case(name: str):
    def register(build):
        CASES[name] = build
        return build
    return register


@case("clean")
def _clean() -> History:
    h = History().clean(20)
    h.clean(7, partition=1)
    return h


for _a in V1_ANOMALIES:
    CASES[f"planted-{_a}"] = lambda a=_a: _planted(a)


def _planted(anomaly: str) -> History:
    h = History().clean(5)
    plant(h, anomaly)
    return h


@case("all")
def _all() -> History:
    h = History().clean(5)
    for a in V1_ANOMALIES:
        plant(h, a)
    return h


@case("first-ten")
def _first_ten() -> History:
    h = History().clean(15)
    base = h.ts + 1000
    for i in range(13):  # sent latest first, so the order of the rows is not the order of the examples
        h.send(f"v-lost-{i}", 100 + i, ts=base + 100 * (13 - i))
    for o in range(12):
        h.replica(2, f"other-{o}", o)
    return h


@case("named")
def _named() -> History:
    h = History().clean(5)
    plant(h, "lost")
    plant(h, "divergence")
    return h


@case("acks1")
def _acks1() -> History:
    h = History()
    h.run["producers"] = [{"name": "p0", "acks": "1", "topic": "t"}]
    for i in range(5):
        h.send(f"a{i}", i, acks="1")
    h.final_from_replica(0, (1, 2, 3))
    h.send("a-lost", 5, acks="1")
    return h


@case("stale")
def _stale() -> History:
    h = History().clean(5)
    h.read("v0-4", 4, consumer="c2", hw=4)  # in the final log at 4, read at its hw
    return h


@case("stale-and-uncommitted")
def _stale_and_uncommitted() -> History:
    h = _stale()
    h.read("v-uncommitted", 7, consumer="c1", hw=8)  # not in the final log: a read nothing excuses
    return h


def retained(start: int) -> History:
    """Five acknowledged writes at offsets 0-4; retention deleted the log below ``start`` on every
    replica, and run.json says where the log starts after the run."""
    h = History()
    for i in range(5):
        h.send(f"r{i}", i)
    for i in range(start, 5):
        for b in (1, 2, 3):
            h.replica(b, f"r{i}", i)
        h.read(f"r{i}", i, phase="final", consumer="final")
    h.run["topics"][0]["log_start_offsets"] = {"0": start}
    return h


@case("retention")
def _retention() -> History:
    return retained(3)


@case("retention-read")
def _retention_read() -> History:
    """The live consumer read every record before retention deleted the first three: those reads are
    of records missing from the final log (uncommitted_read by the contract), and one read of a
    record missing at or above the log start is not retention's doing."""
    h = retained(3)
    for i in range(5):
        h.read(f"r{i}", i)
    h.read("r-ghost", 5)
    return h


@case("retention-read-only")
def _retention_read_only() -> History:
    h = retained(3)
    for i in range(5):
        h.read(f"r{i}", i)
    return h


@case("retention-and-lost")
def _retention_and_lost() -> History:
    h = retained(3)
    h.send("r-lost", 5)  # above the log start: not retention's doing
    return h


def recreated_topic() -> History:
    """Five writes to the topic, read live; an operator deletes it and creates it again; three writes
    to the new topic, which is all the final log holds (every replica the same)."""
    h = History()
    for i in range(5):
        h.send(f"old{i}", i)
        h.read(f"old{i}", i)
    h.recreate()
    for i in range(3):
        h.send(f"new{i}", i)
        h.read(f"new{i}", i)
    h.final_from_replica(0, (1, 2, 3))
    h.consumed = [r for r in h.consumed if not (r["phase"] == "final" and r["value"].startswith("old"))]
    h.replicas = [r for r in h.replicas if not r["value"].startswith("old")]
    return h


@case("recreated")
def _recreated() -> History:
    return recreated_topic()


@case("recreated-old-served")
def _recreated_old_served() -> History:
    """The new topic's log serves the old topic's first record after its own: a deleted topic's
    record come back (KAFKA-14616's stray replica)."""
    h = recreated_topic()
    for b in (1, 2, 3):
        h.replica(b, "old0", 3)
    h.read("old0", 3, phase="final", consumer="final")
    return h


@case("recreated-stray-replica")
def _recreated_stray_replica() -> History:
    """Broker 3's files of the new topic hold the old topic's record at offset 1, where the others
    hold the new one's: replicas that disagree, whatever the deletion explains of the reads."""
    h = recreated_topic()
    h.replicas = [r for r in h.replicas if not (r["broker"] == 3 and r["offset"] == 1)]
    h.replica(3, "old1", 1)
    return h


@case("recreated-then-lost")
def _recreated_then_lost() -> History:
    h = recreated_topic()
    h.send("new-lost", 3)  # acknowledged by the new topic, which does not have it
    return h


def two_producers() -> History:
    """p-one (acks=1) and p-all (acks=all, idempotent) on one topic, one acknowledged write each."""
    h = History()
    h.run["producers"] = [{"name": "p-one", "acks": "1", "topic": "t"},
                          {"name": "p-all", "acks": "all", "topic": "t", "idempotence": True}]
    h.send("x0", 0, acks="1", producer="p-one")
    h.send("y0", 1, acks="all", producer="p-all")
    h.final_from_replica(0, (1, 2, 3))
    return h


@case("mixed-acks1-lost")
def _mixed1() -> History:
    h = two_producers()
    h.send("x-lost", 2, acks="1", producer="p-one")
    return h


@case("mixed-both-lost")
def _mixed2() -> History:
    h = _mixed1()
    h.send("y-lost", 3, acks="all", producer="p-all")
    return h


@case("acks0")
def _acks0() -> History:
    h = History().clean(3)
    h.send("z0", None, acks="0")  # never read back: not lost, reported apart
    h.send("maybe", None, status="info", error="_MSG_TIMED_OUT")
    h.read("maybe", 3, phase="final", consumer="final")
    h.send("failed-but-there", None, status="fail", error="NOT_ENOUGH_REPLICAS")
    h.read("failed-but-there", 4, phase="final", consumer="final")
    return h


@case("unclean-divergence")
def _unclean() -> History:
    h = History().clean(5)
    h.run["topics"][0]["config"]["unclean.leader.election.enable"] = "true"
    plant(h, "divergence")
    return h


@case("unclean-phantom")
def _unclean_phantom() -> History:
    h = _unclean()
    plant(h, "phantom")
    return h


@case("old-ibp")
def _old_ibp() -> History:
    h = History().clean(5)
    h.run["broker_config"] = {"inter.broker.protocol.version": "0.10.2"}
    plant(h, "lost")
    return h


@case("power-loss")
def _power_loss() -> History:
    h = History().clean(5)
    h.events.append({"type": "fault", "kind": "power_loss", "start_ms": h.ts, "end_ms": h.ts + 100})
    plant(h, "lost")
    return h


@case("power-loss-elr")
def _power_loss_elr() -> History:
    h = _power_loss()
    h.run["eligible_leader_replicas"] = True
    return h


T0 = 1_700_000_000_000


@case("unavailable")
def _unavailable() -> History:
    h = History()
    for i in range(10):
        h.send(f"a{i}", i, ts=T0 + i * 100)
    # 4 s with no acknowledgement, from a fault at T0+1000 until acks resume at T0+4900
    for i in range(10, 20):
        h.send(f"a{i}", i, ts=T0 + 4900 + (i - 10) * 100)
    h.final_from_replica(0, (1, 2, 3))
    h.events.append({"type": "fault", "kind": "kill", "name": "kill leader", "start_ms": T0 + 1000,
                     "end_ms": T0 + 3000})
    return h


BAD_ZK_VERSION = ("[2026-11-20 10:00:05,001] INFO [Controller id=1] Failed to update ISR to LeaderAndIsr(leader=3, "
                  "leaderEpoch=0, isrWithBrokerEpoch=List(...), leaderRecoveryState=RECOVERED, partitionEpoch=0) for "
                  "partition t-0, bad ZK version. (kafka.controller.KafkaController)\n")


@case("not-healed")
def _not_healed(controller_log: str = BAD_ZK_VERSION) -> History:
    h = History().clean(5)
    h.run["mode"] = "zk"
    h.events.append({"type": "isr_not_restored", "ts_ms": h.ts, "topic": "t", "waited_s": 120,
                     "partitions": [{"partition": 0, "leader": 3, "replicas": [3, 1, 2], "isr": [3, 2]}]})
    h.logs["kafka-1.log"] = "[2026-11-20 10:00:00,000] INFO started (kafka.server.KafkaServer)\n" + controller_log
    return h


@case("not-healed-unexplained")
def _not_healed_unexplained() -> History:
    """The same stall without the controller's refusal in any broker's log: not F2's mechanism."""
    return _not_healed(controller_log="")


@case("far")
def _far() -> History:
    h = History().clean(5)
    h.replica(1, "a", 0, partition=5000).replica(2, "b", 0, partition=5000)
    h.replica(1, "a", 1 << 62).replica(2, "b", 1 << 62)
    h.topic = "x"
    h.read("x-phantom", 0, phase="final", consumer="final")
    return h


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict:
    """Every case checked together, found under their parent directory as `kchaos check DIR` finds
    many runs: name -> verdict, each checked against the reference."""
    root = tmp_path_factory.mktemp("cases")
    hs = {name: build() for name, build in CASES.items()}
    for name, h in hs.items():
        h.write(root / name)
    verdicts = {Path(v.run_dir).name: v for v in check_runs([root])}
    assert sorted(verdicts) == sorted(hs), "every run under the parent directory is found, and nothing else"
    for name, h in hs.items():
        # The Spark job and the reference implementation agree on every history built here.
        assert verdicts[name].anomalies == h.reference(), f"{name}: the Spark checker and the reference must agree"
    return verdicts


@pytest.mark.chaos_long  # an embedded Spark driver's start; the default tier checks on the warm server
def test_a_check_on_an_embedded_driver_leaves_nothing_cached_in_its_callers_session(tmp_path, embedded_driver):
    """A caller that goes on using its session (an embedded driver's user) finds no rows a check
    cached, and the embedded driver's verdict is the warm server's and the reference's."""
    h = History().clean(5)
    plant(h, "lost")
    (v,) = check_runs([h.write(tmp_path / "run")])
    assert v.anomalies == h.reference() and v.verdict == "fail"
    assert nothing_cached()


def test_clean_history_has_no_anomaly_and_passes(judged):
    v = judged["clean"]
    assert v.anomalies == ZERO
    assert v.verdict == "pass"
    assert v.final_log_records == 27
    run = Path(v.run_dir)
    assert json.loads((run / "verdict.json").read_text())["anomalies"] == ZERO
    assert read_verdict(run) == v


@pytest.mark.parametrize("anomaly", V1_ANOMALIES)
def test_each_anomaly_planted_alone_is_counted_once(judged, anomaly):
    v = judged[f"planted-{anomaly}"]
    assert v.anomalies == only(**{anomaly: 1})
    assert len(v.examples[anomaly]) == 1
    # acks=all, min.insync=2, unclean off, idempotent: every one of these breaks a promise.
    assert v.verdict == "fail"


def test_all_anomalies_together(judged):
    v = judged["all"]
    assert v.anomalies == only(**dict.fromkeys(V1_ANOMALIES, 1))
    (row,) = v.by_config  # p0 and p1 share one configuration
    # the planted recreation excuses order across the old topic and the new one
    assert row.producers == ["p0", "p1"] and set(row.broken) == set(V1_ANOMALIES) - RENUMBERING_EXCUSES


def test_examples_are_the_first_ten_of_each_kind_in_order(judged):
    """Counts and examples come from one action over the findings: the examples of a kind are still
    the first EXAMPLES by its sort key (the earliest acknowledgement, the lowest offset), in order."""
    v = judged["first-ten"]
    assert (v.anomalies["lost"], v.anomalies["divergence"]) == (13, 12)
    assert [e["value"] for e in v.examples["lost"]] == [f"v-lost-{i}" for i in range(12, 2, -1)]
    assert [e["offset"] for e in v.examples["divergence"]] == list(range(10))


def test_examples_name_what_is_involved(judged):
    v = judged["named"]
    (lost,) = v.examples["lost"]
    assert lost["value"] == "v-lost" and lost["ack_offset"] == 5 and lost["producer"] == "p0"
    (div,) = v.examples["divergence"]
    assert (div["partition"], div["offset"]) == (0, 2)
    assert {div["v_min"], div["v_max"]} == {"v0-2", "not-v0-2"}


def test_a_cluster_whose_isr_was_not_restored_after_the_heal_fails_the_run(judged):
    """No anomaly, but partition 0's ISR stayed short of a replica after every fault was healed: Kafka
    adds a caught-up follower back (docs/findings.md F2), so the run fails and says where."""
    v = judged["not-healed"]
    assert v.anomalies == ZERO and v.verdict == "fail"
    (healed,) = v.not_healed
    assert (healed.topic, healed.partition, healed.isr, healed.replicas) == ("t", 0, [3, 2], [3, 1, 2])
    assert healed.describe() == "t-0: ISR [3, 2] of replicas [3, 1, 2] (leader 3) 120 s after the heal"
    assert [(i.issue, i.anomalies, i.shown) for i in v.known_issues] == [("kchaos-F2", ["isr_not_restored"], True)]
    evidence = v.known_issues[0].evidence
    assert "bad ZK version" in evidence and evidence.startswith("logs/kafka-1.log: ")
    assert judged["clean"].not_healed == []


def test_an_isr_not_restored_without_the_controllers_refusal_in_its_logs_is_unexplained(judged):
    """F2 is named by its mechanism, not its symptom: a ZooKeeper-mode stall whose brokers never logged
    the refused retry stays unexplained, and says which line it lacks."""
    v = judged["not-healed-unexplained"]
    assert v.verdict == "fail" and v.not_healed
    (k,) = v.known_issues
    assert (k.issue, k.shown, k.explains) == ("kchaos-F2", False, False)
    assert "bad ZK version" in k.evidence and "logs/kafka-*.log" in k.evidence


def test_acks1_loss_is_expected_not_a_failure(judged):
    v = judged["acks1"]
    assert v.anomalies["lost"] == 1
    assert v.verdict == "pass"
    (row,) = v.by_config
    assert row.expected == ["lost"] and "acks=1" in row.promises["lost"].why


def test_a_read_at_its_stale_hw_of_a_record_in_the_final_log_is_counted_but_breaks_no_promise(judged):
    """Kafka's fetch response carries the hw from before its read, so a committed record can come back
    at or above it: counted by the contract, expected; a record missing from the final log still fails."""
    v = judged["stale"]
    assert v.anomalies == only(uncommitted_read=1) and v.verdict == "pass"
    (row,) = v.by_config
    assert row.expected == ["uncommitted_read"] and row.broken == []
    assert row.promises["uncommitted_read"].promised and "Partition.readRecords" in row.promises["uncommitted_read"].why
    v = judged["stale-and-uncommitted"]
    assert v.anomalies == only(uncommitted_read=2) and v.verdict == "fail"
    assert v.by_config[0].broken == ["uncommitted_read"]


def test_writes_retention_deleted_are_counted_lost_but_break_no_promise(judged):
    """A log whose start moved past acknowledged writes lost them by retention, by design: counted by
    the contract, reported, expected; a lost write above the log start still fails."""
    v = judged["retention"]
    assert v.anomalies == only(lost=3) and v.verdict == "pass"
    assert v.retention_deleted.count == 3 and {e["value"] for e in v.retention_deleted.examples} == {"r0", "r1", "r2"}
    (row,) = v.by_config
    assert row.expected == ["lost"] and row.broken == [] and "retention" in row.promises["lost"].why
    v = judged["retention-and-lost"]
    assert v.anomalies == only(lost=4) and v.verdict == "fail" and v.by_config[0].broken == ["lost"]


def test_reads_of_records_retention_deleted_break_no_promise(judged):
    """A read of a record below the log start after the run: missing from the final log, so counted
    uncommitted_read by the contract, but reported as retention_read and not held against the
    promise; a read of a record missing above the log start still fails."""
    v = judged["retention-read"]
    assert v.anomalies == only(lost=3, uncommitted_read=4), v.anomalies
    assert v.retention_read.count == 3 and {e["value"] for e in v.retention_read.examples} == {"r0", "r1", "r2"}
    (row,) = v.by_config
    assert row.broken == ["uncommitted_read"] and "lost" in row.expected


def test_reads_of_records_retention_deleted_alone_pass(judged):
    v = judged["retention-read-only"]
    assert v.anomalies == only(lost=3, uncommitted_read=3) and v.verdict == "pass", v.anomalies
    (row,) = v.by_config
    assert set(row.expected) == {"lost", "uncommitted_read"} and row.broken == []
    assert "retention deleted them" in row.promises["uncommitted_read"].why


def test_a_recreated_topics_deleted_writes_and_renumbered_offsets_break_no_promise(judged):
    """Writes acknowledged before the topic was created again were deleted with the old topic
    (topic_deleted, topic_deleted_read: counted by the contract, not held); the new topic's offsets
    start again at 0, which the order classes count and the recreation excuses."""
    v = judged["recreated"]
    assert v.anomalies == only(lost=5, uncommitted_read=5, divergence=3, nonmonotonic_send=1,
                               nonmonotonic_poll=1), v.anomalies
    assert v.verdict == "pass", v.by_config
    assert v.topic_deleted.count == 5 and v.topic_deleted_read.count == 5
    (row,) = v.by_config
    assert "topic-recreated" in row.config and row.broken == []
    assert "created again" in row.promises["nonmonotonic_send"].why
    assert "created again" in row.promises["lost"].why and row.promises["lost"].promised
    assert "created again" in row.promises["divergence"].why


def test_a_deleted_topics_record_in_the_new_topic_breaks_a_promise(judged):
    v = judged["recreated-old-served"]
    assert v.anomalies["old_topic_read"] == 1 and v.verdict == "fail"
    assert "old_topic_read" in v.by_config[0].broken or any(b.anomaly == "old_topic_read"
                                                           for b in v.broken_outside_configs)
    (ex,) = v.examples["old_topic_read"]
    assert ex["value"] == "old0" and ex["offset"] == 3


def test_a_replica_of_the_new_topic_holding_the_old_ones_record_still_diverges(judged):
    v = judged["recreated-stray-replica"]
    assert v.anomalies["divergence"] == 3 and v.verdict == "fail", v.anomalies
    assert "divergence" in v.by_config[0].broken or any(b.anomaly == "divergence" for b in v.broken_outside_configs)


def test_a_write_the_new_topic_acknowledged_and_lost_still_fails(judged):
    v = judged["recreated-then-lost"]
    assert v.anomalies["lost"] == 6 and v.topic_deleted.count == 5 and v.verdict == "fail"
    assert v.by_config[0].broken == ["lost"]


def test_mixed_producers_are_judged_by_their_own_config(judged):
    assert judged["mixed-acks1-lost"].verdict == "pass"
    v = judged["mixed-both-lost"]
    assert v.verdict == "fail"
    broken = {r.producers[0]: r.broken for r in v.by_config}
    assert broken == {"p-one": [], "p-all": ["lost"]}


def test_acks0_and_indeterminate_writes_are_not_losses(judged):
    v = judged["acks0"]
    assert v.anomalies == ZERO
    assert v.acks0_missing == 1
    assert v.indeterminate_landed.count == 1
    assert v.indeterminate_landed.examples[0]["error"] == "_MSG_TIMED_OUT"
    assert v.failed_but_present.count == 1


def test_unclean_election_makes_divergence_expected_but_never_phantoms(judged):
    v = judged["unclean-divergence"]
    assert v.verdict == "pass" and v.by_config[0].expected == ["divergence"]
    assert judged["unclean-phantom"].verdict == "fail"


def test_old_ibp_and_power_loss_excuse_loss(judged):
    assert judged["old-ibp"].verdict == "pass"
    assert judged["power-loss"].verdict == "pass"
    assert judged["power-loss-elr"].verdict == "fail"


def test_unavailability_windows_and_recovery_after_a_fault(judged):
    v = judged["unavailable"]
    (w,) = v.unavailability.windows
    assert w["start_ms"] == T0 + 905 and w["end_ms"] == T0 + 4905
    (f,) = v.unavailability.faults
    assert f["recovery_ms"] == 3905 and f["outage_ms"] == 4000


def test_far_partitions_and_offsets_and_topics_only_replicas_hold_are_counted(judged):
    """A partition numbered 5000, an offset of 2^62 and a final read of a topic no producer or live
    read used are counted like any other."""
    v = judged["far"]
    assert v.anomalies == only(divergence=2, phantom=1)
    assert {(e["partition"], e["offset"]) for e in v.examples["divergence"]} == {(5000, 0), (0, 1 << 62)}
    assert v.examples["phantom"][0]["topic"] == "x"


def test_many_runs_in_one_session_from_a_parent_directory(judged):
    """The fixture checked every case from their parent directory; runs of one configuration are
    summed into one row."""
    (row,) = summarize([judged["clean"], judged["planted-lost"]])
    assert [judged[n].verdict for n in ("clean", "planted-lost")] == ["pass", "fail"]
    assert row["runs"] == 2 and row["failed"] == 1 and row["counts"]["lost"] == 1


# ---------------------------------------------------------------- bad input


def _corrupt(tmp_path, how: str):
    d = History().clean(3).write(tmp_path / "bad")
    if how == "missing file":
        (d / "consumed.parquet").unlink()
    elif how == "missing column":
        t = pq.read_table(d / "consumed.parquet").drop(["hw"])
        pq.write_table(t, d / "consumed.parquet")
    elif how == "wrong type":
        t = pq.read_table(d / "produced.parquet")
        t = t.set_column(t.schema.get_field_index("offset"), "offset", pa.array([str(x) for x in range(3)]))
        pq.write_table(t, d / "produced.parquet")
    elif how == "empty history":
        pq.write_table(pq.read_table(d / "produced.parquet").slice(0, 0), d / "produced.parquet")
    elif how == "bad status":
        t = pq.read_table(d / "produced.parquet")
        t = t.set_column(t.schema.get_field_index("status"), "status", pa.array(["ok", "OK", "ok"]))
        pq.write_table(t, d / "produced.parquet")
    elif how == "no final read":
        t = pq.read_table(d / "consumed.parquet")
        t = t.filter(pa.compute.equal(t["phase"], "live"))
        pq.write_table(t, d / "consumed.parquet")
    return d


BAD = {
    "missing file": r"consumed\.parquet: missing",
    "missing column": r"consumed\.parquet: missing column 'hw'",
    "wrong type": r"produced\.parquet: column 'offset' has type string, expected integer",
    "empty history": r"produced\.parquet: empty history",
    "bad status": r"produced\.parquet: column 'status' has 1 rows outside the contract \(allowed: ok, fail, info\)",
    "no final read": r"consumed\.parquet: no rows with phase 'final'",
}


@pytest.mark.parametrize("how", list(BAD))
def test_bad_input_names_file_and_column_and_writes_nothing(tmp_path, how):
    d = _corrupt(tmp_path, how)
    with pytest.raises(HistoryError, match=BAD[how]):
        check_runs([d])
    assert not (d / "verdict.json").exists()


def test_a_final_read_that_found_nothing_in_an_empty_final_log_is_a_history_not_a_breach(tmp_path):
    """The final read ran (run.json's phases) and no replica holds a record: the final log is
    empty, and every acknowledged write is lost; with a replica holding records it is a breach."""
    import json

    d = _corrupt(tmp_path, "no final read")
    run = json.loads((d / "run.json").read_text())
    (d / "run.json").write_text(json.dumps({**run, "phases": {"final_read": 0.5}}))
    with pytest.raises(HistoryError, match=BAD["no final read"]):
        check_runs([d])  # replicas.parquet still holds the records the final read should have found
    pq.write_table(pq.read_table(d / "replicas.parquet").slice(0, 0), d / "replicas.parquet")
    (v,) = check_runs([d])
    assert v.anomalies["lost"] == 3


@pytest.mark.chaos_long  # an embedded Spark driver's start; the default tier checks on the warm server
def test_a_check_that_fails_midway_leaves_nothing_cached(tmp_path, embedded_driver):
    """Bad input found by the Spark job itself, after it cached the history's rows."""
    d = _corrupt(tmp_path, "no final read")
    with pytest.raises(HistoryError, match=BAD["no final read"]):
        check_runs([d])
    assert nothing_cached(), "a check that fails midway must not leave its cached rows in the session"


def test_cli_exit_codes(tmp_path):
    good = History().clean(3).write(tmp_path / "good")
    h = History().clean(3)
    plant(h, "lost")
    broken = h.write(tmp_path / "broken")
    bad = _corrupt(tmp_path, "missing column")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "harness", "check", *map(str, args)],
                              capture_output=True, text=True)

    r = run(good, broken)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "lost" in r.stdout and (good / "verdict.json").exists() and (broken / "verdict.json").exists()
    (good / "verdict.json").unlink()
    r = run(good, bad)
    assert r.returncode == 2 and "missing column 'hw'" in r.stderr
    assert not (good / "verdict.json").exists(), "nothing may be written when any input is bad"
    r = run(good)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr == "", "a check that passes prints nothing on stderr (no JVM or Spark start-up lines)"


@case("lookups")
def _lookups() -> History:
    """Who read an uncommitted record (and under which hw), who sent a lost or duplicated value, and
    where the final log holds odd values are looked up with a broadcast when the rows are few and a
    shuffle join otherwise. Both must give the same answer: this history is checked both ways."""
    h = History().clean(5)
    h.read("v-uncommitted", 7, consumer="c1", hw=8)  # not in the final log
    h.read("v0-4", 4, consumer="c2", hw=4)  # in the final log, but read at its hw
    plant(h, "lost")
    plant(h, "duplicate")
    return h


def assert_lookups(v) -> None:
    assert v.anomalies == only(uncommitted_read=2, lost=1, duplicate=1)
    got = {(e["value"], e["consumer"], e["hw"], e["not_in_final"], e["at_or_above_hw"])
           for e in v.examples["uncommitted_read"]}
    assert got == {("v-uncommitted", "c1", 8, 1, 0), ("v0-4", "c2", 4, 0, 1)}
    assert (v.examples["lost"][0]["producer"], v.examples["duplicate"][0]["producer"]) == ("p0", "p0")


def test_lookups_broadcast_give_the_answer(judged):
    assert_lookups(judged["lookups"])


def test_footers_say_which_topics_a_file_holds_only_when_they_can(tmp_path):
    """The topics are numbered before the first shuffle: from the Parquet footers when every row group
    holds one topic, else from the column itself; exactly, either way."""
    from harness.history.footers import footer_stats, topics_of

    f = tmp_path / "x.parquet"
    t = pa.table({"topic": ["a", "a", "b", "b", None, None], "partition": [0, 3, 7, 1, None, None]})
    pq.write_table(t, f, row_group_size=2)
    assert footer_stats(f, "topic") == ({"a", "b", None}, "b")
    assert footer_stats(f, "partition") == (None, 7)  # two partitions in a row group: no set, a max
    assert footer_stats(f, "missing") == (None, None)
    assert topics_of(f) == {"a", "b", None}
    pq.write_table(t, f, row_group_size=2, write_statistics=False)
    assert footer_stats(f, "topic") == (None, None)
    assert topics_of(f) == {"a", "b", None}
    pq.write_table(t, f, row_group_size=3)  # "a", "a", "b" share a row group
    assert footer_stats(f, "topic") == (None, "b")
    assert topics_of(f) == {"a", "b", None}


@case("topics")
def _topics() -> History:
    """The big aggregations carry (topic, partition) as one number while the topics are few, the
    columns themselves otherwise. Equal partitions and offsets on different topics must stay apart,
    and a replica of a topic that no producer or reader used (so not numbered) must still count:
    this history is checked both ways."""
    h = History().clean(5)
    for a in V1_ANOMALIES:
        plant(h, a)
    h.topic = "u"  # the same partition and offsets as topic t, other values
    for i in range(3):
        h.send(f"u{i}", i)
        h.read(f"u{i}", i, hw=i + 1)
        h.read(f"u{i}", i, phase="final", consumer="final")
        for b in (1, 2, 3):
            h.replica(b, f"u{i}", i)
    h.send("u-lost", 3)
    h.run["topics"].append({**h.run["topics"][0], "name": "u"})  # run.json lists every topic written to
    h.topic = "w"  # on two replicas only, with different values at offset 0
    h.replica(1, "w-a", 0).replica(2, "w-b", 0)
    return h


def assert_topics(v) -> None:
    assert v.anomalies == only(**{**dict.fromkeys(V1_ANOMALIES, 1), "lost": 2, "divergence": 2})
    div = {(e["topic"], e["partition"], e["offset"]) for e in v.examples["divergence"]}
    assert div == {("t", 0, 2), ("w", 0, 0)}
    assert {(e["value"], e["topic"]) for e in v.examples["lost"]} == {("v-lost", "t"), ("u-lost", "u")}
    (unc,) = v.examples["uncommitted_read"]
    (ph,) = v.examples["phantom"]
    (dup,) = v.examples["duplicate"]
    assert (unc["topic"], ph["topic"], dup["at"][0]["topic"]) == ("t", "t", "t")


def test_topics_numbered_stay_apart_and_replica_only_topics_are_found(judged):
    assert_topics(judged["topics"])


@pytest.mark.chaos_long  # the same answers under other plans; the default tier has the planted ones
def test_shuffled_lookups_and_topics_as_columns_give_the_same_answers(tmp_path, monkeypatch):
    """The other side of both choices, in one check: every lookup shuffled, (topic, partition) as
    columns."""
    import harness.checker.keys as keys
    import harness.checker.prepare as prepare

    monkeypatch.setattr(prepare, "BROADCAST_ROWS", 0)
    monkeypatch.setattr(keys, "PACK_TOPICS_MAX", 0)
    hs = {"lookups": _lookups(), "topics": _topics()}
    verdicts = check_runs([h.write(tmp_path / name) for name, h in hs.items()])
    for h, v in zip(hs.values(), verdicts, strict=True):
        assert v.anomalies == h.reference()
    assert_lookups(verdicts[0])
    assert_topics(verdicts[1])
