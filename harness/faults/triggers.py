"""Triggers: a fault fired by what the cluster and the workload do rather than at a planned second.

A triggered fault is armed at its ``at_s`` and fires on the first event after that (plus its
``delay_s``): the N-th acknowledgement of a producer, the ISR of a partition shrinking or growing,
its leader changing, its high watermark reaching an offset, a replica of it truncating its log,
another fault starting or ending. The nemesis evaluates every armed trigger each POLL_S against a
fresh observation (acknowledgement counts from the producers, the partition's state and high
watermark asked of the cluster, the truncations the brokers' logs have written as they are
followed, the nemesis's own fault times); each firing, with the event observed and when, goes to events.jsonl,
and a trigger still armed at the run's end is logged as unfired, which makes the run "not
exercised" rather than a pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

POLL_S = 0.02  # how often armed triggers are evaluated

# event -> (what it means, the parameters it needs)
EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "acked": ("the count-th acknowledged record (of producer, or of all producers)", ("count",)),
    "isr_shrink": ("the partition's ISR loses a member (with broker: that broker leaves it; with size: it is down "
                   "to at most size members)", ()),
    "isr_grow": ("the partition's ISR gains a member (with broker: that broker rejoins it)", ()),
    "leader_change": ("the partition's leader changes (or it loses its leader)", ()),
    "hw": ("the partition's high watermark reaches offset", ("offset",)),
    "truncation": ("a replica of the partition truncates its log, removing records (with broker: that broker's; "
                   "its log's `Truncating to offset`)", ()),
    "fault_start": ("fault number `fault` of the scenario starts (begins to act: one on several brokers, at the "
                    "first)", ("fault",)),
    "fault_end": ("fault number `fault` of the scenario ends (is healed)", ("fault",)),
}
PARTITION_EVENTS = ("isr_shrink", "isr_grow", "leader_change", "hw", "truncation")
ISR_EVENTS = ("isr_shrink", "isr_grow")
BROKER_EVENTS = (*ISR_EVENTS, "truncation")  # the events that may name one broker
# What a user sees of triggers, for the fault reference (docs/faults.md).
TRIGGER_HELP = ("A fault with a `[faults.on]` table fires on an event instead of at its `at_s`: armed at `at_s`, it "
                "fires on the first such event after that, then waits `delay_s`. A partition's events are the "
                "fault's own partition's unless `partition` names another; `fault_start` and `fault_end` name a "
                "fault by its place in `faults`, from 0. Each firing is logged (`trigger` in events.jsonl, with "
                "what was observed), drawn on the report's timeline and named in its faults table; a trigger still "
                "armed at the run's end is logged (`trigger_unfired`) and makes the verdict **not exercised** (exit "
                "4): the run did not test what it is for.")


@dataclass(frozen=True)
class Trigger:
    """When a fault fires: ``event`` (one of EVENTS) with its parameters, then ``delay_s``."""

    event: str
    count: int = 0
    producer: str = ""  # acked: one producer instance ("" = every producer)
    partition: int = -1  # partition events: -1 = the fault's own partition
    offset: int = 0
    fault: int = -1
    size: int = 0  # isr_shrink: fire only once the ISR has at most this many members (0: any shrink)
    broker: int = 0  # isr_shrink / isr_grow / truncation: this broker leaves / joins / truncates (0: any)
    delay_s: float = 0.0

    def to_dict(self) -> dict:
        """The event and the parameters that mean something for it."""
        keep = {"event", "delay_s", *EVENTS[self.event][1]}
        if self.event == "acked" and self.producer:
            keep.add("producer")
        if self.event in PARTITION_EVENTS and self.partition >= 0:
            keep.add("partition")
        if self.event == "isr_shrink" and self.size:
            keep.add("size")
        if self.event in BROKER_EVENTS and self.broker:
            keep.add("broker")
        return {k: v for k, v in asdict(self).items() if k in keep}

    def __str__(self) -> str:
        params = {k: v for k, v in self.to_dict().items() if k not in ("event", "delay_s")}
        text = self.event + "".join(f" {k}={v}" for k, v in params.items())
        return text + (f" +{self.delay_s:g}s" if self.delay_s else "")


@dataclass
class Observation:
    """What the nemesis saw at one poll: acknowledgements, one partition's state, fault times."""

    acked: int = 0
    leader: int = -1
    isr: tuple[int, ...] = ()
    hw: int = -1
    started: frozenset[int] = frozenset()  # scenario fault numbers that have started
    ended: frozenset[int] = frozenset()
    truncations: tuple[str, ...] = ()  # what each truncation of the partition the logs wrote says, oldest first


def fired(t: Trigger, now: Observation, armed: Observation) -> str | None:
    """What made ``t`` fire, comparing the observation now with the one when it was armed, or None.
    The partition events compare against the arming state: a shrink is an ISR smaller than it was,
    or without ``broker`` when it had it; a growth one larger, or with ``broker`` when it had not."""
    if t.event == "acked" and now.acked >= t.count:
        return f"{now.acked} acknowledged"
    if t.event in ISR_EVENTS and _isr_moved(t, now.isr, armed.isr):
        return f"ISR {list(armed.isr)} -> {list(now.isr)}"
    if t.event == "leader_change" and now.leader != armed.leader:
        return f"leader {armed.leader} -> {now.leader}"
    if t.event == "truncation" and len(now.truncations) > len(armed.truncations):
        return now.truncations[len(armed.truncations)]
    if t.event == "hw" and now.hw >= t.offset:
        return f"high watermark {now.hw}"
    if t.event == "fault_start" and t.fault in now.started:
        return f"fault {t.fault} started"
    if t.event == "fault_end" and t.fault in now.ended:
        return f"fault {t.fault} ended"
    return None


def _isr_moved(t: Trigger, isr: tuple[int, ...], armed: tuple[int, ...]) -> bool:
    """Whether the ISR moved the way ``t`` waits for since it was armed. An empty ISR is no shrink:
    it is what the cluster says while a partition has no leader to ask."""
    if t.event == "isr_grow":
        return t.broker in isr and t.broker not in armed if t.broker else len(isr) > len(armed)
    left = t.broker in armed and t.broker not in isr if t.broker else len(isr) < len(armed)
    return left and bool(isr) and (not t.size or len(isr) <= t.size)


def cycle(edges: dict[int, int]) -> list[int] | None:
    """A cycle among faults triggered by other faults (fault -> the fault it waits for), or None."""
    for start in edges:
        seen, node = [start], edges[start]
        while node in edges:
            if node in seen:
                return [*seen[seen.index(node):], node]
            seen.append(node)
            node = edges[node]
    return None
