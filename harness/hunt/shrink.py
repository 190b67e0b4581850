"""Shrinking a failing scenario to a minimal one.

Delta debugging (Zeller's ddmin) over the scenario's faults first: the fewest faults that still
break the promise. Then, as Hypothesis's shrinker does once the structure is small, smaller numbers,
one pass each: earlier and shorter faults, a shorter workload, a lower rate, fewer partitions, fewer
producers.
Every candidate is a whole scenario, validated before it is judged (an invalid one is skipped, never
run), and kept only if ``still_fails`` says it still breaks the same promise. Each judgement is a
re-run of real Kafka, so the number of them is bounded by a budget and every one is logged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import ValidationError

from harness.scenario import Scenario

T = TypeVar("T")
StillFails = Callable[[Scenario], bool]

MIN_FAULT_S = 1.0  # a fault shorter than this is below the nemesis's timing
FIRST_FAULT_S = 1.0  # the earliest a timed fault starts: the workload is running by then
MIN_RATE = 50.0  # records/s a producer keeps while shrinking: below it a run sends too little to lose
SHRUNK_TAIL_S = 4.0  # the workload runs at least this long past its last timed fault's end


@dataclass
class Step:
    """One candidate the shrinker judged: what it changed and whether it was kept."""

    change: str
    kept: bool


@dataclass
class Shrunk:
    scenario: Scenario
    steps: list[Step] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return len(self.steps)


class _Judge:
    """``still_fails`` within a budget, logging every judgement; an invalid candidate costs nothing."""

    def __init__(self, still_fails: StillFails, budget: int, stop: type[Exception] | tuple = ()):
        self.still_fails = still_fails
        self.budget = budget
        self.stop = stop
        self.steps: list[Step] = []

    def __call__(self, change: str, make: Callable[[], Scenario]) -> Scenario | None:
        if self.budget <= 0:
            return None
        try:
            candidate = make()
        except (ValidationError, ValueError):
            return None
        self.budget -= 1
        try:
            kept = self.still_fails(candidate)
        except self.stop:
            self.budget = 0  # told to stop: the scenario as it stands is the result
            return None
        self.steps.append(Step(change, kept))
        return candidate if kept else None


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool | None]) -> list[T]:
    """A 1-minimal subsequence of ``items`` that still ``fails`` (Zeller and Hildebrandt, 2002):
    split into n chunks, keep a chunk that fails alone, else a complement that fails, else split
    finer. Then the empty subsequence once: a failure that needs none of the items says so.

    ``fails`` returns None when it may not judge any more (the budget is spent): the best subsequence
    found so far is returned."""
    seen: dict[tuple, bool | None] = {}

    def judged(xs: list[T]) -> bool | None:  # a subsequence met twice is judged once
        if tuple(xs) not in seen:
            seen[tuple(xs)] = fails(xs)
        return seen[tuple(xs)]

    current = list(items)
    n = 2
    while len(current) >= 2:
        chunks = _split(current, n)
        candidates = [(c, 2) for c in chunks]
        if n > 2:  # with two chunks each complement is the other chunk, already tried
            candidates += [(_without(chunks, k), max(n - 1, 2)) for k in range(len(chunks))]
        for subset, next_n in candidates:
            verdict = judged(subset)
            if verdict is None:
                return current
            if verdict:
                current, n = subset, next_n
                break
        else:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    if current and judged([]):
        return []
    return current


def _split(xs: list[T], n: int) -> list[list[T]]:
    size = math.ceil(len(xs) / n)
    return [xs[i:i + size] for i in range(0, len(xs), size)]


def _without(chunks: list[list[T]], k: int) -> list[T]:
    """Every chunk but the k-th, in order."""
    return [x for i, c in enumerate(chunks) if i != k for x in c]


def keep_faults(s: Scenario, keep: Sequence[int]) -> Scenario:
    """``s`` with only the faults numbered ``keep``. A kept fault triggered by a dropped one's start or
    end fires at the time that one was planned for instead (its ``at_s`` plus the trigger's delay, and
    for an end its duration too); references to kept faults are renumbered."""
    renumber = {old: new for new, old in enumerate(keep)}
    faults = []
    for old in keep:
        f = s.faults[old].model_dump(mode="json")
        on = f.get("on")
        if on and on["event"] in ("fault_start", "fault_end"):
            ref = on["fault"]
            if ref in renumber:
                on["fault"] = renumber[ref]
            else:
                gone = s.faults[ref]
                f["at_s"] = round(gone.at_s + on["delay_s"] + (gone.duration_s if on["event"] == "fault_end" else 0), 2)
                f["on"] = None
        faults.append(f)
    return _with(s, faults=faults)


def _with(s: Scenario, **changes) -> Scenario:
    """``s`` with top-level fields replaced, validated as a scenario file would be."""
    return Scenario.model_validate({**s.model_dump(mode="json"), **changes})


def _fault_changes(s: Scenario, i: int, **changes) -> Scenario:
    faults = [f.model_dump(mode="json") for f in s.faults]
    faults[i].update(changes)
    return _with(s, faults=faults)


def _last_timed_end(s: Scenario) -> float:
    return max((f.at_s + f.duration_s for f in s.faults if f.on is None), default=0.0)


def shrink(s: Scenario, still_fails: StillFails, budget: int, stop: type[Exception] | tuple = ()) -> Shrunk:
    """The smallest scenario found that ``still_fails``, within ``budget`` judgements; an exception of
    type ``stop`` from ``still_fails`` ends the shrinking with what it has."""
    judge = _Judge(still_fails, budget, stop)
    current = s

    def drop(keep: list[int]) -> bool | None:
        if judge.budget <= 0:
            return None
        label = f"keep faults {keep}" if keep else "no faults"
        return judge(label, lambda: keep_faults(current, keep)) is not None

    if "formation" in current.cluster:
        current = judge("no formation fault", lambda: _without_formation(current)) or current
    kept = ddmin(list(range(len(current.faults))), drop)
    if len(kept) < len(current.faults):
        current = keep_faults(current, kept)
    for i in [i for i, f in enumerate(current.faults) if f.on is None]:
        current = _smaller(judge, current, f"fault {i} starts at", "s", lambda b, i=i: b.faults[i].at_s,
                           FIRST_FAULT_S, lambda b, v, i=i: _fault_changes(b, i, at_s=v))
    for i in range(len(current.faults)):
        current = _smaller(judge, current, f"fault {i} lasts", "s", lambda b, i=i: b.faults[i].duration_s,
                           MIN_FAULT_S, lambda b, v, i=i: _fault_changes(b, i, duration_s=v))
    current = _smaller(judge, current, "workload runs", "s", lambda b: b.duration_s,
                       max(_last_timed_end(current) + SHRUNK_TAIL_S, 8.0), lambda b, v: _with(b, duration_s=v))
    for j in range(len(current.producers)):
        current = _smaller(judge, current, f"producer {current.producers[j].name} at", "/s",
                           lambda b, j=j: b.producers[j].rate, MIN_RATE, lambda b, v, j=j: _producer_rate(b, j, v))
    if current.topic.partitions > 1:
        current = judge("one partition", lambda: _one_partition(current)) or current
    for j in reversed(range(1, len(current.producers))):
        current = judge(f"without producer {current.producers[j].name}",
                        lambda j=j, base=current: _without_producer(base, j)) or current
    return Shrunk(current, judge.steps)


def _smaller(judge: _Judge, current: Scenario, label: str, unit: str, get: Callable[[Scenario], float],
             floor: float, make: Callable[[Scenario, float], Scenario]) -> Scenario:
    """One number made as small as still fails: the floor first, then halfway back up, twice."""
    value, low = get(current), floor
    for _ in range(3):
        if low >= value:
            break
        candidate = judge(f"{label} {low:g}{unit}", lambda low=low: make(current, low))
        if candidate is not None:
            return candidate
        low = round((low + value) / 2, 1)
    return current


def _producer_rate(base: Scenario, j: int, r: float) -> Scenario:
    producers = [p.model_dump(mode="json") for p in base.producers]
    producers[j]["rate"] = r
    return _with(base, producers=producers)


def _one_partition(base: Scenario) -> Scenario:
    faults = [{**f.model_dump(mode="json"), "partition": 0} for f in base.faults]
    for f in faults:
        if f.get("on") and f["on"].get("partition", -1) > 0:
            f["on"]["partition"] = 0
    return _with(base, topic={**base.topic.model_dump(mode="json"), "partitions": 1}, faults=faults)


def _without_producer(base: Scenario, j: int) -> Scenario:
    return _with(base, producers=[p.model_dump(mode="json") for k, p in enumerate(base.producers) if k != j])


def _without_formation(base: Scenario) -> Scenario:
    """``base`` on a cluster that forms without a fault (``[cluster.formation]`` dropped)."""
    return _with(base, cluster=base.cluster_unfaulted)
