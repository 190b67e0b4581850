"""Pure logic behind the catalogue: power-loss cuts, election checks, matrix plans, new fault targets."""

from __future__ import annotations

import io
import struct
import tarfile

import pytest

from harness import scenario
from harness.checker.judge import elections
from harness.checker.verdict import Verdict
from harness.cluster.powerloss import cut_segment, entries, plan_from_tar, script
from harness.cluster.settings import ClusterSettings
from harness.history import RunConfig
from harness.history.events import from_dicts
from harness.report import known_results
from harness.run import matrix


def segment(batches: list[tuple[int, int]]) -> bytes:
    """A segment with v2-framed batches: (base offset, payload size)."""
    out = b""
    for base, size in batches:
        body = bytes(4) + bytes([2]) + bytes(size - 5)  # leader epoch, magic 2, rest
        out += struct.pack(">qi", base, len(body)) + body
    return out


def test_power_loss_cuts_at_the_first_batch_at_or_past_the_recovery_point():
    seg = segment([(0, 40), (5, 40), (9, 40)])
    positions = [p for p, *_ in entries(seg)]
    assert positions == [0, 52, 104]
    cut = cut_segment("/d/t-0/00000000000000000000.log", 0, seg, recovery_point=5)
    assert (cut.size, cut.kept_until) == (52, 5)
    assert cut_segment("/x.log", 0, seg, recovery_point=12) is None, "all flushed: nothing to cut"
    assert cut_segment("/x.log", 20, seg, recovery_point=12).size == -1, "a segment past the point goes"
    torn = seg + struct.pack(">qi", 12, 500) + b"xx"  # a torn tail is not a batch
    assert len(entries(torn)) == 3


def test_power_loss_plan_reads_the_checkpoint_of_a_log_directory_tar():
    buf = io.BytesIO()
    files = {"data/recovery-point-offset-checkpoint": b"0\n2\nt 0 5\nt 1 0\n",
             "data/t-0/00000000000000000000.log": segment([(0, 40), (5, 40)]),
             "data/t-1/00000000000000000000.log": segment([(0, 40)]),
             "data/u-0/00000000000000000000.log": segment([(0, 40)])}
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    cuts = {c.path: c for c in plan_from_tar(buf.getvalue())}
    assert cuts["/var/lib/kafka/data/t-0/00000000000000000000.log"].size == 52
    assert cuts["/var/lib/kafka/data/t-1/00000000000000000000.log"].size == -1, "never flushed: all gone"
    assert "/var/lib/kafka/data/u-0/00000000000000000000.log" in cuts, "no checkpoint entry: nothing flushed"
    text = script(list(cuts.values()))
    assert "truncate -s 52 /var/lib/kafka/data/t-0/00000000000000000000.log" in text and "rm -f" in text


def _state(ts, leader, isr, alive, replicas=(1, 2, 3)):
    return {"type": "state", "ts_ms": ts, "brokers": alive,
            "partitions": [{"partition": 0, "leader": leader, "replicas": list(replicas), "isr": isr}]}


def test_elections_follow_ar_order_among_live_isr_members():
    ev = [_state(0, 1, [1, 2, 3], [1, 2, 3]), _state(1, -1, [2, 3], [2, 3]), _state(2, 2, [2, 3], [2, 3])]
    e = elections(from_dicts(ev))
    assert e["count"] == 1 and e["violations"] == 0 and e["list"][0]["expected"] == 2
    bad = [_state(0, 1, [1, 2, 3], [1, 2, 3]), _state(1, 3, [3, 2], [2, 3])]
    assert elections(from_dicts(bad))["violations"] == 1, "3 led although 2 comes first in AR and was alive in the ISR"
    unclean = [_state(0, 1, [1], [1, 2, 3]), _state(1, 2, [2], [2, 3])]
    assert elections(from_dicts(unclean))["unclean"] == 1
    # a reassignment moved the leader's replica to broker 4, which joined the ISR and led between samples
    moved = [_state(0, 1, [1, 2, 3], [1, 2, 3, 4]), _state(1, 4, [4, 2, 3], [1, 2, 3, 4], replicas=(4, 2, 3))]
    e = elections(from_dicts(moved))
    assert (e["unclean"], e["violations"], e["list"][0]["kind"]) == (0, 0, "reassigned"), e


# Lines as a Kafka 4.4 controller writes them (shortened after what is read), at 12:00:00 UTC on
# 2026-11-29 = 1795953600000 ms.
T_ID, COPY_ID = "AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"


