"""The coordination layer as deployed, against real Kafka: a three-controller KRaft quorum and a
three-server ZooKeeper ensemble, each node behind its own proxies, and faults aimed at them."""

from __future__ import annotations

import json
import re
import textwrap

import pyarrow.parquet as pq
import pytest

from harness.checker import check_runs
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

BASE = """
name = "q"
kafka_version = "3.9.1"
brokers = 3
duration_s = 12
[topic]
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[[producers]]
name = "safe"
acks = "all"
idempotence = true
rate = 150
[consumers]
count = 1
"""


def run(tmp_path, version: str, mode: str, faults: str, duration_s: int = 12):
    """One run of BASE with these faults, checked: (verdict, events, run directory)."""
    require_docker([version])
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(BASE + faults))
    s = load(p, [f"kafka_version={version}", f"mode={mode}", f"duration_s={duration_s}"])
    res = runner.execute(s, tmp_path / "run", log=lambda m: None)
    (v,) = check_runs([res.path])
    events = [json.loads(x) for x in (res.path / "events.jsonl").read_text().splitlines()]
    return v, events, res.path


def quorum_samples(events: list[dict]) -> list[dict]:
    return [e["quorum"] for e in events if e.get("type") == "state" and e.get("quorum")]


def durable(v) -> bool:
    """Nothing lost or diverged, and no promise broken but by a duplicate (librdkafka#4953 may write
    one record twice under any leader change). Reads the verdict holds no evidence against a promise
    are allowed: records read at or above the hw their fetch response carried, which the final log
    holds there (stale_hw_read, harness/checker/judge.py's NOT_HELD)."""
    return (v.anomalies["lost"] == 0 and v.anomalies["divergence"] == 0
            and all(set(c.broken) <= {"duplicate"} for c in v.by_config) and not v.broken_outside_configs)


def test_killing_the_active_controller_of_three_elects_another(tmp_path):
    """And, on the quorum of another controller, an operator retires a follower (decommission: a clean
    shutdown, then kafka-cluster unregister) and starts it again: it registers anew, and nothing the
    min.insync replicas acknowledged is lost."""
    v, events, _ = run(tmp_path, "3.9.1", "kraft",
                       '[[faults]]\nat_s = 2\nduration_s = 6\nkind = "kill"\ntarget = "controller"\n'
                       '[[faults]]\nat_s = 8\nduration_s = 3\nkind = "decommission"\ntarget = "follower"\n')
    fault, retired = sorted((e for e in events if e["type"] == "fault"), key=lambda e: e["start_ms"])
    assert retired["kind"] == "decommission" and list(retired["unregistered"]) == [str(retired["brokers"][0])]
    back = [e for e in events if e["type"] == "state" and e["ts_ms"] > retired["end_ms"]]
    assert any(retired["brokers"][0] in e.get("brokers", []) for e in back), "the retired broker registered anew"
    assert fault["nodes"][0].startswith("controller-") and fault["brokers"] == [fault["controller_before"]]
    samples = quorum_samples(events)
    assert samples and all(q["voters"] == [101, 102, 103] for q in samples if q["leader"] >= 0)
    (f,) = v.coordination.failovers
    assert f.layer == "controller" and f.leader_before == fault["controller_before"]
    assert f.new_leader in (101, 102, 103) and f.new_leader != f.leader_before
    assert 0 < f.failover_ms < 10_000, f
    assert durable(v), v.anomalies


