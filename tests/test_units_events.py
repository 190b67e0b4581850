"""events.jsonl's record types: written typed, read back validated, bad lines refused with the file
and line, before any check starts (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.history import HistoryError, events, read_events
from harness.history.events import (
    CommitRefused,
    EpochsDriven,
    EventLog,
    Fault,
    FaultSkipped,
    FaultStart,
    Formation,
    IsrNotRestored,
    Note,
    Rebalance,
    State,
    ToolFailed,
    TriggerFired,
    TriggerUnfired,
    WorkloadEnd,
    WorkloadStart,
)
from tests.histories import History

ONE_OF_EACH = [
    WorkloadStart(ts_ms=1),
    State(ts_ms=2, controller=1, brokers=[1, 2, 3],
          partitions=[{"partition": 0, "leader": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3]}],
          quorum={"leader": 101, "epoch": 3, "voters": [101, 102, 103], "majority": True,
                  "nodes": [{"node": 101, "reachable": True, "role": "leader", "lag": 0}]}),
    State(ts_ms=3, error="brokers did not answer"),
    FaultStart(ts_ms=4, kind="kill", target="leader", brokers=[1], nodes=["kafka-1"], tag="f1", leader_before=1),
    TriggerFired(ts_ms=5, fault=1, kind="kill", target="follower", on="isr_shrink partition=0", observed="isr [1]"),
    Fault(kind="power_loss", target="leader", partition=0, brokers=[1], start_ms=4, end_ms=9, tag="f1",
          power_loss={"1": [{"file": "t-0/00.log", "kept_until": 100, "removed": False}]}),
    FaultSkipped(ts_ms=6, kind="kill", target="leader", reason="partition 0 has no leader"),
    TriggerUnfired(ts_ms=7, fault=2, kind="kill", target="leader", on="hw offset=9", armed_at_s=1),
    Note(ts_ms=8, msg="group g had not committed to the end of every partition"),
    EpochsDriven(ts_ms=8, transactional_id="kchaos-t", producer_id=1000, epoch=32700, requests=32701, seconds=95.5),
    Formation(ts_ms=8, kind="kill", leader=101, epoch=1, elected_after_s=3.9, delay_s=0.2, duration_s=3.0,
              heal_ms=3008, leader_after=102, epoch_after=2, formed_ms=9000),
    ToolFailed(ts_ms=8, tool="kafka-dump-log", node="kafka-1", error="exit 1", lacks="the coordinator's log"),
    IsrNotRestored(ts_ms=8, topic="t", waited_s=120, why="topic t did not reach a full ISR",
                   partitions=[{"partition": 0, "leader": 3, "replicas": [3, 1, 2], "isr": [3, 2]}]),
    Rebalance(ts_ms=9, group="g", consumer="g-1", kind="assign", partitions=[0, 1], generation=1),
    CommitRefused(ts_ms=10, group="g", consumer="g-1", error="ILLEGAL_GENERATION", generation=1),
    WorkloadEnd(ts_ms=11),
]


def test_every_record_type_round_trips(tmp_path):
    assert {type(e) for e in ONE_OF_EACH} == set(events.RECORD_TYPES)
    log = EventLog(tmp_path / events.EVENTS)
    for e in ONE_OF_EACH:
        log.write(e)
    log.close()
    back = read_events(tmp_path)
    assert back == ONE_OF_EACH, "read back typed, each record equal to the one written"
    lines = (tmp_path / events.EVENTS).read_text().splitlines()
    assert json.loads(lines[0]) == {"type": "workload_start", "ts_ms": 1}, "defaults that were not set are left out"
    assert json.loads(lines[2]) == {"type": "state", "ts_ms": 3, "error": "brokers did not answer"}
    assert back[1].quorum.nodes[0].lag == 0 and back[5].power_loss["1"][0].kept_until == 100


BAD_LINES = {
    "not json": ('{"type": "note", "ts_ms": 1, "msg": "x"', r"events\.jsonl:2: not a JSON object"),
    "unknown type": ('{"type": "fualt", "ts_ms": 1}', r"events\.jsonl:2: type 'fualt' is not an event type "
                                                       r"\(allowed: workload_start, .*commit_refused\)"),
    "no type": ('{"ts_ms": 1}', r"events\.jsonl:2: type None is not an event type"),
    "wrong shape": ('{"type": "fault", "kind": "kill", "target": "leader", "start_ms": "soon", "end_ms": 2}',
                    r"events\.jsonl:2: fault record: key 'start_ms': Input should be a valid integer"),
    "missing key": ('{"type": "rebalance", "ts_ms": 1, "group": "g", "consumer": "g-1", "partitions": [0], '
                    '"generation": 1}', r"events\.jsonl:2: rebalance record: key 'kind': Field required"),
}


def _with_line(tmp_path, line: str):
    d = History().clean(3).write(tmp_path / "run")
    good = json.dumps({"type": "workload_start", "ts_ms": 1})
    (d / events.EVENTS).write_text(f"{good}\n{line}\n{good}\n")
    return d


@pytest.mark.parametrize("how", list(BAD_LINES))
def test_a_bad_line_names_the_file_and_line(tmp_path, how):
    line, message = BAD_LINES[how]
    with pytest.raises(HistoryError, match=message):
        read_events(_with_line(tmp_path, line))


def _check(*paths):
    return subprocess.run([sys.executable, "-m", "harness", "check", *map(str, paths)], capture_output=True,
                          text=True, timeout=120)


def test_check_exits_2_on_a_bad_events_line_before_any_work(tmp_path):
    d = _with_line(tmp_path, BAD_LINES["unknown type"][0])
    r = _check(d)
    assert r.returncode == 2 and "events.jsonl:2: type 'fualt'" in r.stderr, r.stderr
    assert not (d / "verdict.json").exists()


def test_check_exits_2_on_a_run_json_key_of_another_shape(tmp_path):
    h = History().clean(3)
    h.run["topics"] = {"name": "t", "partitions": 3}
    d = h.write(tmp_path / "run")
    r = _check(d)
    assert r.returncode == 2 and "run.json: key 'topics': Input should be a valid list" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_fault_that_never_acted_makes_the_run_not_exercised():
    """A trigger that never fired and a fault the nemesis could not apply both leave the run short
    of what it was for; a fault that started and healed does not."""
    from harness.checker.judge import not_exercised

    applied = [e for e in ONE_OF_EACH if isinstance(e, (FaultStart, Fault, TriggerFired))]
    assert not_exercised(applied) == []
    said = not_exercised(ONE_OF_EACH)
    assert said == ["fault 2 (kill leader) on hw offset=9", "kill leader not applied: partition 0 has no leader"]
    skipped_only = [e for e in ONE_OF_EACH if not isinstance(e, TriggerUnfired)]
    assert not_exercised(skipped_only) == ["kill leader not applied: partition 0 has no leader"]


def test_what_the_run_says_it_could_not_do_is_among_what_the_verdict_assumes_or_lacks():
    """A run's notes (a group that had not committed to the end, a broker the heal started again)
    were written to events.jsonl and shown nowhere: the verdict now lists them after what it assumes
    where run.json is silent and what it lacks where a tool failed, in the events' order."""
    from harness.checker.judge import RunConfigs, assumptions
    from harness.history.events import Note, ToolFailed

    cfgs = RunConfigs(topics={}, producers={}, producer_topic={}, notes=["producer p is not in run.json"])
    events = [Note(ts_ms=1, msg="kafka-2 exited while it started"),
              ToolFailed(ts_ms=2, tool="kafka-dump-log", node="kafka-1", error="exit 1", lacks="the coordinator's log"),
              Note(ts_ms=3, msg="group g had not committed")]
    assert assumptions(cfgs, events) == [
        "producer p is not in run.json",
        "kafka-dump-log failed on kafka-1: the run lacks the coordinator's log (exit 1)",
        "the run: kafka-2 exited while it started",
        "the run: group g had not committed"]
    assert assumptions(cfgs, []) == ["producer p is not in run.json"]
