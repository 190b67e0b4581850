"""A scenario's fault tables: explicit ``[[faults]]`` with their ``[faults.on]`` triggers, the
seeded ``[generator]`` and the ``[hunt]`` space; the kinds and targets they name are the fault
registry's (harness/faults/)."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    model_validator,
)

from harness.faults import (
    CLIENT_FAULTS,
    FAULT_KINDS,
    FAULTS,
    TARGET_HELP,
    FaultSettings,
    PlannedFault,
    Target,
    check_kind,
)
from harness.faults.triggers import BROKER_EVENTS, EVENTS, Trigger
from harness.scenario.tables import ScenarioTable


def _target(v: object) -> object:
    return Target.parse(v) if isinstance(v, str) else v


# A fault's target: written as a string ("follower:2"), held parsed, written back as the string.
TargetField = Annotated[Target, BeforeValidator(_target), PlainSerializer(str)]


class TriggerSpec(ScenarioTable):
    """``[faults.on]``: fire the fault on an event after its ``at_s`` (harness/faults/triggers.py)."""

    event: str
    count: int = Field(0, ge=0, description="acked: fire at this many acknowledged records")
    producer: str = Field("", description="acked: count one producer instance's ('' = all producers')")
    partition: int = Field(-1, ge=-1, description="partition events: which partition (-1: the fault's own)")
    offset: int = Field(0, ge=0, description="hw: fire when the high watermark reaches this offset")
    fault: int = Field(-1, ge=-1, description="fault_start/fault_end: the number of the other fault")
    size: int = Field(0, ge=0, description="isr_shrink: fire once the ISR is down to at most this many members "
                                           "(0: on any shrink)")
    broker: int = Field(0, ge=0, description="isr_shrink/isr_grow/truncation: fire when this broker leaves/joins "
                                             "the ISR, or truncates its replica (0: any broker)")
    delay_s: float = Field(0.0, ge=0, description="then wait this long before the fault")

    @model_validator(mode="after")
    def _check(self) -> TriggerSpec:
        if self.event not in EVENTS:
            raise ValueError(f"event: {self.event!r} is not an event (allowed: {', '.join(EVENTS)})")
        if self.event == "acked" and self.count < 1:
            raise ValueError("count: acked needs count >= 1 (the acknowledgement to fire at)")
        if self.size and self.event != "isr_shrink":
            raise ValueError(f"size: only isr_shrink takes a size, not {self.event}")
        if self.broker and self.event not in BROKER_EVENTS:
            raise ValueError(f"broker: only {', '.join(BROKER_EVENTS)} take a broker, not {self.event}")
        if self.event in ("fault_start", "fault_end") and self.fault < 0:
            raise ValueError(f"fault: {self.event} needs fault = the number of another fault (0-based)")
        return self

    def trigger(self) -> Trigger:
        return Trigger(**self.model_dump())


class FaultSpec(FaultSettings, ScenarioTable):
    """``[[faults]]``: one fault, at ``at_s`` for ``duration_s`` (or on the event of ``on``), with
    the settings its kind takes (harness/faults/settings.py)."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    at_s: float = Field(ge=0)
    duration_s: float = Field(5.0, ge=0)
    kind: str
    target: TargetField = Target("leader")
    partition: int = Field(0, ge=0, description="whose leader/followers 'leader' and 'follower...' mean")
    on: TriggerSpec | None = Field(None, description="fire on an event after at_s instead of at at_s")

    @model_validator(mode="after")
    def _check(self) -> FaultSpec:
        if why := check_kind(self.kind).refused(self):
            raise ValueError(why)
        return self

    def planned(self, target: Target, number: int) -> PlannedFault:
        """This fault as the nemesis plans it, aimed at ``target`` (resolved from the scenario's)."""
        return PlannedFault(at_s=self.at_s, duration_s=self.duration_s, kind=self.kind, target=target,
                            partition=self.partition, on=self.on.trigger() if self.on is not None else None,
                            number=number, **self.settings())


