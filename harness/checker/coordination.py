"""The coordination layer in a run: controller failovers and the spans without a leader or a majority.

Everything here reads the state samples and fault events of events.jsonl (the checker's Spark job
is not involved): each sample carries ``controller`` (ZooKeeper mode: the broker that is Kafka's
controller; KRaft: the active controller) and ``quorum`` (the KRaft quorum or the ZooKeeper
ensemble: its leader, epoch, whether a majority is in touch).
"""

from __future__ import annotations

from itertools import pairwise

from harness.faults import QUORUM_ROLES
from harness.history.events import Event, Fault, State

SETTLE_MS = 15_000  # a fault's effects on the quorum are looked for until this long after its end


def samples(events: list[Event]) -> list[State]:
    """The state samples, in time order."""
    return sorted((e for e in events if isinstance(e, State)), key=lambda e: e.ts_ms)


def on_coordination(fault: Fault) -> bool:
    """Whether a fault was aimed at the coordination layer (a controller, a ZooKeeper server, the
    quorum's majority; in ZooKeeper mode also the broker that is Kafka's controller)."""
    return fault.target.split(":")[0] in QUORUM_ROLES


def _leader(sample: State, of_ensemble: bool) -> int | None:
    """The leader a sample shows: the ZooKeeper ensemble's, or Kafka's (active) controller. None
    when the sample does not say."""
    if of_ensemble:
        return sample.quorum.leader if sample.quorum else None
    return sample.controller


def spans(points: list[tuple[int, bool]], lo: int, hi: int) -> list[dict]:
    """The maximal spans within [lo, hi] where the sampled condition held; a sample's value holds
    until the next sample."""
    out: list[dict] = []
    for (t, held), (t_next, _) in pairwise([*points, (hi, False)]):
        a, b = max(t, lo), min(t_next, hi)
        if not held or b <= a:
            continue
        if out and out[-1]["end_ms"] >= a:
            out[-1]["end_ms"] = b
        else:
            out.append({"start_ms": a, "end_ms": b})
    for s in out:
        s["duration_ms"] = s["end_ms"] - s["start_ms"]
    return out


def quorum_spans(events: list[Event]) -> dict[str, list[dict]]:
    """Over the whole run: when the quorum had no leader, and when it had no majority in touch."""
    ss = [s for s in samples(events) if s.quorum]
    if not ss:
        return {"no_leader": [], "no_majority": []}
    lo, hi = ss[0].ts_ms, ss[-1].ts_ms
    return {
        "no_leader": spans([(s.ts_ms, s.quorum.leader < 0) for s in ss], lo, hi),
        "no_majority": spans([(s.ts_ms, not s.quorum.majority) for s in ss], lo, hi),
    }


def failover(fault: Fault, events: list[Event]) -> dict:
    """One coordination fault: the leader before it, the first other leader the samples show after
    its start and how long that took (None: no other leader, as when the fault spared the leader),
    and how long within the fault and SETTLE_MS after it there was no leader or no majority."""
    ensemble = any(n.startswith("zookeeper") for n in fault.nodes)
    before = (fault.quorum_before.leader if fault.quorum_before else None) if ensemble else fault.controller_before
    start, end = fault.start_ms, fault.end_ms or fault.start_ms
    ss = [s for s in samples(events) if s.ts_ms >= start]
    new = next(((s.ts_ms, lead) for s in ss if s.ts_ms <= end + SETTLE_MS
                and (lead := _leader(s, ensemble)) is not None and lead >= 0 and lead != before), None)
    window = [s for s in ss if s.ts_ms <= end + SETTLE_MS]
    hi = window[-1].ts_ms if window else start
    with_quorum = [s for s in window if s.quorum]
    return {
        "fault": fault.name or fault.kind, "kind": fault.kind, "target": fault.target,
        "nodes": fault.nodes or fault.brokers, "start_ms": start, "end_ms": end,
        "layer": "zookeeper" if ensemble else "controller", "leader_before": before,
        "new_leader": new[1] if new else None, "failover_ms": new[0] - start if new else None,
        "no_leader_ms": sum(x["duration_ms"] for x in spans(
            [(s.ts_ms, _leader(s, ensemble) == -1) for s in window], start, hi)),
        "no_majority_ms": sum(x["duration_ms"] for x in spans(
            [(s.ts_ms, not s.quorum.majority) for s in with_quorum], start, hi)),
    }


def failovers(events: list[Event], outages: list[dict]) -> list[dict]:
    """Every coordination fault's failover, with the unavailability window it overlapped (outages:
    the verdict's per-fault recovery rows, matched by start)."""
    by_start = {o.get("start_ms"): o for o in outages}
    out = []
    for f in (e for e in events if isinstance(e, Fault) and on_coordination(e)):
        row = failover(f, events)
        o = by_start.get(f.start_ms, {})
        row["outage_ms"], row["recovery_ms"] = o.get("outage_ms", 0), o.get("recovery_ms", 0)
        out.append(row)
    return out
