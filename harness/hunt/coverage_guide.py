"""Coverage-guided draws: a corpus of schedules that reached protocol states no earlier run of the
hunt reached, mutated with more energy where their children paid off.

A run's **features** are what its verdict says it reached (harness/checker/coverage.py's protocol
states, harness/checker/exposure.py's records at risk, the anomaly classes counted, promised or
not), each count put in a bucket as AFL puts its edge hit counts (1, 2, 3, 4-7, 8-15, 16+), so a
state reached more often is new coverage too, but not every extra time. A drawn run with a feature
no earlier run of its base had joins the corpus; a later draw picks an entry by its **energy** and
mutates it (havoc: one to three of a fault added, dropped, moved, lengthened or shortened, aimed
elsewhere, changed to another kind, or the schedule's tail spliced from another entry). An entry's
energy is the new features it brought plus those its children brought later, divided by how often
it was picked, so the hunt spends its draws where they keep finding states (as AFLFast's power
schedules do) and an entry that stops paying off gives way. An entry is picked by its energy times
one plus ON_THE_WAY_WEIGHT for each state it reached that the hunt's goal passes through
(harness/hunt/goal.py, ``ON_THE_WAY``: a leader change for a loss, a producer's epoch bump for a
duplicate), as a directed fuzzer (AFLGo) weights inputs by their distance to its target.

A corpus weights only what its runs happened to reach, so before a run has reached a state on the
goal's way nothing steers towards it, and the hunt's first draws are as random as swarm's. So a
share of the fresh draws (AIM_SHARE) is **aimed**: a swarm draw with one of its faults replaced by a
fault meant to enter a state on the goal's way (harness/checker/coverage.py, ``AIMED_BY``: a kill of
a group's coordinator for an offset regression, a cut of the controller for a frozen ISR, a fault on
the partition's leader for a loss), as a directed fuzzer seeds its queue with inputs that reach its
target's neighbourhood.

Everything here is a function of the hunt's seed and of what the runs showed: a resumed hunt, which
reads its runs back in the same order, rebuilds the same corpus and draws the same schedules.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import ValidationError

from harness.checker.coverage import AIMED_BY, ENTERED_BY_A_LEADER_TAKEN
from harness.checker.verdict import Verdict
from harness.hunt.guide import swarm
from harness.hunt.space import (
    FIRST_FAULT_S,
    QUIET_TAIL_S,
    Move,
    bounds,
    draw,
    draw_fault,
    takes_the_leader,
    with_faults,
)
from harness.scenario import Scenario

BUCKETS = (1, 2, 3, 4, 8, 16)  # a count's bucket is the greatest of these it reaches
MAX_FAULTS_BEYOND = 2  # a mutation may have this many faults beyond the [hunt] table's maximum
ON_THE_WAY_WEIGHT = 2.0  # an entry's weight grows by this for each state on the goal's way it reached
MUTATE_SHARE = 0.5  # once the corpus has entries, this share of draws mutates one; the rest are fresh
AIM_SHARE = 0.5  # this share of fresh draws has a fault aimed at a state on the goal's way, where one can be
HAVOC = (1, 3)  # how many mutation operators one child gets


def bucket(n: int) -> int:
    """The bucket of a count above 0 (AFL's hit-count classes)."""
    return max(b for b in BUCKETS if n >= b)


def features(v: Verdict) -> frozenset[str]:
    """What a run reached, as the corpus compares runs: ``state:STATE:BUCKET`` per protocol state
    entered, ``exposed:KIND:BUCKET`` per fault kind that put acknowledged records at risk (and
    ``lost:KIND:BUCKET`` where the final log lacks some of them), ``anomaly:CLASS`` per class counted."""
    out = {f"state:{s}:{bucket(n)}" for s, n in v.coverage.items() if n > 0}
    exposed: dict[str, int] = {}
    lost: dict[str, int] = {}
    for e in v.exposure:
        exposed[e.kind] = exposed.get(e.kind, 0) + e.exposed
        lost[e.kind] = lost.get(e.kind, 0) + e.lost
    out |= {f"exposed:{k}:{bucket(n)}" for k, n in exposed.items() if n > 0}
    out |= {f"lost:{k}:{bucket(n)}" for k, n in lost.items() if n > 0}
    out |= {f"anomaly:{a}" for a, n in v.anomalies.items() if n > 0}
    return frozenset(out)


@dataclass
class Entry:
    """A schedule in the corpus: the run it came from, the features it brought first, and what its
    children brought since."""

    name: str
    schedule: Scenario
    brought: frozenset[str]
    states: frozenset[str] = frozenset()  # every protocol state its run reached
    children_paid: int = 0  # new features its children brought
    picked: int = 0

    @property
    def energy(self) -> float:
        return (len(self.brought) + self.children_paid) / (1 + self.picked)


@dataclass
class CoverageCorpus:
    """One base's corpus and every feature its runs have reached."""

    seen: set[str] = field(default_factory=set)
    entries: list[Entry] = field(default_factory=list)
    on_the_way: frozenset[str] = frozenset()  # the states the hunt's goal passes through (Goal.on_the_way)
    parents: dict[str, str] = field(default_factory=dict)  # a child run's name -> its parent entry's
    history: list[int] = field(default_factory=list)  # distinct features after each run looked at

    def look(self, name: str, s: Scenario, v: Verdict | None) -> frozenset[str]:
        """Take run ``name`` (schedule ``s``) into account: its new features, if any, make it an
        entry and are credited to the entry it was mutated from. Returns the new features."""
        reached = features(v) if v is not None else frozenset()
        new = reached - self.seen
        self.seen |= new
        self.history.append(len(self.seen))
        if not new:
            return new
        self.entries.append(Entry(name, s, new, frozenset(f.split(":")[1] for f in reached if f.startswith("state:"))))
        parent = self.parents.get(name)
        for e in self.entries:
            if e.name == parent:
                e.children_paid += len(new)
        return new

    def weight(self, e: Entry) -> float:
        """How likely ``e`` is picked: its energy, more for each state on the goal's way it reached."""
        return e.energy * (1 + ON_THE_WAY_WEIGHT * len(e.states & self.on_the_way))

    def pick(self, rng: random.Random) -> Entry:
        """An entry, by its weight."""
        e = rng.choices(self.entries, weights=[self.weight(x) for x in self.entries])[0]
        e.picked += 1
        return e


Faults = list[dict]  # a schedule's faults as a scenario file writes them
Moves = list[Move]
Mutation = Callable[[Scenario, Faults, random.Random, Moves, CoverageCorpus], Faults | None]


def _add(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults:
    """One fault more, drawn as a fresh draw's are (kind, target, partition, start, length, trigger)."""
    return [*faults, draw_fault(s, rng, rng.choice(moves), len(faults), bounds(s))]


def _drop(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults | None:
    if len(faults) < 2:
        return None
    i = rng.randrange(len(faults))
    return faults[:i] + faults[i + 1:]


def _move(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults:
    """A fault starts 0.5 to 3 s earlier or later (a triggered one: its delay moves instead)."""
    out = [dict(f) for f in faults]
    f = rng.choice(out)
    step = rng.uniform(0.5, 3.0) * rng.choice([-1, 1])
    if f.get("on"):
        f["on"] = {**f["on"], "delay_s": round(max(0.0, f["on"].get("delay_s", 0.0) + step / 3), 1)}
    else:
        f["at_s"] = round(min(max(FIRST_FAULT_S, f["at_s"] + step), s.duration_s - QUIET_TAIL_S), 1)
    return out


def _stretch(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults:
    """A fault half to twice as long, within the [hunt] table's lengths."""
    out = [dict(f) for f in faults]
    f = rng.choice(out)
    lo, hi = bounds(s).fault_duration_s
    f["duration_s"] = round(min(max(lo, f["duration_s"] * rng.uniform(0.5, 2.0)), hi), 1)
    return out


def _retarget(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults:
    """A fault aimed at another target its kind takes, or another partition."""
    out = [dict(f) for f in faults]
    f = rng.choice(out)
    targets = sorted({str(m.target) for m in moves if m.kind == f["kind"]} - {f["target"]})
    if targets and rng.random() < 0.7:
        f["target"] = rng.choice(targets)
    else:
        f["partition"] = rng.randrange(s.topic.partitions)
    return out


def _rekind(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults | None:
    """A fault of another kind at the same place and time, aimed where that kind can be."""
    out = [dict(f) for f in faults]
    i = rng.randrange(len(out))
    kinds = sorted({m.kind for m in moves} - {out[i]["kind"]})
    if not kinds:
        return None
    kind = rng.choice(kinds)
    drawn = draw_fault(s, rng, rng.choice([m for m in moves if m.kind == kind]), i, bounds(s))
    keep = {k: out[i][k] for k in ("at_s", "duration_s", "on") if k in out[i]}
    out[i] = {**{k: v for k, v in drawn.items() if k != "on"}, **keep}
    return out


def _splice(s: Scenario, faults: Faults, rng: random.Random, moves: Moves, c: CoverageCorpus) -> Faults | None:
    """The schedule's faults up to a time, then another entry's from that time on (timed faults
    only: a trigger names faults by their place in their own schedule)."""
    others = [e for e in c.entries if e.schedule.faults]
    if not others:
        return None
    other = rng.choice(others).schedule
    cut = rng.uniform(FIRST_FAULT_S, s.duration_s)
    head = [f for f in faults if not f.get("on") and f["at_s"] < cut]
    tail = [f.model_dump(mode="json", exclude_none=True) for f in other.faults if f.on is None and f.at_s >= cut]
    return head + tail if head and tail else None


MUTATIONS: tuple[Mutation, ...] = (_add, _drop, _move, _stretch, _retarget, _rekind, _splice)


def mutate(parent: Scenario, rng: random.Random, moves: list[Move], corpus: CoverageCorpus) -> Scenario | None:
    """``parent`` with one to three mutations (havoc), validated as a scenario file is; None when
    ten tries give no schedule the scenario accepts."""
    limit = bounds(parent).faults[1] + MAX_FAULTS_BEYOND
    for _ in range(10):
        faults: list[dict] | None = [f.model_dump(mode="json", exclude_none=True) for f in parent.faults]
        for _step in range(rng.randint(*HAVOC)):
            faults = rng.choice(MUTATIONS)(parent, faults, rng, moves, corpus) if faults else None
        if not faults or len(faults) > limit:
            continue
        try:
            child = with_faults(parent, faults)
        except (ValidationError, ValueError):
            continue
        if child.faults != parent.faults:
            return child
    return None


def aimed_moves(moves: list[Move], on_the_way: frozenset[str]) -> dict[str, list[Move]]:
    """The moves meant to enter each state on the goal's way that a fault can be aimed at (AIMED_BY),
    by state; a state no move of the hunt's enters is left out."""
    out = {state: [m for m in moves if AIMED_BY[state](m.kind, str(m.target))]
           for state in sorted(on_the_way & AIMED_BY.keys())}
    return {state: aimed for state, aimed in out.items() if aimed}


def aim(drawn: Scenario, rng: random.Random, aimed: dict[str, list[Move]]) -> tuple[Scenario, str] | None:
    """``drawn`` with one of its faults (or, without faults, a first one) replaced by a fault aimed
    at a state on the goal's way, drawn as a fresh draw's are, and that state; None when ten tries
    give no schedule the scenario accepts. A silence aimed at a state that takes a leadership lasts
    the broker's session, moved earlier where it would outlast the workload."""
    faults = [f.model_dump(mode="json", exclude_none=True) for f in drawn.faults]
    for _ in range(10):
        state = rng.choice(sorted(aimed))
        move = rng.choice(aimed[state])
        i = rng.randrange(len(faults)) if faults else 0
        f = draw_fault(drawn, rng, move, i, bounds(drawn))
        if state in ENTERED_BY_A_LEADER_TAKEN:
            f = takes_the_leader(drawn, f)
            if "on" not in f:
                latest = drawn.duration_s - f["duration_s"] - QUIET_TAIL_S
                f["at_s"] = round(max(FIRST_FAULT_S, min(f["at_s"], latest)), 1)
        try:
            return with_faults(drawn, [*faults[:i], f, *faults[i + 1:]]), state
        except (ValidationError, ValueError):
            continue
    return None


def next_schedule(s: Scenario, rng: random.Random, moves: list[Move], corpus: CoverageCorpus,
                  name: str, fresh: Callable[[], Scenario] | None = None) -> tuple[Scenario, str]:
    """The next schedule (run ``name``) for base scenario ``s`` and where it came from: a mutation of
    an entry picked by energy, or (always while the corpus is empty, for a share of draws, and when
    a mutation does not fit) a fresh draw: a share of them a swarm draw aimed at a state on the
    goal's way, the others ``fresh`` (default a draw from every move)."""
    if corpus.entries and rng.random() < MUTATE_SHARE:
        parent = corpus.pick(rng)
        child = mutate(parent.schedule, rng, moves, corpus)
        if child is not None:
            corpus.parents[name] = parent.name
            return child, f"mutated from {parent.name} (weight {corpus.weight(parent):.2g})"
    aimed = aimed_moves(moves, corpus.on_the_way)
    if aimed and rng.random() < AIM_SHARE:
        drawn = draw(s, rng, swarm(rng, moves))
        hit = aim(drawn, rng, aimed)
        return (hit[0], f"swarm draw aimed at {hit[1]}") if hit is not None else (drawn, "swarm draw")
    return (fresh() if fresh is not None else draw(s, rng, moves)), "swarm draw"
