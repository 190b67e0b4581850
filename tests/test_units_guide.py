"""The hunt's guidance on data the tests build: precursors read from a run's broker logs and
history (a replica that dropped acknowledged records), swarm draws, and mutations that aim the next
fault at a precursor; and the loop building on a run that came close. What Kafka does under the
schedules is tested against real Kafka in tests/test_hunt.py."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness import history
from harness.checker import verdict as verdict_mod
from harness.checker.verdict import Verdict
from harness.faults import FAULTS, HOLDS_FETCHES, SILENCES_ITS_BROKER, TAKES_THE_LEADER
from harness.hunt import guide, precursors
from harness.hunt.loop import hunt
from harness.hunt.precursors import Precursor, Truncation
from harness.hunt.space import session_s, vocabulary
from harness.scenario import Scenario
from tests.test_units_hunt import fake_run, options, scenario

START_MS = 1_790_000_000_000  # 2026-09-21 20:53:20 UTC


def stamp(ms: int) -> str:
    from datetime import UTC, datetime

    t = datetime.fromtimestamp(ms / 1000, UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{ms % 1000:03d}"


def produced(rows: list[tuple[str, int, str, int | None, int | None]]) -> dict[str, list]:
    """(topic, partition, status, offset, ack_ts_ms) rows as the history's columns."""
    cols = ["topic", "partition", "status", "offset", "ack_ts_ms"]
    return {c: [r[i] for r in rows] for i, c in enumerate(cols)}


# ---------------------------------------------------------------- precursors