@pytest.mark.chaos_long  # ZooKeeper mode; the KRaft controller's failover is in the default suite
# ZooKeeper 3.5.9 (Kafka 2.8.2) dials a peer back at the address it tells, where 3.8 (Kafka 3.9) was
# not seen to: the long tier runs the older one too.
@pytest.mark.parametrize("version", ["3.9.1", pytest.param("2.8.2", marks=pytest.mark.chaos_long)])
def test_the_zookeeper_ensembles_isolated_leader_is_replaced(tmp_path, version):
    """Isolated for 14 s: the remaining two elect a leader 8.5 s (9.0 worst) after the cut over the
    zk-leader-isolation catalogue rows, and a heal before that leaves no failover to measure."""
    v, events, d = run(tmp_path, version, "zk",
                       '[[faults]]\nat_s = 2\nduration_s = 14\nkind = "isolate"\ntarget = "zookeeper"\n',
                       duration_s=18)
    # No server dialled a peer at the peer's own IP, which only Toxiproxy reaches here (the JDK prints an
    # address made from an IP as "/IP:port", one made from a name as "name/IP:port"): an ensemble whose
    # peers did so stayed without a leader for minutes after a cut (settings.zookeeper_config).
    dialled_back = [line for k in (1, 2, 3) for line in (d / "logs" / f"zookeeper-{k}.log").read_text().splitlines()
                    if re.search(r"Cannot open channel to \d+ at election address /\d", line)]
    assert not dialled_back, dialled_back[:3]
    (fault,) = [e for e in events if e["type"] == "fault"]
    (node,) = fault["nodes"]
    k = int(node.split("-")[1])
    # cut from both peers (quorum and election ports, both ways) and from every broker
    assert {f"zq-{k}-{j}" for j in (1, 2, 3) if j != k} <= set(fault["links"])
    assert {f"zk-{b}-{k}" for b in (1, 2, 3)} <= set(fault["links"])
    (f,) = v.coordination.failovers
    assert f.layer == "zookeeper" and f.leader_before == 200 + k
    assert f.new_leader in (201, 202, 203) and f.new_leader != 200 + k, f
    assert durable(v), v.anomalies


# Long tier: over a minute each; the default suite keeps the KRaft controller's failover above.
@pytest.mark.chaos_long
@pytest.mark.parametrize(("version", "mode"), [("4.1.2", "kraft"), ("3.9.1", "zk")])
def test_without_a_quorum_majority_metadata_freezes_but_a_full_isr_keeps_taking_writes(tmp_path, version, mode):
    v, events, d = run(tmp_path, version, mode,
                       '[[faults]]\nat_s = 2\nduration_s = 7\nkind = "pause"\ntarget = "quorum_majority"\n'
                       '[[faults]]\nat_s = 5\nduration_s = 3\nkind = "pause"\ntarget = "follower"\n')
    fault, follower = sorted((e for e in events if e["type"] == "fault"), key=lambda e: e["start_ms"])
    assert len(fault["nodes"]) == 2 and fault["quorum_before"]["leader"] not in fault["brokers"], \
        "followers first: the leader is left alone"
    assert follower["nodes"][0].startswith("kafka-"), "a partition's follower is found while the quorum is gone"
    assert not [e for e in events if e["type"] == "fault_skipped"]
    if mode == "zk":  # ZooKeeper is the partition state's source: while it cannot answer, its last state stands
        assert any(e.get("frozen") for e in events if e["type"] == "state")
    (f,) = v.coordination.failovers
    assert f.no_majority_ms > 3000 and f.no_leader_ms > 0, f
    # brokers go on serving what they lead: records are acknowledged while the quorum is gone
    acked = [r["ack_ts_ms"] for r in pq.read_table(d / "produced.parquet").to_pylist() if r["status"] == "ok"]
    lost_at = min(w["start_ms"] for w in v.coordination.no_majority)
    assert sum(lost_at < t < fault["end_ms"] for t in acked) > 100
    assert durable(v), v.anomalies


