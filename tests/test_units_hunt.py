"""kchaos hunt's logic on data the tests build: the search space, delta debugging and the shrinker
against fake oracles, goals and signatures, the write-up, and the loop's bookkeeping (confirm,
shrink, one finding per signature, hunt.json, resume) with a rule standing in for Kafka. What Kafka
does under a hunt's schedules is tested against real Kafka in tests/test_hunt.py."""

from __future__ import annotations

import json
import random
import tomllib
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import scenario as scenario_mod
from harness.checker import ANOMALIES
from harness.checker import verdict as verdict_mod
from harness.checker.verdict import KnownIssue, NotHealed, Verdict
from harness.hunt import shrink as shrinking
from harness.hunt.goal import Goal, Hit, signature
from harness.hunt.known import known_id
from harness.hunt.loop import INVESTIGATIONS_UNREPRODUCED, HuntOptions, hunt
from harness.hunt.space import draw, vocabulary
from harness.hunt.trials import HuntError
from harness.hunt.write_up import bug_md, scenario_toml
from harness.scenario import Scenario
from tests.histories import History

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def scenario(**changes) -> Scenario:
    base = scenario_mod.load(SCENARIOS / "acks1-leader-kill.toml")
    return Scenario.model_validate({**base.model_dump(mode="json"), **changes})


def fault(kind: str, at_s: float = 2.0, duration_s: float = 6.0, target: str = "leader", **extra) -> dict:
    return {"at_s": at_s, "duration_s": duration_s, "kind": kind, "target": target, **extra}


# ---------------------------------------------------------------- delta debugging

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), max_size=n))))
def test_ddmin_finds_exactly_what_a_monotone_failure_needs(case):
    """For a failure that needs a set of items (any superset fails), the 1-minimal result is that set."""
    n, needed = case
    calls = []

    def fails(xs):
        calls.append(xs)
        return needed <= set(xs)

    assert set(shrinking.ddmin(list(range(n)), fails)) == needed
    assert len(calls) == len({tuple(c) for c in calls}), "no subsequence is judged twice"


def test_ddmin_stops_where_it_stands_when_the_budget_is_spent():
    budget = iter([False, False, None])
    assert shrinking.ddmin([0, 1, 2, 3], lambda xs: next(budget)) == [0, 1, 2, 3]


# ---------------------------------------------------------------- the shrinker

def needs_kill_and_cut(s: Scenario) -> bool:
    """A fake oracle: the failure needs a kill and a fetch cut, anything else is noise."""
    return {"kill", "cut_fetch"} <= {f.kind for f in s.faults}


def test_shrinking_keeps_only_the_faults_that_matter_and_makes_every_number_small():
    s = scenario(duration_s=40.0, topic={"name": "chaos", "partitions": 3},
                 producers=[{"name": "a", "acks": "1", "rate": 800}, {"name": "b", "acks": "1", "rate": 400}],
                 faults=[fault("pause", 1), fault("cut_fetch", 3, 9, "followers", partition=2),
                         fault("latency", 5, 4, "random"), fault("kill", 6, 7, partition=1),
                         fault("isolate", 20, 5, "follower")])
    out = shrinking.shrink(s, needs_kill_and_cut, budget=60)
    m = out.scenario
    assert sorted(f.kind for f in m.faults) == ["cut_fetch", "kill"]
    assert all(f.duration_s == shrinking.MIN_FAULT_S for f in m.faults)
    assert m.topic.partitions == 1 and all(f.partition == 0 for f in m.faults)
    assert [p.name for p in m.producers] == ["a"] and m.producers[0].rate == shrinking.MIN_RATE
    assert m.duration_s == 8.0, "the workload shrinks to its floor past the last fault"
    assert out.judged <= 60 and all(isinstance(x.kept, bool) for x in out.steps)


def test_a_candidate_that_no_longer_fails_is_not_kept():
    s = scenario(faults=[fault("kill", 2, 6), fault("pause", 3, 4)])
    m = shrinking.shrink(s, lambda c: any(f.kind == "kill" and f.duration_s >= 6 for f in c.faults), 30).scenario
    assert [(f.kind, f.duration_s) for f in m.faults] == [("kill", 6.0)]


def test_a_jbod_hunt_draws_which_directory_a_disk_fault_fails_and_a_one_directory_hunt_draws_none():
    """A JBOD broker's first directory holds KRaft's metadata log (its failure stops the broker); only
    another's failure leaves the broker serving the rest, KIP-858's own path. A hunt that always
    failed directory 1 never drew it (a JBOD campaign's 45 log_dir_failure faults all on dir 1)."""
    import collections
    import random

    from harness.faults import FAULTS

    s = scenario_mod.load(SCENARIOS / "hunt" / "jbod-kraft.toml")
    rng = random.Random(1)
    seen: collections.Counter = collections.Counter()
    for _ in range(60):
        for f in draw(s, rng, vocabulary(s)).faults:
            if "dir" in FAULTS[f.kind].takes:
                seen[(f.kind, f.dir)] += 1
    assert {d for k, d in seen if k == "log_dir_failure"} == {1, 2}, seen
    for kind in ("disk_error", "disk_full", "slow_disk"):
        assert {d for k, d in seen if k == kind} == {None, 1, 2}, (kind, seen)
    one_dir = s.model_copy(update={"log_dirs": 1, "hunt": s.hunt.model_copy(
        update={"kinds": ["disk_error", "disk_full", "slow_disk", "kill"]})})
    assert all(f.dir is None for _ in range(20) for f in draw(one_dir, rng, vocabulary(one_dir)).faults)


def test_shrinking_drops_a_formation_fault_the_anomaly_does_not_need_and_keeps_one_it_does():
    formed = {"formation": {"kind": "kill", "duration_s": 2}}
    s = scenario(cluster=formed, faults=[fault("kill", 2, 6)])
    m = shrinking.shrink(s, lambda c: any(f.kind == "kill" for f in c.faults), 30).scenario
    assert "formation" not in m.cluster and [f.kind for f in m.faults] == ["kill"]
    m = shrinking.shrink(s, lambda c: "formation" in c.cluster, 30).scenario
    assert m.cluster == formed and not m.faults


def test_shrinking_within_its_budget_and_on_stop():
    s = scenario(faults=[fault("kill", 2), fault("pause", 3), fault("isolate", 4)])
    assert shrinking.shrink(s, lambda c: True, budget=2).judged == 2

    class Spent(Exception):
        pass

    def stops(c):
        raise Spent

    out = shrinking.shrink(s, stops, budget=20, stop=Spent)
    assert out.scenario == s and out.judged == 0