def _elected(second: str, topic_id: str, leader: int, how: str) -> str:
    return (f"[2026-11-29 12:00:{second}] INFO Setting new leader for topicId {topic_id}, partition 0 to {leader} "
            f"using {how}. Previous partition: PartitionRegistration(replicas=[1, 2, 3], isr=[], leader=-1), change "
            "record: ... (org.apache.kafka.controller.PartitionChangeBuilder)\n")


CONTROLLER_LOG = "".join([
    *(f"[2026-11-29 12:00:00,100] INFO [QuorumController id=101] Replayed TopicRecord for topic {name} with topic "
      f"ID {topic_id}. (org.apache.kafka.controller.ReplicationControlManager)\n"
      for name, topic_id in (("t", T_ID), ("t-copy", COPY_ID))),
    _elected("01,500", T_ID, 2, "ELR"), _elected("03,000", COPY_ID, 3, "an unclean election"),
    _elected("05,000", T_ID, 2, "an unclean election")])
T0 = 1795953600000


def logged(tmp_path, text: str = CONTROLLER_LOG):
    from harness.checker.elections_logged import controller_account

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "controller-1.log").write_text(text)
    return controller_account(tmp_path, "t")


def test_the_controllers_logged_elections_are_read_by_the_topics_id(tmp_path):
    """Only topic t's lines count (t-copy's id is another), each with its time, partition, leader and
    how the controller elected it; a log that never names the topic knows nothing either way."""
    a = logged(tmp_path)
    assert a.known and [(e.ts_ms - T0, e.partition, e.leader, e.how) for e in a.elections] == [
        (1500, 0, 2, "elr"), (5000, 0, 2, "unclean")]
    assert a.near(0, 2, T0 + 1000, T0 + 2000).how == "elr" and a.near(0, 3, T0, T0 + 9000) is None
    zk = tmp_path / "zk"
    zk.mkdir()
    assert not logged(zk, "[2026-11-29 12:00:00,100] INFO [KafkaServer id=1] started\n").known


def test_kafkas_own_word_decides_what_the_samples_cannot_show(tmp_path):
    """From the samples alone, 2 leading after an ISR of [1] is unclean. The controller logged it as
    an election from the eligible leader replicas: elr. Not logged at all: 2 joined the ISR between
    two samples (Kafka logs every unclean election). With the controllers' clocks moved, or no
    account of the topic, the samples' reading stands. The last known leader elected back (logged
    unclean, no leader change in the samples) is added from the log."""
    ev = from_dicts([_state(T0, 1, [1], [1, 2, 3]), _state(T0 + 250, -1, [], [2, 3]),
                     _state(T0 + 1750, 2, [2], [2, 3])])
    a = logged(tmp_path)
    e = elections(ev, a)
    assert [(x["kind"], x["ok"], x["old_leader"]) for x in e["list"]] == [("elr", True, 1), ("unclean", False, None)]
    assert (e["count"], e["unclean"], e["violations"]) == (2, 1, 0)
    assert {frozenset(x) - {"source"} for x in e["list"]} == {frozenset(e["list"][0])}, "one shape: the report's table"
    later = from_dicts([_state(T0 + 8000, 1, [1], [1, 2, 3]), _state(T0 + 8250, 2, [2, 1], [1, 2, 3])])
    assert [x["kind"] for x in elections(later, a)["list"]][-1] == "isr_joined"
    assert [x["kind"] for x in elections(later, a, clocks_moved=True)["list"]][-1] == "unclean"
    assert elections(ev)["list"][0]["kind"] == "unclean", "no account: the samples decide"


def test_matrix_plan_crosses_versions_modes_acks_and_seeds():
    p = matrix.plan(["smoke"], ["3.9.1", "4.1.2"], None, ["1", "all"], [1, 2])
    ids = [c.run_id for c, *_ in p.cells]
    assert len(ids) == len(set(ids)) == 3 * 2 * 2, "3.9.1 zk+kraft, 4.1.2 kraft; 2 acks; 2 seeds"
    assert not any("4.1.2-zk" in i for i in ids), "4.1.2 has no ZooKeeper mode"
    both = matrix.plan(["smoke"], ["4.1.2"], ["zk", "kraft"], None, [1])
    assert [c.run_id for c, *_ in both.cells] == ["smoke-4.1.2-kraft-s1"]
    assert [c.run_id for c, _ in both.skipped] == ["smoke-4.1.2-zk-s1"], "asked for explicitly: skipped, said why"
    _, s, ov, _ = next(x for x in p.cells if x[0].acks == "1")
    assert s.producers[0].acks == "1" and not s.producers[0].idempotence and ov
    pinned = matrix.plan(["power-loss@4.1.2:kraft"], None, None, None, [1])
    (c, s, _, _) = pinned.cells[0]
    assert (c.kafka_version, c.mode, s.cluster_settings().elr_enabled) == ("4.1.2", "kraft", True)
    with pytest.raises(scenario.ScenarioError, match="allowed: 0, 1, all"):
        matrix.plan(["smoke"], None, None, ["2"], [1])
    with pytest.raises(scenario.ScenarioError, match="no such scenario file"):
        matrix.plan(["nope"], None, None, None, [1])


