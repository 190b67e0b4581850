"""Share groups on data the tests build: what a scenario may ask (bad input exits 2 naming the key
and what is allowed), the broker settings the groups need, and how a member's lines become
deliveries.parquet's and share_acks.parquet's rows. Real Kafka: tests/test_share_groups.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import scenario as scenario_mod
from harness.scenario import ShareGroupSpec, share_broker_config
from harness.share_groups import ShareGroup

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
    from harness.nemesis import txn_state_partition

    assert txn_state_partition("hello", 50) == 99162322 % 50
    assert txn_state_partition("polygenelubricants", 50) == 0


def test_a_run_with_a_share_group_never_shares_a_cluster():
    """Its group configuration and share state stay in the cluster: a later run of a group of the
    same name would start from them."""
    from harness.kept_cluster import may_share_a_cluster

    assert not may_share_a_cluster(load())
    assert may_share_a_cluster(load("share_groups=[]", "faults=[]"))
