"""Controller failovers and quorum spans from state samples the tests build: no Docker."""

from __future__ import annotations

import json

from harness.checker import coordination
from harness.history.events import from_dicts


def sample(ts: int, controller: int, leader: int | None = None, majority: bool = True) -> dict:
    q = {"leader": controller if leader is None else leader, "epoch": 1, "voters": [101, 102, 103],
         "majority": majority, "nodes": []}
    return {"type": "state", "ts_ms": ts, "controller": controller, "brokers": [1, 2, 3], "partitions": [],
            "quorum": q}


def fault(target: str, nodes: list[str], start: int, end: int, **before) -> dict:
    return {"type": "fault", "name": f"kill {target}", "kind": "kill", "target": target, "nodes": nodes,
            "brokers": [], "start_ms": start, "end_ms": end, **before}


def test_spans_join_consecutive_samples_and_clip_to_the_window():
    points = [(0, False), (100, True), (200, True), (300, False), (400, True)]
    assert coordination.spans(points, 150, 450) == [
        {"start_ms": 150, "end_ms": 300, "duration_ms": 150}, {"start_ms": 400, "end_ms": 450, "duration_ms": 50}]


def test_killing_the_active_controller_is_a_failover_timed_from_the_faults_start():
    events = [sample(0, 101), sample(900, 101), sample(1200, -1, majority=False), sample(3000, -1, majority=True),
              sample(3400, 102), sample(9000, 102),
              fault("controller", ["controller-1"], 1000, 6000, controller_before=101)]
    (f,) = coordination.failovers(from_dicts(events), [{"start_ms": 1000, "outage_ms": 2500, "recovery_ms": 2600}])
    assert (f["layer"], f["leader_before"], f["new_leader"], f["failover_ms"]) == ("controller", 101, 102, 2400)
    assert f["no_leader_ms"] == 3400 - 1200 and f["no_majority_ms"] == 3000 - 1200
    assert (f["outage_ms"], f["recovery_ms"]) == (2500, 2600)


def test_a_fault_that_spares_the_leader_has_no_failover():
    events = [sample(0, 101), sample(2000, 101), sample(8000, 101),
              fault("controller:2", ["controller-2"], 1000, 4000, controller_before=101)]
    (f,) = coordination.failovers(from_dicts(events), [])
    assert (f["new_leader"], f["failover_ms"], f["no_leader_ms"]) == (None, None, 0)


def test_a_zookeeper_fault_is_judged_by_the_ensembles_leader_not_kafkas_controller():
    events = [sample(0, 2, leader=203), sample(1500, 2, leader=-1), sample(2500, 2, leader=201),
              sample(5000, 2, leader=201),
              fault("zookeeper", ["zookeeper-3"], 1000, 4000, controller_before=2,
                    quorum_before={"leader": 203, "epoch": 1, "voters": [201, 202, 203], "majority": True})]
    (f,) = coordination.failovers(from_dicts(events), [])
    assert (f["layer"], f["leader_before"], f["new_leader"], f["failover_ms"]) == ("zookeeper", 203, 201, 1500)
    assert f["no_leader_ms"] == 1000


def test_only_faults_on_the_coordination_layer_count_and_the_run_keeps_its_quorum_spans():
    events = [sample(0, 101), sample(1000, 101, majority=False), sample(2000, -1, majority=False),
              sample(4000, 102), {"type": "fault", "kind": "kill", "target": "leader", "start_ms": 500,
                                  "end_ms": 900}]
    assert coordination.failovers(from_dicts(events), []) == []
    spans = coordination.quorum_spans(from_dicts(events))
    assert spans["no_majority"] == [{"start_ms": 1000, "end_ms": 4000, "duration_ms": 3000}]
    assert spans["no_leader"] == [{"start_ms": 2000, "end_ms": 4000, "duration_ms": 2000}]
    assert coordination.quorum_spans(from_dicts([{"type": "state", "ts_ms": 1, "partitions": []}])) == {
        "no_leader": [], "no_majority": []}


class _BrokersSilent:
    """A cluster whose brokers do not answer the sampler's metadata request while its quorum does."""

    def __init__(self, mode: str):
        from types import SimpleNamespace
        self.settings = SimpleNamespace(mode=mode)

    def describe(self, *a, **k):
        raise TimeoutError("metadata request timed out")

    def quorum_state(self, timeout_s: float):
        from harness.cluster.quorum import QuorumState
        return QuorumState(103, 4, (101, 102, 103), (), True)


def test_a_sample_the_brokers_did_not_answer_still_names_kraft_s_controller(tmp_path):
    """KRaft's active controller is its quorum's leader: a failover is timed from the controllers'
    answers even while the brokers' metadata times out. ZooKeeper mode's controller is a broker, so
    there the sample leaves it unnamed."""
    from harness.history.events import EventLog
    from harness.run.nemesis import StateSampler
    for mode, controller in (("kraft", 103), ("zookeeper", None)):
        log = EventLog(tmp_path / f"{mode}.jsonl")
        sampler = StateSampler(_BrokersSilent(mode), "t", log, interval_s=0.01)
        sampler.start()
        sampler.stop_event.wait(0.1)
        sampler.stop_event.set()
        sampler.join()
        log.close()
        first = json.loads((tmp_path / f"{mode}.jsonl").read_text().splitlines()[0])
        assert first["error"] and first["quorum"]["leader"] == 103 and first.get("controller") == controller
