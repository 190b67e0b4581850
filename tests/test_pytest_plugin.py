"""The pytest plugin as a user meets it: installed, then used from a test file outside this repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checker import warm
from harness.clients import registry
from tests.conftest import require_docker

SMOKE = Path(__file__).resolve().parent.parent / "scenarios" / "smoke.toml"
# The suite's warm Spark server, found before pytester moves HOME: the user's suite checks on it too,
# rather than cold-starting a server of its own.
SUITE_SPARK_STATE = str(warm.state_dir())

USER_TESTS = f'''
import time
import pytest

pytestmark = pytest.mark.kchaos_cluster(skewable_clocks=True)

@pytest.mark.chaos_quick
def test_safe_config_under_a_follower_cut(chaos_run):
    r = chaos_run({str(SMOKE)!r}, seed=2, overrides=["duration_s=8", "faults.0.at_s=2", "faults.0.duration_s=3"])
    r.assert_promises_held()
    assert r.anomalies["lost"] == 0 and (r.path / "verdict.json").exists()

@pytest.mark.chaos_quick
def test_cluster_workload_and_nemesis(kafka_cluster, workload, nemesis):
    w = workload("t1", partitions=2).start(acks="all", idempotence=True, rate=100,
                                           groups=[{{"name": "g", "members": 2}}])
    time.sleep(2)
    hit = nemesis.fault("kill", "follower", topic="t1")
    time.sleep(2)
    nemesis.heal(hit)
    skew = nemesis.fault("clock_skew", "leader", topic="t1", offset_s=-30)
    time.sleep(1)
    nemesis.heal(skew)
    crash = nemesis.on("acked", count=50).fault("client_kill", "client:g-1", topic="t1").wait(30)
    time.sleep(2)
    nemesis.heal(crash)
    time.sleep(2)
    r = w.stop()
    r.assert_promises_held()
    g = r.group("g")
    assert g.verdict == "pass"
    assert g.counts == {{"group_unseen": 0, "offset_regression": 0, "coordinator_regression": 0}}
    read = {{x["value"] for x in r.rows("consumed") if x["group"] == "g"}}
    members = {{x["consumer"].split("/")[0] for x in r.rows("consumed") if x["group"] == "g"}}
    assert members >= {{"g-1", "g-2"}}, "each member read (g-1.2 is g-1's process after the kill)"
    acked = {{x["value"] for x in r.rows("produced") if x["status"] == "ok"}}
    final = {{x["value"] for x in r.rows("consumed") if x["phase"] == "final"}}
    assert len(acked) > 100 and acked <= final and r.verdict.final_log_records == len(final)
    assert acked <= read, "the group returned every acknowledged record"
    assert {{x["broker"] for x in r.rows("replicas")}} == {{1, 2, 3}}
    assert '"kind": "kill"' in (r.path / "events.jsonl").read_text()
    assert (r.path / "logs" / "clients.log").exists()

@pytest.mark.chaos_long
def test_deselected_by_marker(chaos_run):
    raise AssertionError("-m chaos_quick must not run this")
'''


def test_plugin_is_registered_and_refuses_bad_options(pytester):
    pytester.makepyfile(test_x="def test_x(kafka_target):\n    pass\n")
    res = pytester.runpytest_subprocess("--kafka-version", "9.9")
    assert "no image recipe" in res.stderr.str() + res.stdout.str()
    res = pytester.runpytest_subprocess("--kafka-version", "3.9.1,4.1.2", "--mode", "kraft", "--collect-only", "-q")
    out = res.stdout.str()
    assert "test_x[3.9.1-kraft]" in out and "test_x[4.1.2-kraft]" in out
    res = pytester.runpytest_subprocess("--kafka-quorum", "2")
    assert "invalid choice: 2" in res.stderr.str()
    pytester.makepyfile(test_y="def test_y(chaos_run):\n    pass\n")
    res = pytester.runpytest_subprocess("--kchaos-client", "librdkafka,java", "--collect-only", "-q", "test_y.py")
    # without --kafka-version: the default version in its mode (the newest, KRaft)
    assert "test_y[4.4.0-kraft-librdkafka]" in res.stdout.str() and "test_y[4.4.0-kraft-java]" in res.stdout.str()
    res = pytester.runpytest_subprocess("--kchaos-client", "no-such-library", "test_y.py")
    assert f"--kchaos-client no-such-library: no driver (allowed: {registry.names()})" in \
        res.stderr.str() + res.stdout.str()
    assert "librdkafka, java, franz-go" in registry.names()


# The last ISR member's power loss, built by hand in a user's suite on 4.1.2 KRaft, where eligible
# leader replicas are on by default: the two followers stop cleanly one after the other as the ISR
# shrinks, the leader then loses power and comes back first (scenarios/power-loss.toml's schedule).
ELR_TESTS = """
import time

