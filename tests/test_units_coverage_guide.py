"""Coverage-guided draws (harness/hunt/coverage_guide.py) on data the tests build: a run's features,
the corpus and its energy, the mutations, and a hunt guided by coverage with a rule standing in for
Kafka: seeded, resumable, and told apart from the other guides. Whether it finds Kafka's known
answers sooner than swarm draws is measured on real Kafka (benchmarks/hunt_guides.py)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checker import verdict as verdict_mod
from harness.checker.verdict import FaultExposure, Verdict
from harness.hunt.coverage_guide import CoverageCorpus, aimed_moves, bucket, features, mutate, next_schedule
from harness.hunt.goal import Goal
from harness.hunt.loop import HuntOptions, hunt
from harness.hunt.space import bounds, draw, vocabulary
from harness.hunt.trials import HuntError
from harness.scenario import Scenario
from harness.scenario import loading as scenario_mod
from tests.test_units_hunt import SCENARIOS, fake_run, scenario, verdict


def reached(coverage: dict[str, int], exposure: list[FaultExposure] = (), **counts: int) -> Verdict:
    return verdict(counts).model_copy(update={"coverage": coverage, "exposure": list(exposure)})


def test_counts_fall_in_afls_buckets():
    assert [bucket(n) for n in (1, 2, 3, 4, 7, 8, 15, 16, 900)] == [1, 2, 3, 4, 4, 8, 8, 16, 16]


def test_a_runs_features_are_its_states_exposure_and_anomalies_bucketed():
    v = reached({"leader_change": 5, "isr_leader_alone": 1, "partition_offline": 0},
                [FaultExposure(fault=0, kind="kill", start_ms=1, exposed=40, lost=3),
                 FaultExposure(fault=1, kind="kill", start_ms=2, exposed=2),
                 FaultExposure(fault=2, kind="pause", start_ms=3, exposed=0)], lost=3)
    assert features(v) == {"state:leader_change:4", "state:isr_leader_alone:1", "exposed:kill:16", "lost:kill:3",
                           "anomaly:lost"}


def test_a_run_joins_the_corpus_only_with_something_no_earlier_run_reached():
    c = CoverageCorpus()
    s = scenario()
    assert c.look("a", s, reached({"leader_change": 1})) == {"state:leader_change:1"}
    assert c.look("b", s, reached({"leader_change": 1})) == frozenset(), "the same states again"
    assert c.look("c", s, None) == frozenset(), "a run that could not be checked brings nothing"
    assert c.look("d", s, reached({"leader_change": 2})) == {"state:leader_change:2"}, "reached more often"
    assert [e.name for e in c.entries] == ["a", "d"] and c.history == [1, 1, 1, 2]


def test_a_parent_whose_children_pay_off_gets_more_energy_and_picks_spend_it():
    c = CoverageCorpus()
    s = scenario()
    c.look("a", s, reached({"leader_change": 1}))
    c.look("b", s, reached({"isr_leader_alone": 1}))
    c.parents["child"] = "a"
    c.look("child", s, reached({"partition_offline": 1, "below_min_insync": 1}))
    a, b, _child = c.entries
    assert (a.energy, b.energy) == (3, 1), "one state of its own, two its child reached"
    rng = random.Random(1)
    picks = [c.pick(rng).name for _ in range(60)]
    assert picks.count("a") > picks.count("b"), "the entry that paid off is picked more"
    assert a.energy < 3, "each pick spends energy"


def test_an_entry_that_reached_a_state_on_the_goals_way_is_picked_more_than_one_as_new_that_did_not():
    """A hunt for lost records weights the schedule that changed a leader (every loss kchaos knows
    passes through one) above one that only took an operator's action, each new in one state."""
    c = CoverageCorpus(on_the_way=Goal.parse("lost").on_the_way)
    s = scenario()
    c.look("led", s, reached({"leader_change": 1}))
    c.look("operated", s, reached({"operator_action": 1}))
    led, operated = c.entries
    assert led.energy == operated.energy == 1
    assert c.weight(led) == 3 * c.weight(operated)
    assert CoverageCorpus().weight(led) == CoverageCorpus().weight(operated), "no goal: energy alone"
    picks = [c.pick(random.Random(i)).name for i in range(200)]
    assert picks.count("led") > 1.5 * picks.count("operated"), "picks spend energy, so less than 3 to 1 over many"