def test_dropping_a_fault_another_waits_for_fires_that_one_when_it_would_have():
    s = scenario(faults=[fault("cut_fetch", 3, 6, "followers"),
                         fault("kill", 0, 2, on={"event": "fault_start", "fault": 0, "delay_s": 1.0}),
                         fault("pause", 0, 1, on={"event": "fault_end", "fault": 1, "delay_s": 0.5})])
    m = shrinking.keep_faults(s, [1, 2])
    assert m.faults[0].on is None and m.faults[0].at_s == 4.0
    assert m.faults[1].on is not None and m.faults[1].on.fault == 0, "a kept reference is renumbered"


# ---------------------------------------------------------------- the space

def test_draws_are_seeded_valid_and_from_the_vocabulary():
    s = scenario()
    moves = vocabulary(s)
    kinds = {m.kind for m in moves}
    assert {"kill", "power_loss", "cut_fetch", "isolate"} <= kinds
    assert "client_kill" not in kinds, "no transactional client or member to kill"
    assert "send" not in kinds and "remove_controller" not in kinds
    a, b = draw(s, random.Random("x/1"), moves), draw(s, random.Random("x/1"), moves)
    assert a == b and a.generator is None
    spec = scenario_mod.HuntSpec()
    for i in range(40):
        d = draw(s, random.Random(i), moves)
        assert spec.faults[0] <= len(d.faults) <= spec.faults[1]
        assert all((f.kind, f.target) in {(m.kind, m.target) for m in moves} or f.target.role == "broker"
                   for f in d.faults)
        assert (d.topic, d.producers, d.brokers) == (s.topic, s.producers, s.brokers), "the configuration stays"


def test_the_hunt_table_bounds_what_is_drawn():
    s = scenario(hunt={"kinds": ["kill", "pause"], "targets": ["leader"], "faults": [2, 2],
                       "duration_s": [10, 12], "rate": [100, 200], "triggers": 0})
    moves = vocabulary(s)
    assert {(m.kind, str(m.target)) for m in moves} == {("kill", "leader"), ("pause", "leader")}
    for i in range(20):
        d = draw(s, random.Random(i), moves)
        assert len(d.faults) == 2 and 10 <= d.duration_s <= 12 and 100 <= d.producers[0].rate <= 200
        assert all(f.on is None and f.at_s + f.duration_s <= d.duration_s for f in d.faults)


def test_a_bad_hunt_table_names_its_key():
    with pytest.raises(scenario_mod.ScenarioError, match=r"hunt.*kinds \['explode'\] are not faults"):
        scenario_mod.load(SCENARIOS / "smoke.toml", ['hunt.kinds=["explode"]'])
    with pytest.raises(scenario_mod.ScenarioError, match="faults"):
        scenario_mod.load(SCENARIOS / "smoke.toml", ["hunt.faults=[3, 1]"])


# ---------------------------------------------------------------- goals, signatures, known results

def verdict(counts: dict[str, int], broken: list[str] = (), why: str = "acks=1: the leader acknowledges",
            known_issues: list[dict] = ()) -> Verdict:
    counts = {a: counts.get(a, 0) for a in ANOMALIES}
    promises = {a: {"promised": a in broken, "why": why} for a in ANOMALIES}
    settings = {"acks": "1", "min_insync": 2, "replication_factor": 3, "unclean_election": False,
                "idempotence": False, "leader_epochs": True, "eligible_leader_replicas": False,
                "transactional": False, "faults": ["power_loss"]}
    row = {"config": "acks=1 min.insync=2 rf=3 unclean=off idempotent=no +power_loss", "settings": settings,
           "producers": ["p"], "counts": counts, "promises": promises, "broken": list(broken),
           "expected": [a for a, n in counts.items() if n and a not in broken], "verdict": "fail" if broken else "pass"}
    return Verdict.model_validate({
        "run_id": "r", "run_dir": "/r", "verdict": "fail" if broken else "pass", "anomalies": counts,
        "examples": {a: [{"value": "v-1", "offset": 3}] for a, n in counts.items() if n}, "by_config": [row],
        "indeterminate_landed": {"count": 0}, "failed_but_present": {"count": 0},
        "unavailability": {"threshold_ms": 1000}, "known_issues": list(known_issues)})


def test_a_hunt_looks_for_broken_promises_or_for_the_classes_asked():
    v = verdict({"lost": 5, "duplicate": 2}, broken=["duplicate"])
    assert [h.anomaly for h in Goal().hits(v)] == ["duplicate"]
    assert [h.anomaly for h in Goal.parse("lost,divergence").hits(v)] == ["lost"]
    hit = Goal.parse("lost").hits(v)[0]
    assert hit.where == "acks=1 min.insync=2 rf=3 unclean=off idempotent=no", "faults are the signature's own part"
    assert signature(hit, ["kill", "cut_fetch", "kill"]) == f"lost | {hit.where} | cut_fetch+kill"
    with pytest.raises(ValueError, match="allowed: lost"):
        Goal.parse("lots")


def test_an_isr_not_restored_after_the_heal_is_a_broken_promise_a_hunt_finds():
    """A run that did not heal (F2) has no anomaly of its history, but it failed: a hunt for broken
    promises, or for ``isr_not_restored`` by name, finds it; a hunt for loss does not."""
    v = verdict({}).model_copy(update={"verdict": "fail", "not_healed": [
        NotHealed(topic="chaos", partition=0, leader=3, isr=[3, 2], replicas=[3, 1, 2], waited_s=120)]})
    (hit,) = Goal().hits(v)
    assert (hit.anomaly, hit.where, hit.count, hit.promised) == ("isr_not_restored", "topic chaos", 1, True)
    assert [h.anomaly for h in Goal.parse("isr_not_restored").hits(v)] == ["isr_not_restored"]
    assert Goal.parse("lost").hits(v) == []


def test_known_results_by_the_verdicts_known_issues_or_what_permits_the_anomaly():
    v = verdict({"lost": 5})
    assert known_id(Goal.parse("lost").hits(v)[0], v) == "acks1-leader-kill"
    v = verdict({"duplicate": 1}, broken=["duplicate"], why="idempotence",
                known_issues=[{"issue": "librdkafka#4953", "anomalies": ["duplicate"], "why": "epoch bump",
                               "shown": True, "evidence": "logs/clients.log: DRAIN ... epoch bump"}])
    assert known_id(Goal().hits(v)[0], v) == "librdkafka#4953"
    for shown in (False, None):
        v = verdict({"lost": 3}, broken=["lost"], why="transactional",
                    known_issues=[{"issue": "KAFKA-17754", "anomalies": ["lost"], "why": "late produce",
                                   "shown": shown}])
        assert known_id(Goal().hits(v)[0], v) is None, "a configuration that fits a known bug is not its mechanism"
    v = verdict({"divergence": 1}, broken=["divergence"], why="leader epochs")
    assert known_id(Goal().hits(v)[0], v) is None
    v = verdict({"divergence": 9}, why="leader epochs off (inter.broker.protocol.version < 0.11): followers truncate")
    hit = Goal.parse("divergence").hits(v)[0]
    assert known_id(hit, v, ["cut_coordination"]) == "hw-truncation-divergence"
    assert known_id(hit, v, ["power_loss", "cut_coordination", "power_loss"]) == \
        "hw-truncation-divergence, power-loss", "every mechanism that may explain it"


