"""The space a hunt searches: every fault schedule a scenario's configuration allows, within the
bounds of its ``[hunt]`` table, and a seeded draw from it.

A drawn schedule is an ordinary scenario with explicit faults (the scenario's own faults and
generator are replaced), so what a hunt runs, what it shrinks and what it hands a maintainer are
the same kind of file that ``kchaos run`` takes. The vocabulary is whatever the scenario's own
validation accepts: each (kind, target) pair is tried as a one-fault scenario, so a fault kind or a
target added to the registry is drawn without a change here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import get_args

from pydantic import ValidationError

from harness.cluster.formation import FormationFault
from harness.faults import FAULT_KINDS, FAULTS, SILENCES_ITS_BROKER, TAKES_THE_LEADER, Target
from harness.scenario import HuntSpec, Scenario

TRIGGER_DELAY_S = (0.0, 2.0)
FIRST_FAULT_S = 1.0  # the earliest a timed fault starts: the workload is running by then
QUIET_TAIL_S = 3.0  # a drawn fault ends at least this long before the workload does
# What a drawn formation fault does to the first quorum leader, and the moments it counts from: the
# values [cluster.formation] takes.
FORMATION_KINDS = get_args(FormationFault.model_fields["kind"].annotation)
FORMATION_MOMENTS = get_args(FormationFault.model_fields["after"].annotation)
FORMATION_DELAY_S = (0.0, 1.5)  # after that moment: before the brokers have all registered
SESSION_MARGIN_S = 1.0  # a silence meant to take a leader lasts its broker's session and this much more


@dataclass(frozen=True)
class Move:
    """One fault the scenario takes: a kind aimed at a target."""

    kind: str
    target: Target


def bounds(s: Scenario) -> HuntSpec:
    return s.hunt or HuntSpec()


def default_targets(s: Scenario) -> list[Target]:
    """Every role the scenario's cluster and workload have, and each of its clients by name."""
    roles = ["leader", "follower", "followers", "controller", "quorum_majority", "random"]
    roles += ["zookeeper"] if s.mode == "zk" else [f"controller:{s.quorum_size + 1}"]  # a spare, to add
    roles += ["txn_coordinator"] if s.transactional else []
    roles += ["group_coordinator"] if s.groups or s.share_groups else []
    roles += ["share_coordinator"] if s.share_groups else []
    return [Target.parse(r) for r in roles] + [Target("client", client=n) for n in s.client_names]


def vocabulary(s: Scenario) -> list[Move]:
    """Every (kind, target) of the hunt's bounds that the scenario accepts as a fault of its own."""
    spec = bounds(s)
    kinds = spec.kinds or [k for k in FAULT_KINDS if FAULTS[k].drawn]  # a record's not_drawn says why not
    moves = []
    for kind in kinds:
        for target in spec.targets or default_targets(s):
            try:
                with_faults(s, [{"at_s": FIRST_FAULT_S, "duration_s": 1.0, "kind": kind, "target": str(target),
                                 **FAULTS[kind].probe}])
            except (ValidationError, ValueError):
                continue
            moves.append(Move(kind, target))
    return moves


def with_faults(s: Scenario, faults: list[dict], **changes) -> Scenario:
    """``s`` with exactly these faults (no generator), validated as a scenario file is."""
    data = {**s.model_dump(mode="json"), **changes, "faults": faults, "generator": None}
    return Scenario.model_validate(data)


def draw(s: Scenario, rng: random.Random, moves: list[Move]) -> Scenario:
    """One schedule: the number of faults, each one's kind, target, start, length and (a share of
    them) the protocol event it fires on, the workload's duration and rates, all from ``rng``.
    A fault the scenario refuses in combination (a trigger on a fault that does not exist) is drawn
    again; the scenario's configuration (topic, producers, groups, cluster) is never changed."""
    spec = bounds(s)
    duration = round(rng.uniform(*(spec.duration_s or (s.duration_s, s.duration_s))), 1)
    producers = [p.model_dump(mode="json") for p in s.producers]
    if spec.rate is not None:
        for p in producers:
            p["rate"] = round(rng.uniform(*spec.rate))
    base = with_faults(s, [], duration_s=duration, producers=producers, seed=rng.randrange(1, 2**31),
                       **_formation(s, rng, spec))
    faults: list[dict] = []
    for _ in range(rng.randint(*spec.faults)):
        for _attempt in range(10):
            f = draw_fault(base, rng, _pick(rng, moves), len(faults), spec)
            try:
                with_faults(base, [*faults, f])
            except (ValidationError, ValueError):
                continue
            faults.append(f)
            break
    return with_faults(base, faults)


def _formation(s: Scenario, rng: random.Random, spec: HuntSpec) -> dict:
    """The drawn cluster's table: for the [hunt] table's share of draws, the cluster's first quorum
    leader faulted while it forms, killed, stopped or frozen up to 1.5 s after its election or after
    the first broker registered, for a drawn fault's length; the other draws without (the scenario's
    own ``[cluster.formation]`` is its schedule's, replaced as its faults are). Nothing drawn from
    ``rng`` when the table asks for no formation faults: other hunts' schedules stay as they were."""
    cluster = s.cluster_unfaulted  # the scenario's own formation fault is not a draw's
    if spec.formation and rng.random() < spec.formation:
        cluster["formation"] = {"kind": rng.choice(FORMATION_KINDS), "after": rng.choice(FORMATION_MOMENTS),
                                "delay_s": round(rng.uniform(*FORMATION_DELAY_S), 1),
                                "duration_s": round(rng.uniform(*spec.fault_duration_s), 1)}
    return {"cluster": cluster}