def test_every_state_on_a_goals_way_is_a_coverage_state_and_every_goal_class_exists():
    from harness.checker.anomaly import ANOMALIES
    from harness.checker.coverage import DEFINITIONS
    from harness.checker.verdict import NOT_HEALED
    from harness.hunt.goal import ON_THE_WAY

    assert set(ON_THE_WAY) <= {*ANOMALIES, NOT_HEALED}
    assert set().union(*ON_THE_WAY.values()) <= set(DEFINITIONS)
    assert Goal().on_the_way == set().union(*ON_THE_WAY.values()), "broken promises: every class's"
    assert Goal.parse("share_unseen").on_the_way == frozenset(), "a class no mechanism is known for: none"


@pytest.mark.parametrize("seed", range(12))
def test_mutations_are_valid_schedules_within_bounds_that_differ_from_their_parent(seed):
    s = scenario(hunt={"kinds": ["kill", "cut_fetch", "pause", "restart"], "faults": [1, 3], "triggers": 0.5})
    moves = vocabulary(s)
    parent = draw(s, random.Random(seed), moves)
    corpus = CoverageCorpus()
    corpus.look("p", parent, reached({"leader_change": 1}))
    child = mutate(parent, random.Random(seed), moves, corpus)
    assert child is not None and child.faults != parent.faults
    assert Scenario.model_validate(child.model_dump(mode="json")) == child, "a schedule kchaos run takes"
    assert len(child.faults) <= bounds(s).faults[1] + 2
    assert {f.kind for f in child.faults} <= {"kill", "cut_fetch", "pause", "restart"}
    again = mutate(parent, random.Random(seed), moves, corpus)
    assert again == child, "a function of the seed"


def group_scenario() -> Scenario:
    return scenario_mod.load(SCENARIOS / "group-async-commits.toml")


def test_a_hunt_for_an_offset_regression_aims_at_the_groups_coordinator_with_what_takes_it_away():
    from harness.faults import CUTS_ITS_CLIENTS, FAULTS, TAKES_THE_LEADER

    moves = vocabulary(group_scenario())
    aimed = aimed_moves(moves, Goal.parse("offset_regression").on_the_way)
    assert list(aimed) == ["coordinator_lost"]
    assert {str(m.target) for m in aimed["coordinator_lost"]} == {"group_coordinator"}
    assert {m.kind for m in aimed["coordinator_lost"]} == {
        m.kind for m in moves if FAULTS[m.kind].effects & {TAKES_THE_LEADER, CUTS_ITS_CLIENTS}}
    assert aimed_moves(moves, Goal.parse("share_unseen").on_the_way) == {}, "nothing on the way: no aim"


@pytest.mark.parametrize("state", ["coordinator_lost", "operator_action", "disk_failing", "topic_recreated",
                                   "answer_lost"])
def test_a_fault_aimed_at_a_state_its_definition_counts_is_counted_by_it_and_no_other_is(state):
    """AIMED_BY and the states' own definitions agree: every move aimed at a state that counts
    faults, alone in a run and doing what it is for, enters it; every other move of the hunt does
    not."""
    from harness.checker import coverage as cov
    from harness.faults import FAULTS
    from harness.history.events import Fault

    kinds = list(FAULTS)  # every kind the scenario takes, drawn by default or not
    s = scenario_mod.load(SCENARIOS / "group-async-commits.toml", ["log_dirs=2", f"hunt.kinds={json.dumps(kinds)}"])
    assert any(cov.AIMED_BY[state](m.kind, str(m.target)) for m in vocabulary(s)), "the hunt has moves aimed at it"
    for m in vocabulary(s):
        kind = FAULTS[m.kind]
        f = Fault(kind=m.kind, target=str(m.target), start_ms=1, end_ms=2,
                  answers_lost=1 if kind.loses_answers else None,
                  recreated="recreated" if kind.recreates_topic else None)
        sampled = cov.Sampled([], [], [], [f], 2, [])
        assert bool(getattr(cov, state)(sampled)) == cov.AIMED_BY[state](m.kind, str(m.target)), m