# ---------------------------------------------------------------- the write-up

def test_the_minimal_scenario_file_loads_back_as_the_same_scenario(tmp_path):
    s = scenario(seed=77, faults=[fault("cut_fetch", 3, 6, "followers", stream="upstream"),
                                  fault("kill", 0, 2, on={"event": "isr_shrink", "size": 1, "delay_s": 1.0})])
    text = scenario_toml(s)
    assert "seed = 77" in text and 'kafka_version = "3.9.1"' in text and "hunt" not in text
    (tmp_path / "m.toml").write_text(text)
    assert scenario_mod.load(tmp_path / "m.toml") == s
    assert tomllib.loads(text)["faults"][1]["on"] == {"event": "isr_shrink", "size": 1, "delay_s": 1.0}


def test_bug_md_speaks_the_trackers_language(tmp_path):
    """A title in the project's terms; the environment with every non-default setting, kchaos's own
    cluster defaults named as such; the guarantee quoted with its source; a timeline; the rate with
    its interval; where it was measured; no root cause claimed without the run's logs showing one."""
    s = scenario(faults=[fault("kill", 2, 3, on={"event": "acked", "count": 100, "delay_s": 0.5})])
    run = fake_run(tmp_path / "run", s, {"lost": 4}, broken=["lost"], why="acks=all, min.insync>=2")
    config = json.loads((run / "run.json").read_text())
    config["cluster"] = {"broker_properties": {"1": "listeners=CLIENT://0.0.0.0:9092\nbroker.id=1\n"
                                                    "replica.lag.time.max.ms=3000\nnum.io.threads=4\n"}}
    (run / "run.json").write_text(json.dumps(config))
    t0 = 1_700_000_000_000
    state = {"type": "state", "brokers": [1, 2, 3]}
    events = [{"type": "workload_start", "ts_ms": t0},
              {**state, "ts_ms": t0 + 100, "partitions": [{"partition": 0, "leader": 1, "isr": [1, 2, 3]}]},
              {**state, "ts_ms": t0 + 300, "partitions": [{"partition": 0, "leader": 1, "isr": [1, 2, 3]}]},
              {"type": "fault", "kind": "kill", "target": "leader", "name": "kill leader (p0)", "nodes": ["kafka-1"],
               "trigger": "acked count=100 +0.5s", "observed": "100 acknowledged", "start_ms": t0 + 2500,
               "end_ms": t0 + 5500},
              {**state, "ts_ms": t0 + 3100, "partitions": [{"partition": 0, "leader": 2, "isr": [2, 3]}]},
              {"type": "workload_end", "ts_ms": t0 + 8000}]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    v = verdict_mod.read(run)
    hit = Goal().hits(v)[0]
    hit = replace(hit, count=9)  # as the run the finding was first seen in counted: bug.md shows the run beside it
    doc = {"reproduced": {"k": 3, "n": 3}, "confirmed": {"k": 2, "n": 3}, "known": None,
           "signature": signature(hit, ["kill"]), "dir": "findings/01-lost"}
    text = bug_md(doc, hit, s, run, v)
    timeline = [line for line in text.splitlines() if line.startswith("| +")]
    assert [line.split(" | ")[0] + " | " + line.split(" | ")[2].removesuffix(" |") for line in timeline] == [
        "| +0.00 s | kchaos: producers and readers start",
        "| +0.10 s | cluster: partition 0 leader 1, ISR [1, 2, 3]",
        "| +2.50 s | kchaos: kill of kafka-1 (kill leader (p0)) begins, acked count=100 +0.5s (the cluster showed "
        "100 acknowledged)",
        "| +3.10 s | cluster: partition 0 leader 2, ISR [2, 3]",
        "| +5.50 s | kchaos: kill of kafka-1 (kill leader (p0)) healed",
        "| +8.00 s | kchaos: producers stop; then every fault is healed and every partition read back from offset 0",
    ], "the steps in time order, a partition's state only when it changed"
    assert text.startswith("# Acknowledged records lost after a broker is killed (SIGKILL) (confluent-kafka 2.x, "
                           "Kafka 3.9.1 ZooKeeper mode)\n")
    for needle in ("| Kafka | 3.9.1, ZooKeeper mode, 3 brokers", "| Client | confluent-kafka 2.x |",
                   "| `replica.lag.time.max.ms` | `3000` | `30000` | a lagging follower leaves the ISR",
                   "| `num.io.threads` | `4` | `8` |", "| `min.insync.replicas` | `2` | `1` |",
                   "`acks=1`", "> acks=all This means the leader will wait for the full set of in-sync replicas",
                   "#producerconfigs (acks)", "promised, acks=all, min.insync>=2",
                   "Reproduced in 3 of 3 runs of the minimal schedule (95% interval 44%-100%",
                   "2 of 3 re-runs", "on acked count=100 +0.5s", "**kill** on leader", "| since start | UTC | step |",
                   "kchaos: producers and readers start", "lost: 4", '"value": "v-1"',
                   "Measured on Kafka 3.9.1 (zk) with confluent-kafka 2.x only", "Unexplained",
                   "kchaos run findings/01-lost/minimal.toml", "not known to kchaos", "## Impact"):
        assert needle in text, needle
    assert "listeners" not in text and "broker.id" not in text, "wiring is left out"
    assert "Not a bug report" not in text and "lost: 9" not in text
    librdkafka = json.loads((run / "run.json").read_text()) | {"client": {"name": "librdkafka",
                                                                         "version": "librdkafka 2.16.0"}}
    (run / "run.json").write_text(json.dumps(librdkafka))
    again = bug_md(doc, hit, s, run, v)
    assert "| Client | librdkafka 2.16.0 |" in again and "| Python binding | confluent-kafka " in again
    fits = v.model_copy(update={"known_issues": [KnownIssue(issue="KAFKA-17754", anomalies=["lost"],
                                                             why="a late produce lands in the next transaction")]})
    root = bug_md(doc, hit, s, run, fits).split("## Root cause")[1]
    assert root.lstrip().startswith("Unexplained") and "KAFKA-17754 (lost)" in root and \
        "Consistent with the configuration only" in root, "a known bug no log shows is listed, never the cause"
    missed = {"reproduced": {"k": 0, "n": 3}, "confirmed": {"k": 0, "n": 3, "unfired": 2}, "found_in": "h0004"}
    unfired = bug_md(doc | missed, hit, s, run, fits)
    assert "> Not reproduced: none of 3 re-runs on a clean cluster showed it again (2 of them with a fault of " \
           "the schedule that never acted)" in unfired