from harness.checker.promises import Config, promises

def test_last_isr_power_loss(kafka_cluster, workload, nemesis):
    w = workload("elr", partitions=1).start(producers=[{"name": "p", "acks": "all", "idempotence": True,
                                                        "rate": 200}])
    steps = [nemesis.on("acked", count=200).fault("restart", "follower:1", topic="elr"),
             nemesis.on("isr_shrink", partition=0, size=2, delay_s=0.5).fault("restart", "follower:1", topic="elr"),
             nemesis.on("isr_shrink", partition=0, size=1, delay_s=1).fault("power_loss", "leader", topic="elr")]
    for step in steps:
        step.wait(60)
    time.sleep(3)
    r = w.stop()  # heals the last fault first: the leader comes back before the followers
    run = r.verdict.by_config[0]
    assert run.settings["eligible_leader_replicas"] is True and "power_loss" in run.settings["faults"]
    runners = promises(Config("all", True, 2, eligible_leader_replicas=True,
                              faults=frozenset({"restart", "power_loss"})))
    assert {a: p.promised for a, p in run.promises.items()} == {a: p.promised for a, p in runners.items()}
    assert run.promises["lost"].promised and run.promises["divergence"].promised
    import json
    doc = json.loads((r.path / "run.json").read_text())
    assert doc["features"]["eligible.leader.replicas.version"] == 1 and doc["leader_epochs"] is True
    assert [f["kind"] for f in doc["faults"]] == ["restart", "restart", "power_loss"]
    assert doc["topics"][0]["config"]["min.insync.replicas"] == "2"
    r.assert_promises_held()
"""


@pytest.mark.chaos_long  # a user's suite on a cluster of its own: over two minutes
@pytest.mark.docker
def test_a_users_chaos_suite_runs_with_the_plugin(pytester, monkeypatch):
    """A user's suite on 4.1.2 KRaft (one cluster for its module, one controller: the quorum is not
    under test here): a scenario, and a hand-built workload with groups and faults."""
    res = _user_suite(pytester, monkeypatch, USER_TESTS)
    res.assert_outcomes(passed=2, deselected=1)
    assert "DeprecationWarning" not in res.stdout.str(), "the plugin filters what its own imports warn about"


@pytest.mark.docker
@pytest.mark.chaos_long  # three triggered restarts and a check: the plugin's parts are in the test above
def test_a_users_hand_built_last_isr_power_loss_is_judged_as_a_scenario_run_is(pytester, monkeypatch):
    _user_suite(pytester, monkeypatch, ELR_TESTS).assert_outcomes(passed=1)


def _user_suite(pytester, monkeypatch, tests: str):
    require_docker(["4.1.2"])
    pytester.makepyfile(test_user=tests)
    monkeypatch.setenv("KCHAOS_SPARK_STATE", SUITE_SPARK_STATE)
    return pytester.runpytest_subprocess("-m", "chaos_quick or not chaos_long", "--kafka-version", "4.1.2", "--mode",
                                         "kraft", "--kafka-quorum", "1", "-p", "no:cacheprovider", timeout=900)