@pytest.mark.parametrize("seed", range(20))
def test_a_share_of_fresh_draws_has_a_fault_aimed_at_the_goals_way_and_is_a_valid_schedule(seed):
    s = group_scenario()
    moves = vocabulary(s)
    corpus = CoverageCorpus(on_the_way=Goal.parse("offset_regression").on_the_way)
    aimed = {(m.kind, str(m.target)) for m in aimed_moves(moves, corpus.on_the_way)["coordinator_lost"]}
    child, came = next_schedule(s, random.Random(seed), moves, corpus, "h0001")
    assert Scenario.model_validate(child.model_dump(mode="json")) == child, "a schedule kchaos run takes"
    hits = [f for f in child.faults if (f.kind, str(f.target)) in aimed]
    assert came in ("swarm draw aimed at coordinator_lost", "swarm draw")
    if came != "swarm draw":
        assert hits, "an aimed draw has a fault aimed at the goal's way"
        assert bounds(s).faults[0] <= len(child.faults) <= bounds(s).faults[1]
    assert next_schedule(s, random.Random(seed), moves, corpus, "h0001") == (child, came), "a function of the seed"


def test_about_half_the_first_draws_are_aimed_and_a_hunt_with_nothing_to_aim_at_draws_as_before():
    s = group_scenario()
    moves = vocabulary(s)
    corpus = CoverageCorpus(on_the_way=Goal.parse("offset_regression").on_the_way)
    came = [next_schedule(s, random.Random(i), moves, corpus, "h")[1] for i in range(60)]
    assert 18 <= came.count("swarm draw aimed at coordinator_lost") <= 42
    unaimed = CoverageCorpus(on_the_way=Goal.parse("share_unseen").on_the_way)
    assert next_schedule(s, random.Random(3), moves, unaimed, "h")[0] == draw(s, random.Random(3), moves)


# ---------------------------------------------------------------- the loop, with a rule for Kafka

STATE_OF = {"kill": "leader_change", "cut_fetch": "isr_leader_alone", "pause": "partition_offline",
            "restart": "controller_failover", "isolate": "below_min_insync"}  # the state each kind "reaches"


def staircase(calls: list[str]):
    """Kafka's stand-in: each kind of fault a schedule has is a protocol state reached, as often as
    it has faults of that kind; data is lost only with a kill, a fetch cut and a pause all in it."""

    def go(path, s: Scenario, reuse: bool) -> Verdict:
        calls.append(path.name)
        kinds = [f.kind for f in s.faults]
        lost = {"kill", "cut_fetch", "pause"} <= set(kinds)
        fake_run(path, s, {"lost": 7} if lost else {})
        v = verdict_mod.read(path).model_copy(update={"coverage": {STATE_OF[k]: kinds.count(k) for k in set(kinds)}})
        verdict_mod.write(path, v)
        return v

    return go


def options(tmp_path, **kw) -> HuntOptions:
    table = ['hunt.kinds=["kill", "cut_fetch", "pause", "restart", "isolate"]', "hunt.faults=[1, 2]",
             "hunt.triggers=0"]
    return HuntOptions(scenarios=("acks1-leader-kill",), out=tmp_path / "hunt", goal=Goal.parse("lost"),
                       **{"sets": tuple(table), "runs": 16, "confirm": 1, "shrink_runs": 4, "guide": "coverage", **kw})


def test_a_coverage_guided_hunt_mutates_what_reached_new_states_and_keeps_a_timeline(tmp_path):
    calls: list[str] = []
    said: list[str] = []
    hunt(options(tmp_path), announce=said.append, go=staircase(calls))
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    assert doc["options"]["guide"] == "coverage", "the guide decides the draws: part of the hunt's identity"
    drawn = [c for c in calls if c.rsplit("-", 1)[-1][:1] not in "csm"]
    assert [t["run"] for t in doc["timeline"]] == [c for c in calls if c in drawn], "one point per drawn run"
    assert any("mutated from" in m for m in said) and any("new coverage" in m for m in said)
    assert all(a["features"] <= b["features"] for a, b in zip(doc["timeline"], doc["timeline"][1:], strict=False))
    came = [t["came"] for t in doc["timeline"]]
    assert {"swarm draw", "swarm draw aimed at leader_change"} <= set(came), "fresh draws, some aimed at the way"
    assert all(f"{t['run'][:5]}: {t['came']}" in said for t in doc["timeline"] if t["came"] != "swarm draw")
    for t in doc["timeline"]:  # the states its run reached: the stand-in's, one per kind of fault in its schedule
        schedule = Scenario.model_validate(json.loads((tmp_path / "hunt" / "runs" / t["run"] / "run.json").read_text())
                                           ["scenario_config"])
        assert t["states"] == sorted({STATE_OF[f.kind] for f in schedule.faults}), t["run"]