def test_wilson_interval_matches_newcombes_table():
    """Newcombe (1998), the score interval without continuity correction."""
    from harness.hunt.affected import wilson

    for (k, n), (lo, hi) in {(0, 10): (0.0, 0.2775), (5, 10): (0.2366, 0.7634), (10, 10): (0.7225, 1.0)}.items():
        got = wilson(k, n)
        assert abs(got[0] - lo) < 5e-5 and abs(got[1] - hi) < 5e-5, (k, n, got)


# ---------------------------------------------------------------- the loop, with a rule for Kafka

def fake_run(path: Path, s: Scenario, counts: dict[str, int], broken: list[str] = (),
             why: str = "acks=1: the leader acknowledges") -> Path:
    """A run directory as a run of ``s`` would leave it, with the verdict ``counts`` give."""
    run = {"run_id": path.name, "kafka_version": s.kafka_version, "mode": s.mode, "brokers": s.brokers,
           "images": {"kafka": "kchaos/kafka:3.9.1"}, "client": {"name": "confluent-kafka", "version": "2.x"},
           "features": {}, "eligible_leader_replicas": False, "scenario_config": s.model_dump(mode="json"),
           "topics": [{"name": "t", "replication_factor": 3, "config": {"min.insync.replicas": "2"}}],
           "producers": [{"name": "p0", "acks": "1", "idempotence": False, "topic": "t"}]}
    History(run=run).clean(3).write(path)
    verdict_mod.write(path, verdict(counts, broken, why).model_copy(update={"run_dir": str(path)}))
    return path


def rule(calls: list[str], flaky: set[str] = frozenset(), runs_on: dict | None = None):
    """Kafka's stand-in: a run loses data when its schedule has a kill and a fetch cut. ``runs_on``
    gets each run's (whether it shared the kept cluster, its topic)."""
    runs_on = {} if runs_on is None else runs_on

    def go(path: Path, s: Scenario, reuse: bool) -> Verdict:
        calls.append(path.name)
        drawn = path.name.rsplit("-", 1)[-1][:1] not in "csm" and not path.name.rsplit("-", 1)[-1].isdigit()
        number = int(path.name[1:5])
        assert not reuse or drawn or s.topic.name.startswith(f"chaos-{number}-"), "a finding's run: a topic of its own"
        assert not reuse or not drawn or s.topic.name == f"chaos-{number}", "on a topic of its own"
        runs_on[path.name] = (reuse, s.topic.name)
        lost = needs_kill_and_cut(s) and path.name not in flaky
        fake_run(path, s, {"lost": 7} if lost else {})
        return verdict_mod.read(path)

    return go


def options(tmp_path: Path, **kw) -> HuntOptions:
    hunt_table = ['hunt.kinds=["kill", "cut_fetch", "pause"]', "hunt.faults=[2, 4]", "hunt.triggers=0"]
    return HuntOptions(scenarios=("acks1-leader-kill",), out=tmp_path / "hunt", goal=Goal.parse("lost"),
                       **{"sets": tuple(hunt_table), "runs": 12, "confirm": 2, **kw})


def test_a_hunt_confirms_shrinks_and_writes_each_finding_once(tmp_path):
    calls: list[str] = []
    out = hunt(options(tmp_path), announce=lambda m: None, go=rule(calls))
    assert out.exit_code == 1 and len(out.findings) == 1, "one signature, one finding"
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    f = doc["findings"][0]
    assert f["reproduced"] == {"k": 2, "n": 2} and f["confirmed"] == {"k": 2, "n": 2, "unfired": 0}
    assert f["faults_after"] == 2 and f["faults_before"] >= 2 and f["known"] == "acks1-leader-kill"
    assert f["signature"].startswith("lost | acks=1") and f["signature"].endswith("| cut_fetch+kill")
    assert doc["runs"] == len(calls) and doc["wall_s"] >= 0 and doc["workload_s"] > 0 and doc["drawn"] == 12
    assert len(f["seen_in"]) >= 1, "later draws with both kinds are the same finding"
    d = tmp_path / "hunt" / f["dir"]
    assert {p.name for p in d.iterdir()} >= {"minimal.toml", "original.toml", "bug.md", "original", "minimal",
                                             "report.html"}
    minimal = scenario_mod.load(d / "minimal.toml")
    assert needs_kill_and_cut(minimal) and len(minimal.faults) == 2
    assert minimal.topic.name == "chaos", "the scenario's topic, not the one a drawn run had on a shared cluster"
    assert not list((tmp_path / "hunt" / "findings").glob(".*partial"))


def test_a_confirmation_whose_trigger_never_fired_is_a_miss_the_finding_counts_as_unfired(tmp_path):
    """A re-run whose triggered fault never fired misses the schedule as written, and counts so in the
    rate; hunt.json and the announcement also say how many of the misses had a fault that never acted, so a finding
    not reproduced reads apart from one whose faults met their moment and showed nothing."""
    said: list[str] = []
    found = rule([])

    def go(path: Path, s: Scenario, reuse: bool) -> Verdict:
        v = found(path, s, reuse)
        if path.name.rsplit("-", 1)[-1] == "c1":  # the first re-run: its trigger never fired, nothing lost
            v = verdict({}).model_copy(update={"run_dir": str(path), "verdict": "not exercised",
                                               "not_exercised": ["kill on isr_shrink"]})
            verdict_mod.write(path, v)
        return v

    hunt(options(tmp_path, confirm=3), announce=said.append, go=go)
    f = json.loads((tmp_path / "hunt" / "hunt.json").read_text())["findings"][0]
    assert f["confirmed"] == {"k": 2, "n": 3, "unfired": 1}
    assert any("confirmed 2 of 3, 1 of them with a fault that never acted, reproduced" in m for m in said), said


def test_a_findings_runs_share_the_kept_cluster_each_on_a_topic_of_its_own_unless_asked_not_to(tmp_path):
    runs_on: dict = {}
    hunt(options(tmp_path / "kept"), announce=lambda m: None, go=rule([], runs_on=runs_on))
    findings_runs = {n: v for n, v in runs_on.items() if n.rsplit("-", 1)[-1][:1] in "csm"}
    assert findings_runs and all(reuse for reuse, _ in findings_runs.values()), "acks=1 with no group: it may share"
    topics = [t for _, t in runs_on.values()]
    assert len(set(topics)) == len(topics), "no two runs on one topic"
    fresh: dict = {}
    hunt(options(tmp_path / "fresh", fresh_findings=True), announce=lambda m: None, go=rule([], runs_on=fresh))
    assert not [n for n, (reuse, _) in fresh.items() if reuse and n.rsplit("-", 1)[-1][:1] in "csm"]
    assert [t for _, t in fresh.values() if not t.startswith("chaos-")], "--fresh-findings: the scenario's topic"


