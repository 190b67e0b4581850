"""Share groups on data the tests build: what a scenario may ask (bad input exits 2 naming the key
and what is allowed), the broker settings the groups need, and how a member's lines become
deliveries.parquet's and share_acks.parquet's rows. Real Kafka: tests/test_share_groups.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import scenario as scenario_mod
from harness.clients.java.share_groups import ShareGroup
from harness.scenario import ShareGroupSpec, share_broker_config

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def load(*sets: str):
    return scenario_mod.load(SCENARIOS / "share-group-member-faults.toml", list(sets))


def test_the_catalogues_share_group_is_java_and_its_members_are_fault_targets():
    s = load()
    (g,) = s.share_groups
    assert s.library(g) == ("java", "4.2.2") and s.member_names == ["s-1", "s-2"]
    assert s.cluster_settings().broker_config["group.share.delivery.count.limit"] == "4"


@pytest.mark.parametrize(("sets", "refused"), [
    (["kafka_version=3.9.2"], 'share_groups: Kafka 3.9.2 kraft has no share groups (allowed: mode = "kraft" with '
                              'kafka_version 4.1.1 (with features = { "share.version" = 1 }), 4.1.2 (with features = '
                              '{ "share.version" = 1 }), 4.2.2, 4.3.1, 4.4.0)'),
    (["kafka_version=4.1.2"], "share_groups: Kafka 4.1.2 kraft at share.version 0 has no share groups"),
    (["kafka_version=4.4.0", "features.share.version=0"], "Kafka 4.4.0 kraft at share.version 0 has no share groups"),
    (['share_groups.0.client="librdkafka"'], "share_groups.0.client: 'librdkafka' has no share consumer here "
                                             "(allowed: java"),
    (['share_groups.0.acknowledge="implicit"'], "share_groups.0: release_ratio and reject_ratio need acknowledge = "
                                                '"explicit"'),
    (["share_groups.0.release_ratio=0.7", "share_groups.0.reject_ratio=0.6"],
     "share_groups.0: release_ratio + reject_ratio = 1.3 (allowed: at most 1)"),
    (["share_groups.0.delivery_count_limit=11"], "share_groups.0.delivery_count_limit"),
    (["share_groups.0.crash_ratio=0.5"], "share_groups.0.crash_ratio"),
    (['faults.0.target="share_coordinator:t"'], "faults.0.target: share_coordinator:t needs a share group of this "
                                                "scenario (allowed: s)"),
    (['share_groups.0.name="g"', 'groups=[{name="g", members=1}]', "faults=[]"], "share_groups: names must differ"),
    (["share_groups.0.members=6", 'groups=[{name="g", members=1}]'], "groups: 7 members in all, share groups' "
                                                                     "included (allowed: at most 6)"),
])
def test_a_share_group_the_run_cannot_have_is_refused_naming_the_key(sets, refused):
    with pytest.raises(scenario_mod.ScenarioError) as e:
        load(*sets)
    assert refused in str(e.value)


def test_4_1_takes_share_groups_once_formatted_with_them():
    s = load("kafka_version=4.1.2", "features.share.version=1")
    assert s.library(s.share_groups[0]) == ("java", "4.1.2")


def test_the_broker_settings_are_the_least_of_the_groups_values_with_their_floors():
    a, b = ShareGroupSpec(name="a", lock_ms=8000, delivery_count_limit=6), ShareGroupSpec(name="b", lock_ms=3000)
    cfg = share_broker_config([a, b])
    assert cfg["group.share.record.lock.duration.ms"] == cfg["group.share.min.record.lock.duration.ms"] == "3000"
    assert cfg["group.share.delivery.count.limit"] == "5" and cfg["group.share.session.timeout.ms"] == "6000"
    assert share_broker_config([]) == {}


def test_a_members_lines_become_the_share_files_rows(tmp_path):
    g = ShareGroup.__new__(ShareGroup)
    g.spec, g.work = ShareGroupSpec(name="s"), tmp_path
    lines = [{"t": "started", "ts_ms": 1},
             {"t": "delivery", "topic": "t", "partition": 0, "offset": 4, "value": "p-4", "delivery_count": 2,
              "ts_ms": 10},
             {"t": "ack", "topic": "t", "partition": 0, "offset": 4, "value": "p-4", "type": "release",
              "outcome": "ok", "error": None, "ts_ms": 12}]
    (tmp_path / "s-1.2.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + '\n{"t": "deliv')
    deliveries, acks = g.history()
    assert deliveries == [{"group": "s", "member": "s-1.2", "topic": "t", "partition": 0, "offset": 4,
                           "value": "p-4", "delivery_count": 2, "ts_ms": 10}]
    assert acks == [{"group": "s", "member": "s-1.2", "topic": "t", "partition": 0, "offset": 4, "value": "p-4",
                     "type": "release", "outcome": "ok", "error": None, "ts_ms": 12}], "a line cut short is dropped"
    g.start_offsets, g.final_start_offsets, g.topic = {"t:0": 0}, {"t:0": 9}, "t"
    assert g.settings()["final_start_offsets"] == {"t:0": 9} and g.settings()["delivery_count_limit"] == 5


def test_a_share_partitions_coordinator_key_maps_as_kafkas_string_hash_does():
    """Kafka's ShareCoordinatorService.partitionFor: Utils.abs("GROUP:TOPIC_ID:PARTITION".hashCode()) %
    partitions. Java's own values: "hello".hashCode() is 99162322; "polygenelubricants".hashCode() is
    Integer.MIN_VALUE, which Utils.abs makes 0."""
    from harness.run.nemesis import txn_state_partition

    assert txn_state_partition("hello", 50) == 99162322 % 50
    assert txn_state_partition("polygenelubricants", 50) == 0


def test_a_run_with_a_share_group_shares_a_cluster_under_a_group_id_of_its_own():
    """Its group configuration and share state stay in the cluster under the group's id: a run on a
    kept cluster gets an id no earlier run held, so it starts from none of theirs."""
    from harness.run.kept_cluster import may_share_a_cluster, with_topic_and_ids_of_its_own

    assert may_share_a_cluster(load())
    ids = {with_topic_and_ids_of_its_own(load(), tag).share_groups[0].group_id for tag in ("h1", "h2")}
    assert len(ids) == 2 and load().share_groups[0].name not in ids


def test_a_member_dead_of_a_poison_record_is_started_again_unless_a_fault_holds_it(tmp_path):
    """The member program here exits as the Java member does on a poison record (status 3): the group
    starts it again CRASH_RESTART_S after it is seen dead, as a new incarnation; a member a fault
    killed is left for the fault's heal to start."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.clients.java.share_groups import CRASH_EXIT, CRASH_RESTART_S, ShareMember
    spawner = ThreadPoolExecutor(1)
    m = ShareMember("s-1", ShareGroupSpec(crash_ratio=0.01), {}, "t", tmp_path, spawner,
                    ["sh", "-c", f"exit {CRASH_EXIT}"], seed=1)
    m.start()
    m.proc.wait(10)
    assert m.failure() is None and not m.restart_if_crashed(100.0), "seen dead: restarted only after a pause"
    assert not m.restart_if_crashed(100.0 + CRASH_RESTART_S / 2)
    assert m.restart_if_crashed(100.0 + CRASH_RESTART_S) and m.consumer == "s-1.2"
    m.proc.wait(10)
    assert m.coming_back(100.0 + CRASH_RESTART_S), "dead again: the group is not quiet"
    m.kill()
    assert not m.restart_if_crashed(200.0) and not m.restart_if_crashed(300.0) and m.consumer == "s-1.2"
    assert not m.coming_back(300.0), "held by a fault, long past its session: quiet"
    m.start()  # the fault's heal
    assert m.consumer == "s-1.3" and json.loads((tmp_path / "s-1.3.json").read_text())["crash_ratio"] == 0.01
    spawner.shutdown()


def test_poison_records_are_chosen_by_value_alone_at_about_the_ratio():
    from harness.clients.java.share_groups import poison
    values = [f"p-{i}" for i in range(100_000)]
    chosen = [v for v in values if poison(v, 0.002)]
    assert 150 < len(chosen) < 250 and chosen == [v for v in values if poison(v, 0.002)]
    assert not any(poison(v, 0.0) for v in values)