def test_a_coverage_guided_hunt_is_the_same_hunt_again_and_resumes(tmp_path):
    first: list[str] = []
    hunt(options(tmp_path / "a"), announce=lambda m: None, go=staircase(first))
    second: list[str] = []
    hunt(options(tmp_path / "b"), announce=lambda m: None, go=staircase(second))
    assert first == second, "same seed, same schedules, same outcomes"
    again: list[str] = []
    hunt(options(tmp_path / "a"), announce=lambda m: None, go=staircase(again))
    assert again == [], "everything read back from disk"


def test_a_resumed_hunts_timeline_gives_each_run_read_back_the_time_it_was_first_looked_at(tmp_path):
    """A benchmark reads the time to a finding and the coverage over time from the timeline: a run
    read back on resuming keeps the hunt's time when it ran, not every earlier session's."""
    hunt(options(tmp_path, runs=5), announce=lambda m: None, go=staircase([]))
    first = json.loads((tmp_path / "hunt" / "hunt.json").read_text())["timeline"]
    hunt(options(tmp_path, runs=9), announce=lambda m: None, go=staircase([]))
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    resumed = doc["timeline"]
    assert len(resumed) > len(first) and resumed[:len(first)] == first
    assert [t["wall_s"] for t in resumed] == sorted(t["wall_s"] for t in resumed)
    assert resumed[-1]["wall_s"] <= round(sum(c["wall_s"] for c in doc["spent"].values()), 1)


def test_a_directory_of_another_guide_is_refused_and_the_default_guide_keeps_old_journals(tmp_path):
    hunt(options(tmp_path, runs=1, guide="swarm"), announce=lambda m: None, go=staircase([]))
    with pytest.raises(HuntError, match="another hunt"):
        hunt(options(tmp_path, runs=1, guide="coverage"), announce=lambda m: None, go=staircase([]))
    assert "guide" not in options(tmp_path, guide="precursors").identity(), "hunts begun before --guide resume"


def test_a_swarm_hunt_builds_on_nothing(tmp_path):
    said: list[str] = []
    hunt(options(tmp_path, guide="swarm"), announce=said.append, go=staircase([]))
    assert not [m for m in said if "mutated from" in m or "built on" in m or "new coverage" in m]


def test_until_found_stops_drawing_after_the_first_finding(tmp_path):
    calls: list[str] = []
    table = ('hunt.kinds=["kill", "cut_fetch", "pause"]', "hunt.faults=[3, 3]", "hunt.triggers=0")
    out = hunt(options(tmp_path, runs=40, until_found=True, sets=table), announce=lambda m: None,
               go=staircase(calls))
    assert len(out.findings) == 1 and out.drawn < 40
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    found = doc["findings"][0]["found_in"]
    # the run drawn while it was checked still runs; nothing after that
    assert found in [t["run"] for t in doc["timeline"][-2:]], "no draw after the one that found it"


def test_a_run_found_on_disk_without_its_cost_counts_its_own_phases_not_nothing(tmp_path):
    """A hunt stopped between a run's end and its next save finds the run on disk with no account
    of what it cost: it counts the run's own phases (run.json), so a resumed hunt's time to a
    finding is not short by that run."""
    hunt(options(tmp_path, runs=3), announce=lambda m: None, go=staircase([]))
    journal = tmp_path / "hunt" / "hunt.json"
    doc = json.loads(journal.read_text())
    last = list(doc["spent"])[-1]
    del doc["spent"][last]
    journal.write_text(json.dumps(doc))
    run_json = tmp_path / "hunt" / "runs" / last / "run.json"
    run = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**run, "phases": {"cluster_up": 0.0, "workload": 14.02, "heal": 0.43}}))
    calls: list[str] = []
    hunt(options(tmp_path, runs=3), announce=lambda m: None, go=staircase(calls))
    assert calls == [], "read back, not run again"
    assert json.loads(journal.read_text())["spent"][last]["wall_s"] == 14.4