def test_the_same_command_again_resumes_without_running_what_is_done(tmp_path):
    first: list[str] = []
    hunt(options(tmp_path, runs=6), announce=lambda m: None, go=rule(first))
    again: list[str] = []
    before = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    hunt(options(tmp_path, runs=6), announce=lambda m: None, go=rule(again))
    assert again == [] and json.loads((tmp_path / "hunt" / "hunt.json").read_text())["findings"] == before["findings"]
    more: list[str] = []
    out = hunt(options(tmp_path, runs=9), announce=lambda m: None, go=rule(more))
    assert all(name.startswith(("h0006", "h0007", "h0008")) for name in more) and out.drawn == 9


def test_another_hunt_in_the_same_directory_is_refused(tmp_path):
    hunt(options(tmp_path, runs=1), announce=lambda m: None, go=rule([]))
    with pytest.raises(HuntError, match="another hunt"):
        hunt(options(tmp_path, runs=1, seed=2), announce=lambda m: None, go=rule([]))


def test_a_finding_that_never_reproduces_is_reported_so_and_not_shrunk(tmp_path):
    calls: list[str] = []
    flaky = {f"h{n:04d}-acks1-leader-kill-3.9.1-zk-c{i}" for n in range(40) for i in (1, 2)}
    out = hunt(options(tmp_path, runs=60), announce=lambda m: None, go=rule(calls, flaky))
    f = out.findings[0]
    assert f.confirmed == (0, 2) and f.reproduced == (0, 2) and f.minimal == f.original.model_copy(
        update={"name": f.minimal.name, "description": f.minimal.description})
    assert not any("-s" in c.rsplit("-", 1)[-1] for c in calls), "nothing is shrunk that did not reproduce"
    lost = [c for c in calls if c.endswith("-zk") and json.loads(
        (tmp_path / "hunt" / "runs" / c / "verdict.json").read_text())["anomalies"]["lost"]]
    assert {f.found_in for f in out.findings} | {r for f in out.findings for r in f.seen_in} == set(lost)
    assert len(out.findings) > 1 and any(f.seen_in for f in out.findings), "sightings investigated, then noted"
    assert max(Counter(f.signature for f in out.findings).values()) == INVESTIGATIONS_UNREPRODUCED


def test_a_failure_seen_again_after_its_finding_did_not_reproduce_is_investigated_again(tmp_path):
    """The first finding's re-runs show nothing; the next run that shows the same failure is a second
    sighting in a schedule of its own: investigated, it reproduces and is shrunk."""
    said: list[str] = []
    first: list[str] = []
    stand_in = rule([])

    def go(path: Path, s: Scenario, reuse: bool) -> Verdict:
        if first and path.name.startswith(f"{first[0]}-c"):
            return rule([], flaky={path.name})(path, s, reuse)
        v = stand_in(path, s, reuse)
        if not first and path.name.endswith("-zk") and v.anomalies["lost"]:
            first.append(path.name)
        return v

    out = hunt(options(tmp_path), announce=said.append, go=go)
    assert [f.confirmed for f in out.findings[:2]] == [(0, 2), (2, 2)], out.findings
    assert out.findings[1].found_in != first[0] and len(out.findings[1].minimal.faults) == 2
    assert any("which did not reproduce: investigating this run too" in m and "01-lost" in m for m in said)


def test_a_time_budget_ends_the_hunt_with_what_it_found(tmp_path):
    out = hunt(options(tmp_path, runs=None, budget_s=0), announce=lambda m: None, go=rule([]))
    assert out.drawn == 0 and out.exit_code == 0
    assert json.loads((tmp_path / "hunt" / "hunt.json").read_text())["runs"] == 0


def test_hits_name_their_key():
    assert Hit("lost", "acks=1", 3, False, "").key == ("lost", "acks=1")


def test_draws_with_and_without_client_faults_have_one_clusters_settings(tmp_path):
    """Every drawn run on the kept cluster gives the producer links of its own, whether its schedule
    aims a fault at them or not, so a draw with a client fault does not boot a cluster of its own."""
    seen: list[tuple[Scenario, bool]] = []

    def go(path: Path, s: Scenario, reuse: bool) -> Verdict:
        seen.append((s, reuse))
        fake_run(path, s, {})
        return verdict_mod.read(path)

    opts = options(tmp_path, runs=12, sets=('hunt.kinds=["kill", "client_latency"]', "hunt.faults=[1, 2]",
                                            "hunt.triggers=0"))
    hunt(opts, announce=lambda m: None, go=go)
    with_client_fault = [s for s, _ in seen if any(f.kind == "client_latency" for f in s.faults)]
    assert with_client_fault and len(with_client_fault) < len(seen), "the draws differ in it"
    assert all(reuse for _, reuse in seen)
    assert len({json.dumps(s.cluster_settings().model_dump(), sort_keys=True) for s, _ in seen}) == 1
    assert seen[0][0].cluster_settings().private_clients == ["acks1"]


def test_a_run_shares_a_cluster_with_earlier_draws_unless_its_faults_outlive_it():
    from harness.run.kept_cluster import may_share_a_cluster

    assert may_share_a_cluster(scenario(faults=[fault("kill"), fault("power_loss", 5)]))
    for name in ("txn-clean", "group-clean", "txn-copier-crash", "share-poison-records"):
        assert may_share_a_cluster(scenario_mod.load(SCENARIOS / f"{name}.toml")), f"{name}: its ids are its own"
    kraft = scenario_mod.load(SCENARIOS / "controller-remove.toml")
    assert not may_share_a_cluster(kraft), "a quorum change outlives its run"
    formed = scenario(cluster={"formation": {"kind": "kill", "duration_s": 2}})
    assert not may_share_a_cluster(formed), "a faulted formation happens once, as its cluster starts"