@pytest.mark.chaos_long  # two voter changes, each a tool's JVM in a container: over a minute
def test_the_active_controller_removed_from_the_voters_is_added_back_and_a_spare_joins(tmp_path):
    v, events, _ = run(tmp_path, "3.9.1", "kraft",
                       '[[faults]]\nat_s = 2\nduration_s = 4\nkind = "remove_controller"\ntarget = "controller"\n'
                       '[[faults]]\nat_s = 10\nduration_s = 3\nkind = "add_controller"\ntarget = "controller:4"\n',
                       duration_s=15)
    # The removal's heal (adding the controller back, a tool's JVM in its container) takes seconds on a
    # loaded machine; KRaft takes one voter change at a time, so the spare joins 4 s after that heal.
    faults = [e for e in events if e["type"] == "fault"]
    assert len(faults) == 2, [e for e in events if e["type"] in ("fault", "fault_skipped")]
    removal, addition = faults
    removed = removal["brokers"][0]
    voters = [tuple(q["voters"]) for q in quorum_samples(events) if q["leader"] >= 0]
    shrunk = tuple(n for n in (101, 102, 103) if n != removed)
    assert shrunk in voters, "the voter set lost the removed controller"
    assert (101, 102, 103, 104) in voters, "the spare joined the voters"
    assert voters[-1] == (101, 102, 103), "and each change was undone at its heal"
    assert addition["nodes"] == ["controller-4"]
    first = v.coordination.failovers[0]
    assert first.new_leader is not None and first.new_leader != removed, "the removed leader resigned"
    assert durable(v), v.anomalies


@pytest.mark.chaos_long
def test_every_fault_kind_for_nodes_acts_on_a_controller_and_heals(tmp_path):
    """Each kind that acts on coordination nodes, on controller 2 of a live quorum: it hits that
    node's links or process alone, and after its heal the quorum has its three voters in touch."""
    from harness.cluster import ClusterSettings, KafkaCluster
    from harness.faults import FAULTS, PlannedFault
    from harness.history.events import EventLog
    from harness.run.nemesis import Nemesis
    from harness.setup import cluster_images
    from harness.waiting import until

    require_docker(["3.9.1"])
    kinds = [k for k, f in FAULTS.items() if f.on_nodes and not f.quorum_change and f.on_client is None
             and not f.client_links]
    assert {"kill", "power_loss", "pause", "restart", "isolate", "cut_coordination", "latency"} <= set(kinds)
    with KafkaCluster(ClusterSettings(kafka_version="3.9.1", mode="kraft"), cluster_images("3.9.1")) as c:
        c.create_topic("t", partitions=1, replication_factor=3)
        events = EventLog(tmp_path / "events.jsonl")
        nem = Nemesis(c, "t", events)
        for kind in kinds:
            a = nem.apply(PlannedFault(at_s=0, duration_s=1, kind=kind, target="controller:2",
                                       latency_ms=100, rate_kbps=64))
            assert a.brokers == [102], kind
            assert set(a.links) <= set(c.topo.isolation_links(102)), (kind, a.links)
            nem.heal(a)
            until(lambda: (q := c.quorum_state()).majority and len(q.voters) == 3
                  and all(n.lag is not None for n in q.nodes), 60, f"quorum back after {kind}")
        events.close()


@pytest.mark.chaos_long  # a KRaft cluster of its own; the default tier fails over the active controller above
@pytest.mark.parametrize("after", [
    "registering",
    # at its election (KRaft's bootstrap records), the path a hunt's formation draws took first
    pytest.param("elected", marks=pytest.mark.chaos_long),
])
def test_the_first_active_controller_killed_while_the_cluster_forms_is_replaced_and_it_forms(tmp_path, after):
    """[cluster.formation]: the quorum's first leader killed once the first broker registered (or as
    soon as it is elected) and started again 3 s later: another controller is elected in a later
    epoch, every broker registers, the run's history says so and its coverage counts it."""
    v, events, _ = run(tmp_path, "3.9.1", "kraft", f'[cluster.formation]\nkind = "kill"\nafter = "{after}"\n'
                       'delay_s = 0.2\nduration_s = 3\n', duration_s=6)
    (formed,) = [e for e in events if e["type"] == "formation"]
    assert formed["kind"] == "kill" and formed["after"] == after and formed["leader"] in (101, 102, 103), formed
    assert (formed["brokers_serving"] >= 1) == (after == "registering"), formed
    assert formed["heal_ms"] - formed["ts_ms"] >= 3000 and formed["formed_ms"] >= formed["heal_ms"], formed
    assert formed["epoch_after"] > formed["epoch"] and formed["leader_after"] in (101, 102, 103), formed
    assert v.coverage["formation_leader_lost"] == 1
    assert durable(v), v.anomalies