def test_matrix_plan_crosses_client_libraries():
    p = matrix.plan(["smoke"], None, None, None, [1], clients=["librdkafka", "java"])
    assert [(c.run_id, s.client) for c, s, *_ in p.cells] == [("smoke-3.9.1-zk-librdkafka-s1", "librdkafka"),
                                                              ("smoke-3.9.1-zk-java-s1", "java")]
    with pytest.raises(scenario.ScenarioError,
                       match=r"--clients: 'no-such-library' has no driver \(allowed: librdkafka"):
        matrix.plan(["smoke"], None, None, None, [1], clients=["no-such-library"])


def test_known_results_count_runs_not_records():
    v = [Verdict.model_construct(run_id=f"r{i}", verdict="pass", anomalies={"lost": n, "divergence": 0, "phantom": 0})
         for i, n in enumerate([3, 0, 5])]
    runs = {f"r{i}": {"scenario": "s", "kafka_version": "2.8.2", "mode": "zk"} for i in range(3)}
    (row,) = known_results.rows(v, {k: RunConfig.model_validate(r) for k, r in runs.items()})
    assert (row["runs"], row["with"]["lost"], row["loss_or_divergence"]) == (3, 2, 2)
    assert "| s | 2.8.2 zk | - | 3 | 2/3 (67%) |" in known_results.markdown([row])
    assert known_results.markdown([row]).endswith("| lost 2 |"), "every anomaly seen, with its runs"
    java = {"name": "java", "version": "kafka-clients 3.9.1"}
    both = {**runs, "r1": {**runs["r1"], "client": java,
                           "clients": [java, {"name": "librdkafka", "version": "librdkafka 2.16.0"}]}}
    typed = {k: RunConfig.model_validate(r) for k, r in both.items()}
    assert sorted(r["client"] for r in known_results.rows(v, typed)) == ["-", "java 3.9.1 + librdkafka 2.16.0"], \
        "a row per client libraries a run used"


def test_a_transaction_spreads_its_records_over_the_partitions():
    from harness.clients.librdkafka.transactions import _spread

    assert _spread(10, 3) == [4, 3, 3] and _spread(2, 3) == [1, 1] and sum(_spread(15694, 3)) == 15694


def test_new_targets_and_kinds_are_validated(tmp_path):
    base = 'name = "x"\nduration_s = 10\n[[faults]]\nat_s = 1\nkind = "power_loss"\n'
    p = tmp_path / "s.toml"
    for target in ("follower:2", "followers", "leader"):
        p.write_text(base + f'target = "{target}"\n')
        assert str(scenario.load(p).faults[0].target) == target
    p.write_text(base + 'target = "follower:0"\n')
    with pytest.raises(scenario.ScenarioError, match="follower:K"):
        scenario.load(p)
    with pytest.raises(ValueError, match="eligible_leader_replicas needs KRaft"):
        ClusterSettings(kafka_version="3.9.1", mode="zk", eligible_leader_replicas=True)
    assert ClusterSettings(kafka_version="4.1.2", mode="kraft").format_args() == \
        "--feature eligible.leader.replicas.version=1"
    assert ClusterSettings(kafka_version="4.1.2", mode="kraft", eligible_leader_replicas=False).format_args() == \
        "--feature eligible.leader.replicas.version=0"


@pytest.mark.parametrize("path", sorted(matrix.SCENARIO_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_every_catalogue_scenario_loads_and_plans(path):
    s = scenario.load(path)
    from harness.run import schedule

    assert schedule.plan(s) == schedule.plan(s), "same seed, same schedule"
    assert s.description, "every scenario says what it shows"


def test_old_protocol_versions_are_refused_where_kafka_no_longer_takes_them():
    msg = r"inter.broker.protocol.version: 0.10.2 .*allowed with kafka_version: 2.8.2"
    with pytest.raises(scenario.ScenarioError, match=msg):
        scenario.load(matrix.SCENARIO_DIR / "hw-truncation-loss.toml", kafka_version="4.1.2", mode="kraft")
    p = matrix.plan(["hw-truncation-loss"], ["2.8.2", "3.9.1"], None, None, [1])
    assert [c.run_id for c, *_ in p.cells] == ["hw-truncation-loss-2.8.2-zk-s1"]
    assert {c.kafka_version for c, _ in p.skipped} == {"3.9.1"}