def test_a_hunt_draws_a_faulted_formation_for_its_share_of_runs_and_no_draw_more_without_one():
    import random

    from harness.hunt.space import draw, vocabulary

    s = scenario_mod.load(SCENARIOS / "hunt" / "controller-membership.toml")
    with_share = s.model_copy(update={"hunt": s.hunt.model_copy(update={"formation": 0.5})})
    rng = random.Random(7)
    drawn = [draw(with_share, rng, vocabulary(with_share)).cluster_settings().formation for _ in range(24)]
    faulted = [f for f in drawn if f is not None]
    assert 4 <= len(faulted) <= 20, len(faulted)
    assert {f.kind for f in faulted} <= {"kill", "stop", "pause"} and all(0 <= f.delay_s <= 1.5 for f in faulted)
    assert {f.after for f in faulted} == {"elected", "registering"}
    lo, hi = s.hunt.fault_duration_s
    assert all(lo <= f.duration_s <= hi for f in faulted)
    without = s.model_copy(update={"hunt": s.hunt.model_copy(update={"formation": 0.0})})
    never = without.model_copy(update={"cluster": {k: v for k, v in s.cluster.items() if k != "formation"}})
    assert s.cluster_settings().formation is not None and never.cluster_settings().formation is None
    a, b = random.Random(7), random.Random(7)
    for _ in range(5):
        got = draw(without, a, vocabulary(without))
        assert got == draw(never, b, vocabulary(never)), "no formation share: no draw, the same schedule"
        assert got.cluster_settings().formation is None, "the scenario's own formation is not a draw's"


def test_shards_merge_into_one_finding_a_signature(tmp_path):
    """Two machines each draw every other schedule (--shard 1/2 and 2/2); --merge gives one account:
    the same failure found on both is one finding, copied whole, the other named in also_in."""
    import subprocess
    import sys

    from harness.hunt.merge import merge

    dirs = []
    for k in (1, 2):
        opts = options(tmp_path, runs=6, shard=(k, 2))
        opts = HuntOptions(**{**opts.__dict__, "out": tmp_path / f"shard{k}"})
        hunt(opts, announce=lambda m: None, go=rule([]))
        dirs.append(opts.out)
    shards = [json.loads((d / "hunt.json").read_text()) for d in dirs]
    assert all(len(s["findings"]) == 1 for s in shards), "each shard finds the kill-and-cut loss"
    doc = merge(dirs, tmp_path / "merged")
    assert doc["runs"] == sum(s["runs"] for s in shards) and doc["drawn"] == 12
    (f,) = doc["findings"]
    assert f["signature"] == shards[0]["findings"][0]["signature"] and len(f["also_in"]) == 1
    assert (tmp_path / "merged" / f["dir"] / "minimal.toml").exists()
    assert not list((tmp_path / "merged").glob(".*partial"))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "harness", "hunt", "--merge", *map(str, args)],
                              capture_output=True, text=True)

    r = cli(*dirs, "--out", tmp_path / "merged")
    assert r.returncode == 1 and "1 findings" in r.stderr + r.stdout, r.stdout + r.stderr
    r = cli(dirs[0], tmp_path / "nowhere", "--out", tmp_path / "m2")
    assert r.returncode == 2 and "nowhere/hunt.json: not found" in r.stderr and not (tmp_path / "m2").exists()
    r = cli(dirs[0], "--out", dirs[1])
    assert r.returncode == 2 and "holds a hunt of its own" in r.stderr


def test_an_offset_regression_is_shown_in_the_coordinators_and_the_members_own_logs(tmp_path):
    """bug.md's mechanism: the coordinator's commits of the regressed partition, the step back marked,
    and the committing member's librdkafka lines on its commits (other partitions' lines left out)."""
    from harness.hunt.evidence import evidence

    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "members" / "g").mkdir(parents=True)
    commit = ('| offset: {o} CreateTime: {t} keySize: 16 valueSize: 24 sequence: 0 headerKeys: [] key: '
              '{{"type":"1","data":{{"group":"g","topic":"t","partition":1}}}} payload: '
              '{{"version":"3","data":{{"offset":{v},"leaderEpoch":0}}}}')
    metadata = ('| offset: 0 CreateTime: 1000 keySize: 5 valueSize: 99 sequence: -1 headerKeys: [] key: '
                '{"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"generation":5,"members":[]}}')
    (run / "logs" / "group-coordinator.log").write_text("\n".join(
        [metadata, *(commit.format(o=o, t=1000 + o, v=v) for o, v in [(1, 50), (2, 90), (3, 60), (4, 95)])]))
    (run / "members" / "g" / "g-2.jsonl").write_text(
        '{"t": "commit", "topic": "t", "partition": 1, "offset": 90, "ts_ms": 5000}\n'
        '{"t": "commit", "topic": "t", "partition": 1, "offset": 60, "ts_ms": 5100}\n')
    (run / "members" / "g" / "g-2.log").write_text("\n".join([
        "%7|4.000|OFFSET|c| [thrd:main]: Topic t [1]: stored offset 60: setting stored offset 60  for commit",
        "%7|4.000|OFFSET|c| [thrd:main]: Topic t [0]: stored offset 70: setting stored offset 70  for commit",
        "%7|4.001|SEND|c| [thrd:GroupCoordinator]: GroupCoordinator/3: Sent OffsetCommitRequest (v9, CorrId 25)",
        "%7|4.500|RETRY|c| [thrd:GroupCoordinator]: GroupCoordinator: Retrying OffsetCommitRequest (v9, 120 bytes, "
        "retry 1/2, prev CorrId 25) in 100ms",
        "%7|4.501|HEARTBEAT|c| [thrd:main]: unrelated",
        "%7|9.000|RETRY|c| [thrd:GroupCoordinator]: after the regression was acknowledged",
    ]))
    v = verdict({"offset_regression": 1})
    v.examples["offset_regression"] = [{"group": "g", "topic": "t", "partition": 1, "offset": 60, "ts_ms": 5100,
                                        "prev_offset": 90, "prev_ts_ms": 5000}]
    text = "\n".join(evidence("offset_regression", run, v))
    assert "| 3 | 1003 | 5 | 60 | moved back |" in text and "| 2 | 1002 | 5 | 90 |  |" in text, \
        "each commit with the generation it was written in"
    assert "`g-2`" in text and "prev CorrId 25" in text and "stored offset 60" in text
    assert "Topic t [0]" not in text and "unrelated" not in text and "after the regression" not in text
    assert evidence("lost", run, v) == [], "no mechanism to show beyond kchaos's own records"


