"""Seeded fault plans: the same scenario and seed always give the same schedule.

Explicit faults from the scenario are kept as written; a generator adds faults at random gaps
with random kinds and targets drawn from ``random.Random(seed)``, a share of them chained on a
trigger (the previous drawn fault's start plus a drawn delay). "random" targets are resolved
to a broker here, at plan time, so the plan itself is fully reproducible; "leader", "follower"
and "controller" are resolved against the live cluster when the fault fires (and logged).
"""

from __future__ import annotations

import random

from harness.faults import PlannedFault, Target
from harness.faults.triggers import Trigger
from harness.scenario import FaultSpec, Scenario

__all__ = ["PlannedFault", "plan"]




def _resolve_random(target: Target, rng: random.Random, brokers: int) -> Target:
    return Target("broker", rng.randint(1, brokers)) if target.role == "random" else target


def plan(s: Scenario, seed: int | None = None) -> list[PlannedFault]:
    """The fault schedule of a scenario, sorted by start time, non-overlapping."""
    rng = random.Random(s.seed if seed is None else seed)
    out: list[PlannedFault] = []
    for i, f in enumerate(s.faults):
        out.append(_planned(f, _resolve_random(f.target, rng, s.brokers), i))
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
        # which of a JBOD broker's directories fails (drawn only for this kind: other schedules keep their draws)
        lost_dir = rng.randint(1, s.log_dirs) if kind == "log_dir_failure" else 0
        out.append(PlannedFault(out[-1].at_s if chained else round(t, 2), duration, kind, target, partition,
                                g.latency_ms, g.jitter_ms, g.rate_kbps, on, number,
                                offset_s=g.offset_s if kind == "clock_skew" else 0.0, dir=lost_dir))
        starts.append(start)
        number += 1
        t = max(t, start + duration) + (rng.uniform(*g.gap_s) if not chained else 0.0)
    return out


def _planned(f: FaultSpec, target: Target, number: int) -> PlannedFault:
    return PlannedFault(f.at_s, f.duration_s, f.kind, target, f.partition, f.latency_ms, f.jitter_ms, f.rate_kbps,
                        f.on.trigger() if f.on is not None else None, number, f.stream, f.to or "", f.feature or "",
                        f.level if f.level is not None else -1, f.offset_s or 0.0, f.op or "write", f.dir or 0)
