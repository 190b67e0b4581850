"""Seeded fault plans: the same scenario and seed always give the same schedule.

Explicit faults from the scenario are kept as written; a generator adds faults at random gaps
with random kinds and targets drawn from ``random.Random(seed)``, a share of them chained on a
trigger (the previous drawn fault's start plus a drawn delay). "random" targets are resolved
to a broker here, at plan time, so the plan itself is fully reproducible; "leader", "follower"
and "controller" are resolved against the live cluster when the fault fires (and logged).
"""

from __future__ import annotations

import random

from harness.faults import FAULTS, PlannedFault, Target
from harness.faults.triggers import Trigger
from harness.scenario import GeneratorSpec, Scenario

__all__ = ["PlannedFault", "plan"]


def _resolve_random(target: Target, rng: random.Random, brokers: int) -> Target:
    return Target("broker", rng.randint(1, brokers)) if target.role == "random" else target


def plan(s: Scenario, seed: int | None = None) -> list[PlannedFault]:
    """The fault schedule of a scenario, sorted by start time, non-overlapping."""
    rng = random.Random(s.seed if seed is None else seed)
    out: list[PlannedFault] = []
    for i, f in enumerate(s.faults):
        out.append(f.planned(_resolve_random(f.target, rng, s.brokers), i))
    if s.generator is not None:
        out += _generated(s, rng, max((f.end_s for f in out if f.on is None), default=0.0))
    out.sort(key=lambda f: f.at_s)
    return out


def _generated(s: Scenario, rng: random.Random, after_s: float) -> list[PlannedFault]:
    """The generator's faults from ``after_s``: random kinds, targets and partitions at random gaps.
    A share (``chain``) fires on a trigger instead: the previous drawn fault's start plus a drawn
    delay, so the two overlap in that order (a leader killed, then the controller 0.4 s later)."""
    g = s.generator
    assert g is not None
    out: list[PlannedFault] = []
    starts: list[float] = []  # when each is expected to start: a chained fault, its predecessor's plus its delay
    t = max(g.start_s, after_s)
    number = len(s.faults)  # generated faults are numbered after the scenario's, so triggers can name them
    while True:
        duration = round(rng.uniform(*g.duration_s), 2)
        chained = bool(out) and g.chain > 0 and rng.random() < g.chain
        delay = round(rng.uniform(*g.chain_delay_s), 2) if chained else 0.0
        start = starts[-1] + delay if chained else t
        if start + duration > s.duration_s - 1:
            break
        kind = rng.choice(g.kinds)
        target = _resolve_random(rng.choice(g.targets_for(kind, s.mode)), rng, s.brokers)
        partition = rng.randrange(s.topic.partitions)
        on = Trigger("fault_start", fault=out[-1].number, delay_s=delay) if chained else None
        made = FAULTS[kind].generate(rng, g, s.log_dirs) if FAULTS[kind].generate else {}
        out.append(PlannedFault(at_s=out[-1].at_s if chained else round(t, 2), duration_s=duration, kind=kind,
                                target=target, partition=partition, on=on, number=number,
                                **_generic_settings(g, FAULTS[kind].takes), **made))
        starts.append(start)
        number += 1
        t = max(t, start + duration) + (rng.uniform(*g.gap_s) if not chained else 0.0)
    return out


def _generic_settings(g: GeneratorSpec, takes: tuple[str, ...]) -> dict:
    """The generator's latency, jitter and rate, for a drawn kind that takes them."""
    return {k: getattr(g, k) for k in ("latency_ms", "jitter_ms", "rate_kbps") if k in takes}
