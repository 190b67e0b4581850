"""What a run hands back, and where its directory goes by default. Kept apart from the run directory's
code, which needs the cluster's: a ``kchaos run`` that a kept cluster's process carries out imports
this and nothing of clusters, and starts its run that much sooner."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.scenario import Scenario


@dataclass
class RunResult:
    path: Path
    produced: int
    acked: int
    consumed_live: int
    final: int
    replicas: int
    faults: int
    phases: dict[str, float]  # seconds per phase, as in run.json
    unsettled: list[str] = field(default_factory=list)  # topics without a full ISR after the heal


def default_out(s: Scenario) -> Path:
    return Path("runs") / f"{s.name}-{s.kafka_version}-{s.mode}-s{s.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