def test_an_answers_shape_is_held_by_its_catalogued_schedule_and_not_by_its_control():
    """benchmarks/shape_odds.py counts the fresh draws that hold what an answer's mechanism needs:
    each catalogued schedule that shows it holds its shape; F2's control (the ZooKeeper cut moved
    after the shrink) does not, nor does the epochs-off schedule with the leader taken before the
    held follower's fetch timed out, or frozen for less than its session, or with its follower's
    fetches cut both ways."""
    from benchmarks.shape_odds import epochs_off_shape, f2_shape
    from harness.scenario.catalogue import find
    from harness.scenario.loading import load

    f2 = find("zk-isr-update-lost")
    assert f2_shape(load(f2))
    assert not f2_shape(load(f2, ["faults.1.at_s=16"]))
    assert not f2_shape(load(f2, ['faults.1.stream="both"']))
    assert not f2_shape(load(f2, ["faults.0.duration_s=4"])), "too short for the leader to ask for a shrink"
    # The leader's restart timed instead of triggered, at times around the hold (4 s to 14 s; the
    # held fetch times out at 8 s).
    timed = load(find("hw-truncation-loss")).model_dump(mode="json", exclude_none=True)
    timed["faults"][3].pop("on")
    for at_s, holds in ((9.0, True), (6.0, False), (15.0, False)):
        timed["faults"][3]["at_s"] = at_s
        assert epochs_off_shape(Scenario.model_validate(timed)) is holds, at_s
    timed["faults"][3]["at_s"] = 9.0
    for duration_s, holds in ((3.0, False), (7.0, True)):  # a freeze takes the leadership once its 6 s session ends
        frozen = {**timed, "faults": [*timed["faults"][:3], {**timed["faults"][3], "kind": "pause",
                                                              "duration_s": duration_s}]}
        assert epochs_off_shape(Scenario.model_validate(frozen)) is holds, duration_s
    timed["faults"][1]["stream"] = "both"
    assert not epochs_off_shape(Scenario.model_validate(timed))


def test_the_benchmark_counts_the_aimed_draws_that_entered_the_state_they_were_aimed_at():
    """benchmarks/hunt_guides.py reads each aimed draw's ``came`` and the states its run reached;
    a hunt kept before the timeline recorded states is left out, as is every draw not aimed."""
    from benchmarks.hunt_guides import aims_entered

    recorded = {"timeline": [
        {"came": "swarm draw aimed at leader_change", "states": ["isr_leader_alone", "leader_change"]},
        {"came": "swarm draw aimed at leader_change", "states": ["isr_leader_alone"]},
        {"came": "swarm draw aimed at coordinator_lost", "states": []},
        {"came": "swarm draw", "states": ["leader_change"]},
        {"came": "mutated from h0001", "states": ["coordinator_lost"]},
    ]}
    before = {"timeline": [{"came": "swarm draw aimed at leader_change"}]}
    assert aims_entered([recorded, before]) == (1, 3)
    assert aims_entered([before]) == (0, 0)


def test_a_hunt_kept_before_its_timeline_had_states_reads_them_from_its_runs_on_this_machine(tmp_path):
    from benchmarks.hunt_guides import aims_entered, with_states

    (tmp_path / "h0000").mkdir()
    coverage = {"leader_change": 2, "unclean_election": 0}
    (tmp_path / "h0000" / "verdict.json").write_text(json.dumps({"coverage": coverage}))
    before = {"timeline": [{"run": "h0000", "came": "swarm draw aimed at leader_change"},
                           {"run": "h0001", "came": "swarm draw aimed at leader_change"}]}  # its run is gone
    read = with_states(before, tmp_path)
    assert read["timeline"][0]["states"] == ["leader_change"] and "states" not in read["timeline"][1]
    assert aims_entered([read]) == (1, 1)


