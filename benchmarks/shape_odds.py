"""How often a fresh swarm draw holds the faults a known answer's mechanism needs: the odds that
bound how soon a hunt of random draws can find it, whatever it does with the runs.

    python -m benchmarks.shape_odds [--answers f2-frozen-isr,epochs-off-divergence] [--guides swarm,coverage]
                                   [--draws 4000] [--seed 1]

A hunt's fresh draws (harness/hunt/space.py, ``draw`` over a ``swarm`` subset of the fault kinds)
are made here as a hunt makes them, from the scenario the benchmark hunts (benchmarks/hunt_guides.py,
``ANSWERS``), and nothing is run. Each answer's **shape** is what its catalogued schedule and its
mechanism in docs/findings.md need of a schedule, as faults and their timing:

- f2-frozen-isr: one follower stops fetching (cut from its leader, isolated, frozen, stopped or
  killed) for at least ``replica.lag.time.max.ms`` plus the leader's 1.5 s check, so the leader asks
  for an ISR shrink; and the controller hears nothing from ZooKeeper (``cut_coordination`` of the
  controller, downstream) from before that ask until after it.
- epochs-off-divergence: a follower's fetch responses held (``cut_fetch`` downstream) and its
  partition's leader taken away while they are held, 4 s (the scenario's request timeout, after
  which the held follower truncates) or more after the hold began: stopped or killed, or frozen or
  cut off for as long as its session lasts (shorter, it keeps its leadership). The catalogue's
  schedule also bumps the leader epoch in between (another follower's clean stop), which this shape
  does not ask for: its odds are an upper bound.

Triggered faults are counted only with their kind and target, as if they fired at the best moment,
so these odds too are upper bounds. For the coverage guide (harness/hunt/coverage_guide.py) the
draws are its fresh ones, half of them aimed at a state on the goal's way; its mutations build on
what its runs reached, which a draw without runs cannot show.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable

from benchmarks.hunt_guides import ANSWERS
from harness.faults import FAULTS, SILENCES_ITS_BROKER
from harness.hunt.coverage_guide import CoverageCorpus, next_schedule
from harness.hunt.goal import Goal
from harness.hunt.guide import swarm
from harness.hunt.space import draw, fails_its_broker, session_s, vocabulary
from harness.scenario import FaultSpec, Scenario
from harness.scenario.catalogue import find
from harness.scenario.loading import load

STOPS_FETCHING = frozenset({"cut_fetch", "isolate", "pause", "restart", "kill", "power_loss", "cut_replication"})
LEADER_CHECK_S = 1.5  # Kafka's leader looks for lagging followers this often (ReplicaManager's isr-expiration)
HELD_FOLLOWER_TIMES_OUT_S = 4.0  # hw-truncation-loss's request.timeout.ms: a held fetch fails, then truncates


def _span(f: FaultSpec) -> tuple[float, float]:
    """When a timed fault is on; a triggered one counts as on at any time."""
    return (f.at_s, f.at_s + f.duration_s) if f.on is None else (float("-inf"), float("inf"))


def _follower(f: FaultSpec) -> bool:
    return str(f.target) in ("follower", "followers") or str(f.target).startswith("follower:")


def f2_shape(s: Scenario) -> bool:
    """A follower stops fetching long enough for the leader to ask for a shrink, and the controller's
    ZooKeeper answers are cut from before the ask to after it (docs/findings.md, F2)."""
    lag_s = s.cluster_settings().replica_lag_time_max_ms / 1000
    for lag in (f for f in s.faults if f.kind in STOPS_FETCHING and _follower(f)):
        start, end = _span(lag)
        if end - start < lag_s + LEADER_CHECK_S:
            continue
        first_ask, last_ask = start + lag_s, start + lag_s + LEADER_CHECK_S
        for cut in (f for f in s.faults if f.kind == "cut_coordination" and str(f.target) == "controller"
                    and f.stream == "downstream"):
            c0, c1 = _span(cut)
            if c0 <= last_ask and c1 >= first_ask:
                return True
    return False


def leader_taken(f: FaultSpec, session: float) -> bool:
    """A fault on the leader that takes its leadership: one that fails its broker
    (``fails_its_broker``), a silence for as long as its session."""
    if str(f.target) != "leader" or not fails_its_broker(f.kind):
        return False
    return SILENCES_ITS_BROKER not in FAULTS[f.kind].effects or f.duration_s >= session


def epochs_off_shape(s: Scenario) -> bool:
    """A follower's fetch responses held, and its leader taken away while they are held, once the
    held fetch has timed out (the follower truncated to its high watermark)."""
    session = session_s(s)
    for hold in (f for f in s.faults if f.kind == "cut_fetch" and f.stream == "downstream" and _follower(f)):
        h0, h1 = _span(hold)
        for take in (f for f in s.faults if leader_taken(f, session)):
            t0, _ = _span(take)
            if h0 + HELD_FOLLOWER_TIMES_OUT_S <= t0 <= h1 or take.on is not None:
                return True
    return False


SHAPES: dict[str, Callable[[Scenario], bool]] = {"f2-frozen-isr": f2_shape, "epochs-off-divergence": epochs_off_shape}


def base_scenario(answer: str) -> Scenario:
    """The scenario a hunt of ``answer`` draws from, with the benchmark's ``--set`` applied."""
    args = ANSWERS[answer]
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    return load(find(args[0]), sets)


def goal(answer: str) -> Goal:
    args = ANSWERS[answer]
    return Goal.parse(args[args.index("--anomaly") + 1] if "--anomaly" in args else None)


def odds(answer: str, guide: str, draws: int, seed: int) -> int:
    """How many of ``draws`` fresh draws of ``guide`` hold the answer's shape: swarm's, or the coverage
    guide's before its corpus has an entry (half of them aimed at a state on the goal's way)."""
    s = base_scenario(answer)
    moves = vocabulary(s)
    rng = random.Random(seed)
    corpus = CoverageCorpus(on_the_way=goal(answer).on_the_way)
    fresh: Callable[[], Scenario] = (
        (lambda: draw(s, rng, swarm(rng, moves))) if guide == "swarm"
        else (lambda: next_schedule(s, rng, moves, corpus, "")[0]))
    return sum(SHAPES[answer](fresh()) for _ in range(draws))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", default=",".join(SHAPES))
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--guides", default="swarm,coverage")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    answers, guides = a.answers.split(","), a.guides.split(",")
    for option, given, allowed in (("--answers", answers, list(SHAPES)), ("--guides", guides, ["swarm", "coverage"])):
        unknown = [x for x in given if x not in allowed]
        if unknown:
            print(f"{option}: {', '.join(unknown)} (allowed: {', '.join(allowed)})", file=sys.stderr)
            sys.exit(2)
    for answer in answers:
        for guide in guides:
            hits = odds(answer, guide, a.draws, a.seed)
            per = f"1 in {a.draws / hits:.0f}" if hits else f"none in {a.draws}"
            print(f"{answer}: {hits} of {a.draws} fresh {guide} draws hold the shape ({per})", flush=True)


if __name__ == "__main__":
    main()
