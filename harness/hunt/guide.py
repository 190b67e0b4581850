"""How a hunt chooses its next schedule: swarm draws, and schedules built on runs that came close.

A uniform draw over some twenty fault kinds and seven targets almost never lines up a sequence of
three faults on the protocol's events, which is what KIP-101's loss takes. Two ideas from the
testing literature close that gap:

- **Swarm draws** (Groce et al., "Swarm Testing", ISSTA 2012): each fresh schedule draws from a
  random subset of the fault kinds, so the few kinds a sequence needs recur together in one
  schedule instead of being diluted by the rest.
- **Feedback from precursors** (as a coverage-guided fuzzer keeps inputs that reached something
  new): a run that passed but showed a precursor (harness/hunt/precursors.py: a replica dropped
  acknowledged records) joins the corpus, and later draws mutate it with the faults that would
  turn that precursor into a loss: keep the truncated replica from fetching again, take its
  leader away right after, or both at once: the replica's fetches held from before it truncates
  and the leader taken on the truncation itself (a ``truncation`` trigger), since a hold delays
  the truncation it was aimed at and a second step timed by the parent's clock misses it. A child
  that shows a precursor again joins the corpus in turn, so a sequence is built a fault at a time.

Everything here is a function of the hunt's seed and of what the runs showed, so a resumed hunt
draws the same schedules.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pydantic import ValidationError

from harness.faults import FAULTS, HOLDS_FETCHES
from harness.hunt.precursors import Precursor
from harness.hunt.space import (
    FIRST_FAULT_S,
    QUIET_TAIL_S,
    Move,
    bounds,
    draw,
    fails_its_broker,
    takes_the_leader,
    with_faults,
)
from harness.mechanisms import CUT_TOXIC
from harness.scenario import Scenario

SWARM_SHARE = 0.5  # each fault kind is in a fresh draw's subset with this probability
MUTATE_SHARE = 0.5  # once the corpus has schedules, this share of draws mutates one
RECENT = 8  # parents are chosen among the newest schedules of the corpus
EXTRA_FAULTS = 2  # a mutated schedule may have this many faults beyond the [hunt] table's maximum
LONGER_S = 10.0  # a mutation may lengthen the workload by this much so that its fault fits
# What takes a partition's leader away, and what keeps one replica from fetching: the two steps
# that turn a replica's dropped acknowledged records into lost ones.


@dataclass
class Corpus:
    """The schedules of a hunt's base that passed but showed a precursor, oldest first."""

    entries: list[tuple[str, Scenario, list[Precursor]]] = field(default_factory=list)  # (run name, schedule, seen)

    def add(self, name: str, s: Scenario, seen: list[Precursor]) -> None:
        if seen:
            self.entries.append((name, s, seen))


def swarm(rng: random.Random, moves: list[Move]) -> list[Move]:
    """The moves of a random subset of the fault kinds (at least one kind)."""
    kinds = sorted({m.kind for m in moves})
    chosen = {k for k in kinds if rng.random() < SWARM_SHARE} or {rng.choice(kinds)}
    return [m for m in moves if m.kind in chosen]


def next_schedule(s: Scenario, rng: random.Random, moves: list[Move], corpus: Corpus) -> tuple[Scenario, str]:
    """The next schedule for base scenario ``s`` and where it came from: a mutation of a recent
    corpus entry, or (always while the corpus is empty, and when a mutation does not fit) a fresh
    swarm draw."""
    if corpus.entries and rng.random() < MUTATE_SHARE:
        name, parent, seen = rng.choice(corpus.entries[-RECENT:])
        p = rng.choice(seen)
        child = mutate(parent, p, rng, moves)
        if child is not None:
            added = ", ".join(f"{f.kind} {f.target} " + (f"on {f.on.trigger()}" if f.on else f"at {f.at_s:g} s")
                              for f in child.faults[len(parent.faults):])
            return child, (f"built on {name}: {added}, after broker {p.broker} dropped acknowledged records at "
                           f"{p.at_s:g} s")
    return draw(s, rng, swarm(rng, moves)), "swarm draw"


def mutate(parent: Scenario, p: Precursor, rng: random.Random, moves: list[Move]) -> Scenario | None:
    """``parent`` with one or two faults more, aimed at precursor ``p``: hold the truncated
    replica's fetches from a little before it truncated, take the partition's leader away a little
    after, or both; None when the scenario takes none of them (or they do not fit the schedule).
    The kinds are the hunt's (``moves``); the targets are the precursor's, whatever targets the
    [hunt] table draws."""
    steps = [hold_fetches, take_the_leader, hold_and_take]
    rng.shuffle(steps)
    for step in steps:
        added = step(parent, p, rng, moves)
        if not added:
            continue
        if len(parent.faults) + len(added) > bounds(parent).faults[1] + EXTRA_FAULTS:
            continue
        ends = _ends(added)
        try:
            return with_faults(parent, [*[f.model_dump(mode="json") for f in parent.faults], *added],
                               duration_s=max(parent.duration_s, round(ends + QUIET_TAIL_S, 1)))
        except (ValidationError, ValueError):
            continue
    return None