def test_a_kept_hunt_counts_for_an_answer_only_if_it_looked_for_what_the_answer_is_hunted_for(tmp_path, monkeypatch,
                                                                                                 capsys):
    """F2 is hunted for its class (isr_not_restored): a coverage hunt for any broken promise aimed at
    every class's states and does not count, nor does a swarm hunt that stopped at another class's
    finding; a swarm hunt for any broken promise that showed none does (its draws were the same)."""
    import benchmarks.hunt_guides as hg

    def hunt(guide: str, anomaly: list[str] | None, findings: int) -> dict:
        return {"options": {"guide": guide, "anomaly": anomaly}, "findings": [{}] * findings, "timeline": []}

    assert hg.goal_of("f2-frozen-isr") == ["isr_not_restored"] and hg.goal_of("acks1-loss") == ["lost"]
    assert hg.stands_for("f2-frozen-isr", hunt("coverage", ["isr_not_restored"], 1))
    assert hg.stands_for("f2-frozen-isr", hunt("swarm", None, 0))
    assert not hg.stands_for("f2-frozen-isr", hunt("swarm", None, 1))
    assert not hg.stands_for("f2-frozen-isr", hunt("coverage", None, 0))
    assert not hg.stands_for("acks1-loss", hunt("swarm", ["lost", "divergence"], 0))
    monkeypatch.setattr(hg, "RESULTS", tmp_path)
    hg.result_path("f2-frozen-isr", "coverage", 1).parent.mkdir(parents=True)
    hg.result_path("f2-frozen-isr", "coverage", 1).write_text(json.dumps(hunt("coverage", None, 0)))
    with pytest.raises(SystemExit) as refused:
        hg.kept("f2-frozen-isr", "coverage", 5)
    assert refused.value.code == 2
    assert "options.anomaly: hunted any broken promise (allowed: f2-frozen-isr's isr_not_restored)" in \
        capsys.readouterr().err
    assert set(hg.kept("f2-frozen-isr", "coverage", 5, tmp_path)) == {1}, "an earlier set keeps what it hunted"


def test_the_benchmark_stops_with_exit_2_when_a_hunt_refuses_its_input(tmp_path, monkeypatch, capsys):
    """A hunt that exits 2 (its OUT holds a hunt of another goal, say) ran nothing: the benchmark
    says so and stops, rather than going on to the next hunt and printing a table without it."""
    import benchmarks.hunt_guides as hg

    monkeypatch.setattr(hg, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(hg.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 2))
    with pytest.raises(SystemExit) as refused:
        hg.run_hunt(tmp_path / "out", "f2-frozen-isr", "swarm", 5, "40m")
    assert refused.value.code == 2 and "seed 5: the hunt refused its input" in capsys.readouterr().err
    assert not (tmp_path / "results").exists(), "nothing kept"


@pytest.mark.parametrize(("script", "args", "said"), [
    (["benchmarks/hunt_guides.py"], ["--guides", "swarm,best", "--report-only"], "--guides: best (allowed: swarm, "),
    (["benchmarks/hunt_guides.py"], ["--answers", "acks0", "--report-only"], "--answers: acks0 (allowed: acks1-loss"),
    (["-m", "benchmarks.shape_odds"], ["--answers", "acks1-loss"], "--answers: acks1-loss (allowed: f2-frozen-isr"),
    (["-m", "benchmarks.shape_odds"], ["--guides", "precursors"], "--guides: precursors (allowed: swarm, coverage)"),
])
def test_the_guide_benchmarks_refuse_an_unknown_answer_or_guide_with_exit_2(script, args, said):
    r = subprocess.run([sys.executable, *script, *args], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parent.parent)
    assert r.returncode == 2 and said in r.stderr, r.stderr



def test_a_silence_aimed_at_a_leader_change_lasts_the_brokers_session():
    """A freeze, an isolation or a ZooKeeper cut of the leader shorter than its broker's session
    leaves it leading: of the epochs-off hunts' aimed draws that did not change the leader, most
    were such (benchmarks/README.md). An aimed one lasts the session and a second, both ways, and
    still ends before the workload's quiet tail; a kill or a restart is drawn as it was."""
    from harness.faults import FAULTS, SILENCES_ITS_BROKER
    from harness.hunt.coverage_guide import aim
    from harness.hunt.space import session_s, with_faults

    s = scenario_mod.load(SCENARIOS / "hw-truncation-loss.toml")
    aimed = aimed_moves(vocabulary(s), Goal.parse("lost").on_the_way)
    session = session_s(s)
    kinds = set()
    for seed in range(60):
        child, state = aim(with_faults(s, []), random.Random(seed), aimed)  # the aimed fault is its only one
        (f,) = child.faults
        assert state == "leader_change" and str(f.target) == "leader"
        kinds.add(f.kind)
        if SILENCES_ITS_BROKER in FAULTS[f.kind].effects:
            assert f.duration_s >= session + 1.0 and f.stream != "downstream", (seed, f)
            assert f.on is not None or f.at_s + f.duration_s <= child.duration_s - 3.0 + 1e-9, (seed, f)
    assert {"pause", "kill"} <= kinds, kinds
