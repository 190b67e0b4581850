"""Upgrades under load on data the tests build: which rolling and feature upgrades a scenario may
ask for (bad ones exit 2 naming the key and what is allowed), the order a roll visits the nodes in,
the image that holds every version of a roll, and that an upgraded cluster is never shared. What
Kafka does under a roll is tested against real Kafka in tests/test_upgrades.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import scenario as scenario_mod
from harness.cluster.upgrades import marker_tar, roll_order
from harness.history.events import from_dicts
from harness.run.kept_cluster import may_share_a_cluster
from harness.scenario import Scenario
from harness.setup import images

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def with_faults(version: str, mode: str, *faults: dict, **extra) -> Scenario:
    base = scenario_mod.load(SCENARIOS / "smoke.toml")
    data = {**base.model_dump(mode="json"), "kafka_version": version, "mode": mode, "faults": list(faults),
            "duration_s": 60, **extra}
    return Scenario.model_validate(data)


def roll(to: str | None, **kw) -> dict:
    return {"at_s": 2, "duration_s": 30, "kind": "rolling_upgrade", "target": "broker:1",
            **({"to": to} if to is not None else {}), **kw}


def feature(name: str | None, level: int | None = None) -> dict:
    return {"at_s": 40, "duration_s": 1, "kind": "feature_upgrade", "target": "controller",
            **({"feature": name} if name is not None else {}), **({"level": level} if level is not None else {})}


def test_a_roll_to_a_later_version_of_the_mode_is_taken_with_its_versions_in_order():
    s = with_faults("3.9.2", "kraft", roll("4.1.2"), {**roll("4.4.0"), "at_s": 33, "duration_s": 20})
    assert s.upgrades == ["4.1.2", "4.4.0"]
    assert with_faults("3.9.1", "zk", roll("3.9.2")).upgrades == ["3.9.2"]


@pytest.mark.parametrize(("version", "mode", "faults", "refused"), [
    ("3.9.1", "zk", [roll(None)], "to: rolling_upgrade needs the version to move to (allowed: 2.8.2, 3.9.1"),
    ("4.3.1", "kraft", [roll("4.1.2")], "faults.0.to: '4.1.2' is not a later version of a kraft cluster running "
                                        "4.3.1 (allowed: 4.4.0)"),
    ("3.9.1", "zk", [roll("4.1.2")], "(allowed: 3.9.2)"),
    ("4.4.0", "kraft", [roll("4.4.0")], "(allowed: none: it runs the newest)"),
    ("4.1.2", "kraft", [roll("4.3.1"), {**roll("4.2.2"), "at_s": 33, "duration_s": 20}],
     "faults.1.to: '4.2.2' is not a later version of a kraft cluster running 4.3.1 (allowed: 4.4.0)"),
    ("3.9.1", "zk", [roll("3.9.2", feature="x")], "feature: only feature_upgrade takes feature, not rolling_upgrade"),
    ("4.1.2", "kraft", [feature(None)], "feature: feature_upgrade needs the feature to upgrade"),
    ("3.9.2", "zk", [feature("metadata.version")], "faults.0: feature_upgrade changes a KRaft cluster's feature "
                                                   "levels; this one is zk on 3.9.2"),
    ("4.1.2", "kraft", [feature("share.version", 3)], "faults.0.level: 3 is not an upgrade of share.version from 0 "
                                                      "on Kafka 4.1.2 (allowed: 1..1, or no level for the newest)"),
    ("4.1.2", "kraft", [feature("queue.version")], "faults.0.feature: 'queue.version' is not a feature Kafka 4.1.2 "
                                                   "upgrades here (allowed: metadata.version"),
    ("4.4.0", "kraft", [feature("share.version", 2)], "faults.0.level: share.version is at its newest production "
                                                      "level (2) on Kafka 4.4.0 already"),
])
def test_a_bad_upgrade_is_refused_naming_the_key_and_the_allowed(version, mode, faults, refused):
    with pytest.raises(ValueError) as e:
        with_faults(version, mode, *faults)
    assert refused in str(e.value)


def test_a_feature_upgrade_may_ask_for_what_a_roll_before_it_brought():
    """share.version 2 exists from 4.4.0: on a 4.3.1 cluster rolled to 4.4.0 first, it may be asked."""
    with pytest.raises(ValueError, match=r"share\.version"):
        with_faults("4.3.1", "kraft", feature("share.version", 2))
    s = with_faults("4.3.1", "kraft", roll("4.4.0"), feature("share.version", 2))
    assert [f.kind for f in s.faults] == ["rolling_upgrade", "feature_upgrade"]


def test_a_roll_visits_controllers_then_brokers_each_from_the_target_on():
    assert roll_order(2, [1, 2, 3], [101, 102, 103]) == [101, 102, 103, 2, 3, 1]
    assert roll_order(102, [1, 2, 3], [101, 102, 103]) == [102, 103, 101, 1, 2, 3]
    assert roll_order(3, [1, 2, 3], []) == [3, 1, 2]


def test_the_roll_image_holds_every_version_beside_the_first():
    text = images.upgrade_dockerfile("kchaos/kafka:4.1.2-a", {"4.2.2": "kchaos/kafka:4.2.2-b",
                                                             "4.4.0": "kchaos/kafka:4.4.0-c"})
    lines = text.splitlines()
    assert lines[:3] == ["FROM kchaos/kafka:4.2.2-b AS v0", "FROM kchaos/kafka:4.4.0-c AS v1",
                         "FROM kchaos/kafka:4.1.2-a"]
    assert "COPY --from=v1 /opt/kafka/libs/ /opt/kafka-versions/4.4.0/libs/" in lines
    assert any("ln -s /opt/kafka-versions/${KAFKA_VERSION}/libs /opt/kafka/libs" in x for x in lines)
    a, b = images.upgrade_ref("4.1.2", ["4.4.0"]), images.upgrade_ref("4.1.2", ["4.2.2", "4.4.0"])
    assert a.tag != b.tag and a.tag.startswith("kchaos/kafka-upgrade:4.1.2-to-4.4.0-")


def test_the_version_marker_is_one_file_naming_the_version():
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(marker_tar("4.4.0"))) as tf:
        (member,) = tf.getmembers()
        assert member.name == "kchaos-version" and tf.extractfile(member).read() == b"4.4.0\n"


def test_an_upgraded_cluster_is_never_shared_with_a_later_run():
    assert may_share_a_cluster(with_faults("4.1.2", "kraft"))
    assert not may_share_a_cluster(with_faults("4.1.2", "kraft", roll("4.2.2")))
    assert not may_share_a_cluster(with_faults("4.1.2", "kraft", feature("share.version")))


def test_the_reports_upgrades_table_has_each_node_in_turn_and_each_level_raised():
    from harness.report.upgrades import upgrade_rows

    t0 = 1_000_000
    roll_line = {"type": "fault", "kind": "rolling_upgrade", "start_ms": t0 + 3_000, "end_ms": t0 + 40_000, "upgrade": [
        {"node": "controller-1", "before": "4.1.2", "after": "4.4.0", "begin_ms": t0 + 3_000,
         "stopped_ms": t0 + 4_000, "started_ms": t0 + 4_500, "rejoined_ms": t0 + 9_000},
        {"node": "kafka-1", "before": "4.1.2", "after": "4.4.0", "begin_ms": t0 + 9_000}],
        "upgrade_error": "kafka-1 was not back in 60 s after its upgrade to 4.4.0: the roll stops there"}
    level = {"type": "fault", "kind": "feature_upgrade", "start_ms": t0 + 50_000, "end_ms": t0 + 51_000,
             "feature_change": {"feature": "share.version", "before": 0, "after": 2, "asked": 2}}
    rows = upgrade_rows(from_dicts([roll_line, level]), t0)
    assert [r["what"] for r in rows] == [
        "controller-1: Kafka 4.1.2 -> 4.4.0", "kafka-1: Kafka 4.1.2 -> 4.4.0",
        "the roll stopped: kafka-1 was not back in 60 s after its upgrade to 4.4.0: the roll stops there",
        "share.version: 0 -> 2 (asked 2)"]
    assert {k: rows[0][k] for k in ("begin_s", "stopped_s", "started_s", "back_s", "away_s")} == {
        "begin_s": 3.0, "stopped_s": 4.0, "started_s": 4.5, "back_s": 9.0, "away_s": 6.0}
    assert rows[1]["back_s"] is None and rows[1]["away_s"] is None, "a node the roll left halfway"
