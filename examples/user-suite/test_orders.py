"""A user's own chaos suite, as it would sit in any project that installed kchaos: no checkout, no
conftest. Run it as

    pytest --kafka-version 4.4.0 --kchaos-client librdkafka,java

The module's tests share one cluster (the ``kafka_cluster`` fixture); both workload tests name the
topic ``orders`` and each runs once per client library, so four workloads use that name one after
another, each on a topic made new. A catalogue scenario runs by name on clusters of its own, and a
short hunt searches the smoke scenario's schedules."""

import time

ORDERS = {"partitions": 3, "replication_factor": 3, "min_insync": 2}
BILLING = {"name": "billing", "members": 2}


def test_orders_survive_their_group_coordinator_isolated(workload, nemesis):
    """An idempotent producer and a two-member group on `orders`; the group's coordinator isolated
    from everyone for 3 s."""
    w = workload("orders", **ORDERS).start(acks="all", idempotence=True, rate=200, groups=[BILLING])
    time.sleep(3)
    hit = nemesis.fault("isolate", "group_coordinator", topic="orders")
    time.sleep(3)
    nemesis.heal(hit)
    time.sleep(3)
    result = w.stop()
    result.assert_promises_held()
    assert result.group("billing").verdict == "pass"


def test_orders_survive_a_leader_kill(workload, nemesis):
    """The same topic name in the same module: a new topic, none of the test above's records."""
    w = workload("orders", **ORDERS).start(acks="all", idempotence=True, rate=200, groups=[BILLING])
    time.sleep(3)
    hit = nemesis.fault("kill", "leader", topic="orders", partition=0)
    time.sleep(3)
    nemesis.heal(hit)
    time.sleep(3)
    result = w.stop()
    result.assert_promises_held()
    sent = {r["value"] for r in result.rows("produced")}
    assert {r["value"] for r in result.rows("consumed") if r["phase"] == "final"} <= sent, \
        "the final read holds only this test's records"


def test_the_catalogues_safe_faults_by_name(chaos_run):
    """A whole catalogue scenario, named as the catalogue names it, shortened for a CI job."""
    chaos_run("safe-faults", seed=3, overrides=["duration_s=20"]).assert_promises_held()


def test_a_short_hunt_finds_nothing_in_the_smoke_scenario(chaos_hunt):
    chaos_hunt(["smoke"], runs=1, confirm=1).assert_no_findings()