def _pick(rng: random.Random, moves: list[Move]) -> Move:
    """A kind, then one of its targets: every kind is as likely as another, however many targets it has."""
    kind = rng.choice(sorted({m.kind for m in moves}))
    return rng.choice([m for m in moves if m.kind == kind])


def draw_fault(s: Scenario, rng: random.Random, move: Move, number: int, spec: HuntSpec) -> dict:
    """Fault ``number`` of a schedule for ``move``: its partition, start, length, direction, its kind's
    own settings and (for a share) the protocol event it fires on, as a scenario file writes it."""
    length = round(rng.uniform(*spec.fault_duration_s), 1)
    latest = max(FIRST_FAULT_S, s.duration_s - length - QUIET_TAIL_S)
    f: dict = {"at_s": round(rng.uniform(FIRST_FAULT_S, latest), 1), "duration_s": length, "kind": move.kind,
               "target": str(move.target), "partition": rng.randrange(s.topic.partitions)}
    kind = FAULTS[move.kind]
    if kind.directional and rng.random() < 0.3:
        f["stream"] = rng.choice(["upstream", "downstream"])
    if kind.draw is not None:  # the settings of its kind: a latency, a rate, an offset, ...
        f.update(kind.draw(rng, spec))
    if "dir" in kind.takes and s.log_dirs > 1 and not move.target.on_coordination(s.mode):
        f.update(_directory(rng, s.log_dirs, optional="dir" not in kind.defaults))
    if rng.random() < spec.triggers:
        f["on"] = _trigger(s, rng, f, number)
        f["at_s"] = round(min(f["at_s"], rng.uniform(0, 3)), 1)  # triggered: "after at_s" arms it early
    return f


def _directory(rng: random.Random, log_dirs: int, optional: bool) -> dict:
    """Which of a JBOD broker's ``log_dirs`` directories a disk fault acts on: any one of them (the
    first holds KRaft's metadata log, whose failure stops the broker; another's failure leaves it
    serving the rest), or, for a kind that can (``optional``), every one (no ``dir``)."""
    chosen = rng.randint(0 if optional else 1, log_dirs)
    return {"dir": chosen} if chosen else {}


def _trigger(s: Scenario, rng: random.Random, f: dict, number: int) -> dict:
    """A protocol event for fault ``f`` (number ``number``) to fire on, then a drawn delay: the first
    fault on an acknowledgement count near its drawn start (it always comes); a later one also on
    what the faults before it may cause (its partition's ISR shrinking, its leader changing) or on an
    earlier fault's start or end. An event that never comes leaves the run "not exercised"."""
    events = ["acked"] + (["isr_shrink", "leader_change", "fault_start", "fault_end"] if number else [])
    event = rng.choice(events)
    on: dict = {"event": event, "delay_s": round(rng.uniform(*TRIGGER_DELAY_S), 1)}
    if event == "acked":
        per_s = sum(p.rate * p.count for p in s.producers if not p.quiet) or 1.0
        on["count"] = max(1, int(per_s * f["at_s"]))
    elif event == "isr_shrink":
        on["size"] = rng.choice([0, 0, 1, 2])  # any shrink, or down to the last one or two members
    elif event in ("fault_start", "fault_end"):
        on["fault"] = rng.randrange(number)
    return on


def session_s(s: Scenario) -> float:
    """How long a broker that answers nothing keeps leading: its ZooKeeper session, or its
    heartbeats' session with the KRaft controllers."""
    c = s.cluster_settings()
    return (c.zookeeper_session_timeout_ms if s.mode == "zk" else c.broker_session_timeout_ms) / 1000


def fails_its_broker(kind: str) -> bool:
    """Whether a fault of ``kind`` takes its broker's leadership away by failing the broker (a stop,
    a kill, a silence, an operator's decommission); an operator's action that leaves the broker
    running does not (a preferred election leaves a leader that is the preferred replica leading)."""
    k = FAULTS[kind]
    return TAKES_THE_LEADER in k.effects and not (k.operation and k.heal is None)


def takes_the_leader(s: Scenario, f: dict) -> dict:
    """``f``, a fault drawn to take its broker's leadership, made one that does: a silence
    (SILENCES_ITS_BROKER) lasts the broker's session and a second more, both ways (silent only
    towards the broker, its heartbeats still reach ZooKeeper or the controllers). Any other kind as
    drawn: a stop or a kill takes the leadership at once or when its session ends, however short."""
    if SILENCES_ITS_BROKER not in FAULTS[f["kind"]].effects:
        return f
    out = {k: v for k, v in f.items() if not (k == "stream" and v == "downstream")}
    out["duration_s"] = max(f["duration_s"], round(session_s(s) + SESSION_MARGIN_S, 1))
    return out