def test_checks_that_go_on_beside_the_next_run_give_the_same_hunt(tmp_path):
    """With a check returned to do later (as real runs return it), a drawn run's check goes on while
    the next drawn run runs, and the hunt looks at it after: the same findings, the same runs."""
    import threading

    calls: list[str] = []
    order: list[str] = []
    second_ran = threading.Event()

    def deferred(path: Path, s: Scenario, reuse: bool):
        verdict = rule(calls)(path, s, reuse)
        order.append(f"ran {path.name}")
        if path.name.startswith("h0001"):
            second_ran.set()

        def check():
            if path.name.startswith("h0000"):  # waits for the next run: it must not wait for this check
                order.append(f"overlapped {second_ran.wait(10)}")
            order.append(f"checked {path.name}")
            return verdict

        return check

    one_at_a_time: list[str] = []
    base = hunt(options(tmp_path / "a"), announce=lambda m: None, go=rule(one_at_a_time))
    out = hunt(options(tmp_path / "b"), announce=lambda m: None, go=deferred)
    assert calls == one_at_a_time
    assert [f.to_json(tmp_path) | {"dir": None} for f in out.findings] == \
        [f.to_json(tmp_path) | {"dir": None} for f in base.findings]
    assert "overlapped True" in order, "the second run went on while the first was checked"
    spent = json.loads((tmp_path / "b" / "hunt" / "hunt.json").read_text())
    assert spent["runs"] == len(calls) and spent["drawn"] == 12


def test_parallel_shards_are_the_same_hunt_each_with_its_own_directory(tmp_path):
    from harness.hunt.parallel import shard_commands

    opts = HuntOptions(scenarios=("smoke", "acks1-leader-kill"), out=tmp_path / "h", goal=Goal.parse("lost,divergence"),
                       seed=7, runs=5, confirm=2, measure=10, sets=("duration_s=10",), versions=("3.9.1",))
    cmds = shard_commands(opts, 2)
    assert len(cmds) == 2
    for k, c in enumerate(cmds, start=1):
        text = " ".join(c)
        assert text.endswith(f"--shard {k}/2 --out {tmp_path / 'h' / 'shards' / f'{k}-of-2'}")
        for part in ("hunt smoke acks1-leader-kill", "--seed 7", "--runs 3", "--confirm 2", "--measure 10",
                     "--anomaly divergence,lost", "--set duration_s=10", "--versions 3.9.1"):
            assert part in text, part
    budget = shard_commands(HuntOptions(scenarios=("smoke",), out=tmp_path / "h", budget_s=1800), 3)
    assert all("--budget 1800" in " ".join(c) and "--runs" not in c for c in budget)


def test_parallel_refuses_a_shard_and_a_hunts_own_directory(tmp_path):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "harness", "hunt", "smoke", "--runs", "1", *map(str, args)],
                              capture_output=True, text=True)

    r = cli("--parallel", "2", "--shard", "1/2", "--out", tmp_path / "p")
    assert r.returncode == 2 and "--parallel or --shard" in r.stderr
    hunt(options(tmp_path, runs=1), announce=lambda m: None, go=rule([]))
    r = cli("--parallel", "2", "--out", tmp_path / "hunt")
    assert r.returncode == 2 and "holds a hunt of one process" in r.stderr


def test_a_finding_whose_shrunk_schedule_could_not_be_measured_is_written_as_found(tmp_path, monkeypatch):
    """The budget ran out after shrinking, before the first measurement: the finding keeps the
    schedule its confirmations measured and their rate, never "0 of 0"."""
    from harness.hunt import loop

    calls: list[str] = []
    monkeypatch.setattr(loop.Hunt, "out_of_time", property(lambda self: any("-m" in c[-3:] for c in calls) or
                                                          any(c.endswith("-s02") for c in calls)))
    out = hunt(options(tmp_path, runs=6), announce=lambda m: None, go=rule(calls))
    f = out.findings[0]
    assert f.shrink_judged >= 1, "shrinking ran"
    assert f.reproduced == f.confirmed and f.reproduced[1] > 0
    assert f.minimal.faults == f.original.faults


def test_the_evidence_of_an_isr_not_restored_is_what_the_brokers_logged_of_that_partition(tmp_path):
    from harness.hunt.evidence import evidence

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kafka-1.log").write_text(
        "[t1] INFO [Partition chaos-0 broker=1] Shrinking ISR from 1,2,3 to 1,3. Leader: ...\n"
        "[t2] INFO [Partition chaos-1 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: ...\n"
        "[t3] WARN Client session timed out, have not heard from server in 4000ms for session id 0x3\n"
        "org.apache.zookeeper.ClientCnxn$SessionTimeoutException: Client session timed out, have not heard\n"
        "[t4] INFO [Controller id=1] Failed to update ISR to LeaderAndIsr(..) for partition chaos-0, bad ZK version\n")
    (logs / "kafka-2.log").write_text("[t0] INFO [ZooKeeperClient Kafka server] Connected.\n")
    v = verdict({}).model_copy(update={"verdict": "fail", "not_healed": [
        NotHealed(topic="chaos", partition=0, leader=1, isr=[1, 3], replicas=[1, 2, 3], waited_s=120)]})
    text = "\n".join(evidence("isr_not_restored", tmp_path, v))
    assert "`kafka-1.log`" in text and "`kafka-2.log`" not in text, "only brokers that logged the partition"
    assert "chaos-0 broker=1] Shrinking" in text and "bad ZK version" in text and "have not heard" in text
    assert "chaos-1" not in text and "SessionTimeoutException:" not in text


def test_a_run_whose_history_cannot_be_checked_is_recorded_and_the_hunt_goes_on(tmp_path):
    """A run directory that breaks the history contract is kchaos's own failure: it is said and
    recorded as the run's error, not the end of an hour's campaign."""
    from harness.history import HistoryError

    said: list[str] = []
    plain = rule([])

    def go(path: Path, s: Scenario, reuse: bool):
        verdict = plain(path, s, reuse)
        if path.name.startswith("h0001"):
            def broken():
                raise HistoryError(f"{path}/consumed.parquet: no rows with phase 'final'")
            return broken
        return lambda: verdict

    out = hunt(options(tmp_path, runs=3), announce=said.append, go=go)
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    assert out.drawn == 3 and doc["errors"] == 1
    (name,) = [n for n, c in doc["spent"].items() if c.get("error")]
    assert name.startswith("h0001") and doc["spent"][name]["error"].startswith("history: ")
    assert any("could not be checked" in m for m in said)


def test_a_run_that_could_not_run_is_not_run_again_when_the_hunt_resumes(tmp_path):
    """Later draws build on what each run showed: a resumed hunt that ran a failed run again would
    draw other schedules after it than the first one did, and refuse its own runs."""
    from harness.hunt.trials import RunFailed
    from harness.run.directory import RunDirectory, could_not_run_dir

    first: list[str] = []
    go = rule(first)

    def fails_once(path: Path, s: Scenario, reuse: bool) -> Verdict:
        if path.name.startswith("h0002"):
            RunDirectory(path).set_aside(s, RuntimeError("container kafka-3 exited (code 1)"))
            raise RunFailed("container kafka-3 exited (code 1)")
        return go(path, s, reuse)

    hunt(options(tmp_path, runs=6, confirm=0), announce=lambda m: None, go=fails_once)
    failed = next(p for p in (tmp_path / "hunt" / "runs").iterdir() if p.name.startswith("h0002"))
    assert failed == could_not_run_dir(failed.with_name(failed.name.removesuffix(".could-not-run")))
    assert (failed / "error.txt").read_text().startswith("RuntimeError: container kafka-3 exited")
    again: list[str] = []
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    hunt(options(tmp_path, runs=6, confirm=0), announce=lambda m: None, go=rule(again))
    assert again == [], "nothing run again, the failed run included"
    assert json.loads((tmp_path / "hunt" / "hunt.json").read_text())["errors"] == doc["errors"] == 1