def test_truncations_are_read_per_broker_for_the_runs_topic_only(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    t = stamp(START_MS + 5_000)
    (logs / "kafka-2.log").write_text("\n".join([
        f"[{t}] INFO [Log partition=chaos-5-0, dir=/var/lib/kafka/data] Truncating to offset 120 (kafka.log.Log)",
        f"[{t}] INFO [Log partition=chaos-50-0, dir=/var/lib/kafka/data] Truncating to offset 7 (kafka.log.Log)",
        f"[{t}] INFO [Log partition=chaos-5-1, dir=/var/lib/kafka/data] Truncating to 99 has no effect as the "
        "largest offset in the log is 98 (kafka.log.Log)",
    ]))
    (logs / "kafka-3.log").write_text(
        f"[{t}] INFO [UnifiedLog partition=chaos-5-2, dir=/var/lib/kafka/data] Truncating to offset 4 "
        "(kafka.log.UnifiedLog)\n")
    (logs / "zookeeper-1.log").write_text(
        f"[{t}] INFO [Log partition=chaos-5-0, dir=/x] Truncating to offset 1 (kafka.log.Log)\n")
    assert precursors.truncations(tmp_path, "chaos-5") == [
        Truncation(2, "chaos-5", 0, 120, START_MS + 5_000), Truncation(3, "chaos-5", 2, 4, START_MS + 5_000)]


def test_a_precursor_is_a_truncation_that_removed_an_acknowledged_record():
    cut = Truncation(2, "t", 0, 100, START_MS + 5_000)
    rows = produced([
        ("t", 0, "ok", 99, START_MS + 1_000),     # below the cut: kept
        ("t", 0, "ok", 100, START_MS + 4_900),    # acknowledged, then dropped: counts
        ("t", 0, "ok", 101, START_MS + 5_000),    # acknowledged at the same millisecond: counts
        ("t", 0, "ok", 102, START_MS + 5_001),    # acknowledged after: the replica may have it again
        ("t", 1, "ok", 150, START_MS + 1_000),    # another partition
        ("u", 0, "ok", 150, START_MS + 1_000),    # another topic
        ("t", 0, "error", None, None),            # never acknowledged
    ])
    assert precursors.acknowledged_truncated(rows, [cut], START_MS) == [Precursor(2, 0, 5.0, 2)]
    unacknowledged = produced([("t", 0, "ok", 100, START_MS + 6_000)])
    assert precursors.acknowledged_truncated(unacknowledged, [cut], START_MS) == [], "acks=1's own suffix"


def test_a_run_without_broker_logs_has_no_precursor(tmp_path):
    assert precursors.read(tmp_path, "chaos") == []


# ---------------------------------------------------------------- swarm and mutations

def test_swarm_draws_take_a_subset_of_the_kinds_and_never_none():
    moves = vocabulary(scenario())
    kinds = {m.kind for m in moves}
    subsets = [{m.kind for m in guide.swarm(random.Random(i), moves)} for i in range(60)]
    assert all(s and s <= kinds for s in subsets)
    assert any(len(s) < len(kinds) / 2 for s in subsets) and len({frozenset(s) for s in subsets}) > 30


def test_with_an_empty_corpus_every_draw_is_fresh_and_seeded():
    s, moves = scenario(), vocabulary(scenario())
    a, origin = guide.next_schedule(s, random.Random("1/x/3"), moves, guide.Corpus())
    b, _ = guide.next_schedule(s, random.Random("1/x/3"), moves, guide.Corpus())
    assert a == b and a.generator is None and origin == "swarm draw"


def test_a_mutation_aims_one_or_two_faults_more_at_the_precursor():
    s = scenario(duration_s=30)
    parent = Scenario.model_validate({**s.model_dump(mode="json"), "faults": [
        {"at_s": 4, "duration_s": 6, "kind": "restart", "target": "follower:2"}]})
    p = Precursor(broker=2, partition=0, at_s=9.0, acknowledged=12)
    moves = vocabulary(s)
    children = [guide.mutate(parent, p, random.Random(i), moves) for i in range(60)]
    assert all(c is not None and c.faults[0] == parent.faults[0] for c in children)
    alone = [c.faults[1] for c in children if len(c.faults) == 2]
    both = [c.faults[1:] for c in children if len(c.faults) == 3]
    assert len(alone) + len(both) == len(children) and alone and both
    held = [f for f in alone if HOLDS_FETCHES in FAULTS[f.kind].effects]
    taken = [f for f in alone if TAKES_THE_LEADER in FAULTS[f.kind].effects]
    assert held and taken and len(held) + len(taken) == len(alone)
    assert all(str(f.target) == "broker:2" and 1.0 <= f.at_s <= 8.5 for f in held), "from before it truncated"
    assert all(str(f.target) == "leader" and 9.2 <= f.at_s <= 11.5 and f.on is None for f in taken), "right after"
    for hold, take in both:
        assert hold.kind == "cut_fetch" and str(hold.target) == "broker:2" and 7.0 <= hold.at_s <= 8.5, \
            "a cut, from shortly before it truncated"
        assert 10.0 <= hold.duration_s <= 15.0, "outlasting a session's expiry after a kill or a cut"
        assert TAKES_THE_LEADER in FAULTS[take.kind].effects and str(take.target) == "leader"
        assert take.on is not None and (take.on.event, take.on.broker) == ("truncation", 2), \
            "the leader taken on the held replica's own truncation, whenever the hold lets it come"
        assert take.at_s == hold.at_s and 0.1 <= take.on.delay_s <= 1.0
    assert all(f.at_s + f.duration_s <= c.duration_s - 3.0 + 1e-9 for c in children for f in c.faults[1:]), \
        "healed before the workload ends"
    takes = taken + [take for _, take in both]
    assert not [f for f in takes if f.kind == "elect_preferred"], "an operator's election may leave the leader leading"
    session = session_s(s)
    silences = [f for f in takes if SILENCES_ITS_BROKER in FAULTS[f.kind].effects]
    assert silences and all(f.duration_s >= session + 1.0 and f.stream != "downstream" for f in silences), \
        "a freeze or a cut shorter than the broker's session leaves it leading"


def test_a_fault_on_a_truncation_fits_within_the_hold_and_its_own_length():
    """The workload outlasts the hold, the trigger's delay and the taken leader's fault."""
    hold = {"at_s": 5.0, "duration_s": 10.0, "kind": "cut_fetch"}
    take = {"at_s": 5.0, "duration_s": 4.0, "kind": "kill", "on": {"event": "truncation", "delay_s": 1.5}}
    assert guide._ends([hold, take]) == 5.0 + 10.0 + 1.5 + 4.0
    assert guide._ends([hold]) == 15.0


def test_a_precursor_near_the_workloads_end_lengthens_it_to_fit_the_fault():
    s = scenario(duration_s=26)
    late = Precursor(broker=2, partition=0, at_s=22.0, acknowledged=3000)
    moves = [m for m in vocabulary(s) if TAKES_THE_LEADER in FAULTS[m.kind].effects]
    child = guide.mutate(s, late, random.Random(3), moves)
    assert child is not None and child.faults[-1].at_s >= 22.2
    assert 26 < child.duration_s <= 26 + guide.LONGER_S
    assert child.faults[-1].at_s + child.faults[-1].duration_s + 3.0 <= child.duration_s + 1e-9


def test_a_mutation_that_does_not_fit_the_workload_falls_back_to_a_fresh_draw():
    s = scenario(duration_s=12)
    late = Precursor(broker=1, partition=0, at_s=18.6, acknowledged=3)  # past 12 + 10 - 3 - 0.5
    moves = [m for m in vocabulary(s) if TAKES_THE_LEADER in FAULTS[m.kind].effects]
    assert guide.mutate(s, late, random.Random(1), moves) is None
    corpus = guide.Corpus()
    corpus.add("h0001", s, [late])
    assert guide.next_schedule(s, random.Random(1), moves, corpus) is not None


# ---------------------------------------------------------------- the loop builds on what came close

def test_a_run_that_came_close_is_built_on(tmp_path):
    """Kafka's stand-in: every run's broker 2 drops acknowledged records at 5 s; a schedule that holds
    broker 2's fetches and then takes the leader away loses them. The hunt gets there by mutating."""
    calls: list[str] = []

    def go(path: Path, s: Scenario, reuse: bool) -> Verdict:
        calls.append(path.name)
        held = any(HOLDS_FETCHES in FAULTS[f.kind].effects and str(f.target) == "broker:2" for f in s.faults)
        taken = any(TAKES_THE_LEADER in FAULTS[f.kind].effects and str(f.target) == "leader" and f.at_s >= 5
                    for f in s.faults)
        fake_run(path, s, {"lost": 9} if held and taken else {})
        came_close(path, s.topic.name)
        return verdict_mod.read(path)

    sets = ('hunt.kinds=["kill", "cut_fetch", "latency"]', "hunt.targets=[\"random\"]", "hunt.faults=[1, 1]",
            "hunt.triggers=0", "duration_s=20")
    lines: list[str] = []
    out = hunt(options(tmp_path, sets=sets, runs=30, confirm=1, shrink_runs=2), announce=lines.append, go=go)
    assert any("precursor: broker 2 dropped 3 acknowledged records of partition 0 at 5 s" in m for m in lines)
    assert out.exit_code == 1, "found only by building on the precursor: the targets drawn never name broker 2"
    assert any(": built on h0" in m and "broker 2 dropped acknowledged records at 5 s" in m for m in lines)
    minimal = out.findings[0].minimal
    assert {(f.kind, str(f.target)) for f in minimal.faults} >= {("cut_fetch", "broker:2")}


def came_close(path: Path, topic: str) -> None:
    """Broker 2's log says it truncated ``topic``'s partition 0 to offset 10 at 5 s into the workload,
    after the producer had been told offsets 10 to 12 were written."""
    run = json.loads((path / history.RUN_JSON).read_text())
    run["workload"] = {"start_ms": START_MS, "end_ms": START_MS + 20_000, "duration_s": 20}
    (path / history.RUN_JSON).write_text(json.dumps(run))
    (path / "logs").mkdir(exist_ok=True)
    (path / "logs" / "kafka-2.log").write_text(
        f"[{stamp(START_MS + 5_000)}] INFO [Log partition={topic}-0, dir=/d] Truncating to offset 10 (k.Log)\n")
    kept = pq.read_table(path / history.PRODUCED)
    rows = [{"value": f"v-{o}", "producer": "p0", "seq": o, "topic": topic, "partition": 0, "acks": "all",
             "status": "ok", "offset": o, "send_ts_ms": START_MS, "ack_ts_ms": START_MS + 4_000, "error": None}
            for o in range(8, 13)]
    pq.write_table(pa.concat_tables([kept, pa.Table.from_pylist(rows, kept.schema)]), path / history.PRODUCED)


# ---------------------------------------------------------------- following the brokers' logs live

class _Container:
    """A broker container's log as the engine streams it: timestamped lines; ``stops_after`` lines
    end the stream (the broker stopped) and it runs again on the next look."""

    def __init__(self, lines: list[tuple[float, str]], stops_after: int):
        self.lines, self.stops_after, self.status, self.opened = lines, stops_after, "running", []

    def reload(self) -> None:
        self.status = "running"

    def logs(self, stream, follow, timestamps, since):
        from datetime import UTC, datetime

        self.opened.append(since)
        sent = 0
        for at, text in self.lines:
            if at < since:
                continue
            stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
            yield f"{stamp} {text}\n".encode()
            sent += 1
            if len(self.opened) == 1 and sent == self.stops_after:
                self.status = "exited"
                return
        import time
        while True:  # following: nothing more is written
            time.sleep(0.01)
            yield b""


def test_the_follower_keeps_truncations_written_after_it_started_across_a_restart():
    import time

    from harness.cluster.broker_log import TruncationFollower

    now = time.time()
    line = "[2026-11-26 10:00:0{},000] INFO [Log partition=chaos-0, dir=/d] Truncating to offset {} (kafka.log.Log)"
    c = _Container([(now - 5, line.format(1, 3)), (now + 0.1, line.format(2, 7)), (now + 0.2, "other"),
                    (now + 0.3, line.format(3, 9))], stops_after=2)
    f = TruncationFollower({2: c})
    deadline = time.time() + 5
    while len(f.seen()) < 2 and time.time() < deadline:
        time.sleep(0.01)
    f.close()
    assert [(t.broker, t.offset) for t in f.seen()] == [(2, 7), (2, 9)], "not the line from before, none twice"
    assert len(c.opened) == 2 and c.opened[1] > c.opened[0], "opened again from the last line read"


def test_a_precursors_leader_is_taken_by_failing_its_broker_an_operators_decommission_too():
    """A preferred election leaves a leader that is the preferred replica leading, so it is no step
    meant to take that leader away; a decommission shuts the broker down, so it is one."""
    from harness.faults import Target
    from harness.hunt.space import Move

    every = [Move(kind, Target.parse("leader")) for kind in FAULTS]
    takers = guide.leader_takers(every)
    assert "elect_preferred" not in takers and {"kill", "restart", "pause", "decommission"} <= set(takers)
    assert all(TAKES_THE_LEADER in FAULTS[k].effects for k in takers)