def hold_fetches(s: Scenario, p: Precursor, rng: random.Random, moves: list[Move]) -> list[dict]:
    """The truncated replica's fetches held or slowed from up to 4 s before it truncated, for 4 to
    10 s: records it drops then stay dropped while it is still in the ISR."""
    f = _hold(s, p, rng, moves, (4.0, 10.0))
    return [f] if f is not None else []


def leader_takers(moves: list[Move]) -> list[str]:
    """The hunt's kinds that take a partition's leader away by failing its broker (``fails_its_broker``)."""
    return sorted({m.kind for m in moves if fails_its_broker(m.kind)})


def take_the_leader(s: Scenario, p: Precursor, rng: random.Random, moves: list[Move]) -> list[dict]:
    """The partition's leader stopped, paused or cut off 0.2 to 2.5 s after the replica truncated:
    if the truncated replica is elected before it fetches again, what it dropped is gone. A freeze
    or a cut lasts the broker's session (``takes_the_leader``): shorter, it leaves it leading."""
    kinds = leader_takers(moves)
    if not kinds:
        return []
    lo, hi = bounds(s).fault_duration_s
    f = _fitted(s, takes_the_leader(s, {"at_s": round(p.at_s + rng.uniform(0.2, 2.5), 1),
                                        "duration_s": round(rng.uniform(lo, hi), 1), "kind": rng.choice(kinds),
                                        "target": "leader", "partition": p.partition}))
    return [f] if f is not None else []


def hold_and_take(s: Scenario, p: Precursor, rng: random.Random, moves: list[Move]) -> list[dict]:
    """Both steps in one child: the replica's fetches cut (held, where the hunt has no cut) from
    shortly before it truncated, for 10 to 15 s, and the partition's leader taken 0.1 to 1 s after
    that replica's next truncation, whenever the hold lets it come (a follower truncates once its
    fetch in flight fails, up to a request timeout later than in the parent). The hold outlasts
    what a leader taken by a kill or a cut waits for (its session to expire) before an election."""
    cuts = [m for m in moves if HOLDS_FETCHES in FAULTS[m.kind].effects and FAULTS[m.kind].toxic == CUT_TOXIC]
    hold = _hold(s, p, rng, cuts or moves, (10.0, 15.0), (0.5, 2.0))
    kinds = leader_takers(moves)
    if hold is None or not kinds:
        return []
    lo, hi = bounds(s).fault_duration_s
    take = _fitted(s, takes_the_leader(s, {
        "at_s": hold["at_s"], "duration_s": round(rng.uniform(lo, hi), 1), "kind": rng.choice(kinds),
        "target": "leader", "partition": p.partition,
        "on": {"event": "truncation", "broker": p.broker, "delay_s": round(rng.uniform(0.1, 1.0), 1)}}))
    return [hold, take] if take is not None else []


def _hold(s: Scenario, p: Precursor, rng: random.Random, moves: list[Move], lasting: tuple[float, float],
          before: tuple[float, float] = (0.5, 4.0)) -> dict | None:
    """A hold or slowing of broker ``p.broker``'s fetches from ``before`` seconds before it truncated."""
    kinds = sorted({m.kind for m in moves if HOLDS_FETCHES in FAULTS[m.kind].effects})
    if not kinds:
        return None
    kind = rng.choice(kinds)
    start = max(FIRST_FAULT_S, round(p.at_s - rng.uniform(*before), 1))
    f = _fitted(s, {"at_s": start, "duration_s": round(rng.uniform(*lasting), 1), "kind": kind,
                    "target": f"broker:{p.broker}", "partition": p.partition,
                    "stream": rng.choice(["downstream", None])})
    if f is not None and "latency_ms" in FAULTS[kind].takes:
        f["latency_ms"] = rng.randint(*bounds(s).latency_ms)
    return f


def _ends(added: list[dict]) -> float:
    """When the last of the ``added`` faults ends, at the latest: a fault on a truncation fires while
    the hold it comes with still stands (after it the replica fetches again), so by the end of the
    other faults plus its delay and length."""
    timed = max((f["at_s"] + f["duration_s"] for f in added if "on" not in f), default=0.0)
    return max([timed, *(max(timed, f["at_s"]) + f["on"]["delay_s"] + f["duration_s"] for f in added if "on" in f)])


def _fitted(s: Scenario, f: dict) -> dict | None:
    """``f`` ending ``QUIET_TAIL_S`` before the workload does, the workload lengthened by up to
    ``LONGER_S`` for it and the fault shortened if that is not enough (a precursor near the
    workload's end is where a run came close, so the schedule grows to follow it), or None if it
    would start too late even so."""
    f = {k: v for k, v in f.items() if v is not None}
    room = s.duration_s + LONGER_S - QUIET_TAIL_S - f["at_s"]
    if room < 0.5:
        return None
    f["duration_s"] = round(min(f["duration_s"], room), 1)
    return f