def test_clusters_that_did_not_form_do_not_give_the_hunt_up_but_three_other_failures_do(tmp_path):
    """A cluster that did not form after its formation fault is what that run looked for (Kafka's
    result, not the machine's): five in a row leave the hunt going. Three runs in a row that could
    not be carried out for any other reason stop it (exit 3)."""
    from harness.cluster.formation import FORMATION_FAILED
    from harness.hunt.trials import CannotRun, RunFailed

    def unformed(path: Path, s: Scenario, reuse: bool) -> Verdict:
        raise RunFailed(f"{FORMATION_FAILED} (node 101, epoch 1) was faulted (kill for 3 s, ...): brokers did not "
                        "all register within 120 s")

    hunt(options(tmp_path / "a", runs=5, confirm=0), announce=lambda m: None, go=unformed)
    doc = json.loads((tmp_path / "a" / "hunt" / "hunt.json").read_text())
    assert doc["errors"] == 5

    def broken(path: Path, s: Scenario, reuse: bool) -> Verdict:
        raise RunFailed("container kafka-3 exited (code 1)")

    with pytest.raises(CannotRun, match="three runs in a row"):
        hunt(options(tmp_path / "b", runs=5, confirm=0), announce=lambda m: None, go=broken)


def test_a_hunt_begun_before_failed_runs_were_kept_does_not_run_them_again(tmp_path):
    """hunt.json's record of a run that could not run is enough when nothing of it was kept."""
    hunt(options(tmp_path, runs=3, confirm=0), announce=lambda m: None, go=rule([]))
    doc = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    name = sorted(doc["spent"])[1]
    import shutil

    shutil.rmtree(tmp_path / "hunt" / "runs" / name)
    doc["spent"][name] = {"wall_s": 29.0, "workload_s": 0.0, "error": "container kafka-3 exited (code 1)"}
    (tmp_path / "hunt" / "hunt.json").write_text(json.dumps(doc))
    again: list[str] = []
    hunt(options(tmp_path, runs=3, confirm=0), announce=lambda m: None, go=rule(again))
    assert again == []


def test_a_failed_run_kept_under_another_scenario_is_refused(tmp_path):
    from harness.run.directory import RunDirectory

    hunt(options(tmp_path, runs=1, confirm=0), announce=lambda m: None, go=rule([]))
    (name,) = json.loads((tmp_path / "hunt" / "hunt.json").read_text())["spent"]
    import shutil

    shutil.rmtree(tmp_path / "hunt" / "runs" / name)
    RunDirectory(tmp_path / "hunt" / "runs" / name).set_aside(scenario(seed=99), RuntimeError("x"))
    with pytest.raises(HuntError, match="another scenario"):
        hunt(options(tmp_path, runs=1, confirm=0), announce=lambda m: None, go=rule([]))


def test_a_run_that_cannot_be_carried_out_keeps_every_containers_log_and_its_error(tmp_path):
    """runner.execute's path for a cluster failure, with a stand-in for the cluster's logs: what is
    kept is every container's log, the scenario and the error, and nothing partial."""
    from harness.cluster import ClusterError
    from harness.run import runner
    from harness.run.directory import RunDirectory, read_could_not_run

    class Logs:
        def write_logs(self, logs_dir, missing_ok=False):  # KafkaCluster.write_logs: kafka-1 already gone
            assert missing_ok
            logs_dir.mkdir(parents=True, exist_ok=True)
            (logs_dir / "kafka-3.log").write_text("ERROR Exiting Kafka due to fatal exception\n")

    s = scenario()
    d = RunDirectory(tmp_path / "run")
    with pytest.raises(ClusterError):
        try:
            with runner._container_logs_kept(Logs(), d.path / "logs"):
                raise ClusterError("container kafka-3 exited (code 1):\nExiting Kafka")
        except ClusterError as e:
            kept = d.set_aside(s, e)
            raise
    assert sorted(p.name for p in (kept / "logs").iterdir()) == ["kafka-3.log"]
    assert "fatal exception" in (kept / "logs" / "kafka-3.log").read_text()
    ran, error = read_could_not_run(tmp_path / "run")
    assert Scenario.model_validate(ran) == s and error.startswith("ClusterError: container kafka-3 exited")
    assert not list(tmp_path.glob(".*partial")) and not (tmp_path / "run").exists()


def test_a_run_on_a_kept_cluster_holds_ids_no_other_run_holds_and_keeps_its_names():
    """Groups, share groups, transactional producers and the copier get ids of their own on a kept
    cluster (what the cluster keeps under an id is then no earlier run's); the names faults aim at
    and the verdict reads stay the scenario's."""
    from harness.run.kept_cluster import with_topic_and_ids_of_its_own

    s = scenario_mod.load(SCENARIOS / "txn-clean.toml")
    s = s.model_copy(update={"groups": [scenario_mod.GroupSpec(name="g", members=2)],
                             "copier": s.copier.model_copy(update={"output_topic": "copies"})})
    runs = [with_topic_and_ids_of_its_own(s, tag) for tag in ("h0001", "h0002")]
    ids = [(r.topic.name, r.groups[0].group_id, r.copier.group_id, r.copier.transactional_id, r.copier.output_topic,
            *[p.transactional_id_of(n) for p in r.producers if p.transactional for n in p.instance_names])
           for r in runs]
    assert not set(ids[0]) & set(ids[1]), ids
    assert ids[0][:5] == ("chaos-h0001", "g-h0001", "kchaos-copier-h0001", "kchaos-copier-h0001", "copies-h0001")
    assert (s.groups[0].group_id, s.copier.group_id) == ("g", "kchaos-copier"), "a run of its own: the names"
    for r in runs:
        assert [g.name for g in r.groups] == ["g"] and r.groups[0].member_names == ["g-1", "g-2"]
        assert [p.name for p in r.producers] == [p.name for p in s.producers] and r.copier.group == s.copier.group
        assert [p.ids_suffix for p in r.producers if not p.transactional] == [""] * sum(
            not p.transactional for p in s.producers), "a plain producer holds no id"