class GeneratorSpec(ScenarioTable):
    """A seeded random schedule: faults of these kinds, at random gaps, on random targets."""

    kinds: list[str] = Field(default_factory=lambda: ["kill", "pause", "isolate"])
    targets: list[TargetField] = Field(default_factory=lambda: [Target.parse(t) for t in ("leader", "follower",
                                                                                              "random")])
    gap_s: tuple[float, float] = (3.0, 6.0)
    duration_s: tuple[float, float] = (2.0, 5.0)
    start_s: float = 3.0
    latency_ms: int = 200
    jitter_ms: int = 50
    rate_kbps: int = 64
    offset_s: float = Field(600.0, description="clock_skew: how far a drawn skew moves the clock")
    chain: float = Field(0.0, ge=0, le=1, description="the share of drawn faults fired on a trigger: the previous "
                                                      "drawn fault's start, after a delay from chain_delay_s")
    chain_delay_s: tuple[float, float] = Field((0.0, 2.0), description="the range that delay is drawn from")

    @model_validator(mode="after")
    def _check(self) -> GeneratorSpec:
        bad = [k for k in self.kinds if k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"kinds {bad} are not faults (allowed: {', '.join(FAULT_KINDS)})")
        for k in self.kinds:
            if not self.targets_for(k):
                wanted = "a client:NAME target" if k in CLIENT_FAULTS else "a target other than client:NAME"
                raise ValueError(f"kinds: {k} needs {wanted} in targets (allowed: {TARGET_HELP})")
        return self

    def targets_for(self, kind: str, mode: str = "") -> list[Target]:
        """The targets a fault of this kind can be drawn on: client faults on clients, the rest on brokers
        and (kinds that act on them, given the cluster's ``mode``) on coordination nodes."""
        return [t for t in self.targets if (t.role == "client") == (kind in CLIENT_FAULTS)
                and (not mode or FAULTS[kind].on_nodes or not t.on_coordination(mode))
                and not (FAULTS[kind].disk and mode == "zk" and t.on_coordination(mode))]


class HuntSpec(ScenarioTable):
    """``[hunt]``: the bounds ``kchaos hunt`` draws this scenario's fault schedules within
    (harness/hunt/space.py). Every key is optional; what is absent is the whole vocabulary the
    scenario's configuration allows."""

    kinds: list[str] | None = Field(None, description="fault kinds to draw (default: every kind the scenario "
                                                       "takes)")
    targets: list[TargetField] | None = Field(None, description="targets to draw (default: every role the "
                                                                "scenario has, and each of its clients)")
    faults: tuple[int, int] = Field((1, 4), description="how many faults a schedule has (min, max)")
    fault_duration_s: tuple[float, float] = (1.0, 8.0)
    duration_s: tuple[float, float] | None = Field(None, description="the workload's duration (default: the "
                                                                     "scenario's)")
    rate: tuple[float, float] | None = Field(None, description="each producer's rate (default: as written)")
    triggers: float = Field(0.5, ge=0, le=1, description="the share of faults fired on a protocol event")
    latency_ms: tuple[int, int] = (50, 1000)
    formation: float = Field(0.0, ge=0, le=1, description="the share of runs whose cluster has its coordination "
                                                          "quorum's first leader faulted while it forms "
                                                          "([cluster.formation]; each such run boots its own)")

    @model_validator(mode="after")
    def _check(self) -> HuntSpec:
        bad = [k for k in self.kinds or [] if k not in FAULT_KINDS]
        if bad:
            raise ValueError(f"kinds {bad} are not faults (allowed: {', '.join(FAULT_KINDS)})")
        for key in ("faults", "fault_duration_s", "duration_s", "rate", "latency_ms"):
            lo_hi = getattr(self, key)
            if lo_hi is not None and not 0 <= lo_hi[0] <= lo_hi[1]:
                raise ValueError(f"{key}: {list(lo_hi)} is not [min, max] with 0 <= min <= max")
        return self


