"""The report's timeline panels, registered. A panel family is one module of report/ that declares a
``PanelFamily``: its panels (a key and a title each), whether a run has them, the traces it draws
(each trace names its panel's key in ``yaxis``), and anything it shades on its own panel. The page
stacks the families a run has in ``page.FAMILIES``' order and gives each panel its Plotly axis
(``y``, ``y2``, ...), so no module numbers an axis by hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.checker.verdict import Verdict
    from harness.history import RunConfig
    from harness.history.events import Event


@dataclass(frozen=True)
class RunView:
    """What a panel draws from: one checked run directory, its run.json, verdict and events, and the
    time (ms) its workload started, which every panel's x axis counts from."""

    path: Path
    run: RunConfig
    verdict: Verdict
    events: list[Event]
    t0: int

    @property
    def end_ms(self) -> int:
        """The last moment the events name (a span still open then ends there)."""
        return max([getattr(e, "ts_ms", None) or getattr(e, "end_ms", None) or 0 for e in self.events] + [self.t0])


@dataclass(frozen=True)
class Panel:
    """One panel: ``key`` is what its traces name in ``yaxis``; ``axis`` adds Plotly axis settings."""

    key: str
    title: str
    axis: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PanelFamily:
    """Panels drawn from the same data, with the test of whether a run has it."""

    panels: tuple[Panel, ...]
    shown: Callable[[RunView], bool]
    traces: Callable[[RunView], list[dict]]
    decorate: Callable[[dict, dict[str, str], RunView], None] | None = None  # (layout, key -> axis id, run)


def axis_ids(panels: list[Panel]) -> dict[str, str]:
    """Each panel's Plotly axis, in stacking order: ``y`` for the first, then ``y2``, ``y3``, ..."""
    keys = [p.key for p in panels]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two panels share a key: {keys}")
    return {k: "y" if i == 0 else f"y{i + 1}" for i, k in enumerate(keys)}


def layout_key(axis_id: str) -> str:
    """The layout's name for an axis id: ``y`` -> ``yaxis``, ``y7`` -> ``yaxis7``."""
    return "yaxis" + axis_id[1:]


def on_axes(traces: list[dict], ids: dict[str, str]) -> list[dict]:
    """The traces with each panel key in ``yaxis`` replaced by that panel's axis id."""
    unknown = sorted({t["yaxis"] for t in traces if t.get("yaxis") not in ids})
    if unknown:
        raise ValueError(f"traces name panels the page does not have: {unknown}")
    return [{**t, "yaxis": ids[t["yaxis"]]} for t in traces]
