"""The report's coordination lane: who led the KRaft quorum or the ZooKeeper ensemble over time, and
when it had no leader or no majority; a faulted formation before the workload (its first leader,
the fault, who led once the cluster had formed); and the controller failovers table's rows."""

from __future__ import annotations

from harness.checker.verdict import Verdict
from harness.history.events import Event, Formation, State
from harness.report.panels import Panel, PanelFamily, RunView, layout_key

PANEL = Panel("quorum", "quorum leader", {"type": "category"})
NO_MAJORITY = "rgba(214,39,40,0.25)"


def has_quorum(events: list[Event]) -> bool:
    return any(isinstance(e, State) and e.quorum for e in events)


def node_label(n: int) -> str:
    """controller-K for KRaft node 100+K, zookeeper-K for 200+K."""
    if n > 200:
        return f"zookeeper-{n - 200}"
    return f"controller-{n - 100}" if n > 100 else f"broker {n}"


def quorum_traces(events: list[Event], t0: int) -> list[dict]:
    """The quorum's leader (a step line over node names, gaps where it had none) and its epoch."""
    ss = [e for e in events if isinstance(e, State) and e.quorum]
    x = [round((e.ts_ms - t0) / 1000, 2) for e in ss]
    leaders = [node_label(e.quorum.leader) if e.quorum.leader >= 0 else None for e in ss]
    epochs = [e.quorum.epoch for e in ss]
    return [{"type": "scatter", "mode": "lines+markers", "name": "quorum leader", "x": x, "y": leaders,
             "yaxis": PANEL.key, "line": {"shape": "hv"}, "marker": {"size": 3}, "customdata": epochs,
             "hovertemplate": "%{y} (epoch %{customdata})", "connectgaps": False}]


def formation_traces(events: list[Event], t0: int) -> list[dict]:
    """A faulted formation (before the workload, so at negative times): the first leader faulted, back,
    and who led once every broker had registered."""
    traces = []
    for f in (e for e in events if isinstance(e, Formation)):
        traces.append({"type": "scatter", "mode": "lines+markers+text", "name": "formation",
                       "x": [round((ms - t0) / 1000, 2) for ms in (f.ts_ms, f.heal_ms, f.formed_ms)],
                       "y": [node_label(f.leader), node_label(f.leader),
                             node_label(f.leader_after) if f.leader_after >= 0 else None],
                       "text": [f"{f.kind} (first leader, epoch {f.epoch})", "back",
                                f"formed (epoch {f.epoch_after})"],
                       "textposition": "top center", "yaxis": PANEL.key, "line": {"dash": "dot"},
                       "hovertemplate": "%{text}"})
    return traces


def shade_no_majority(layout: dict, ids: dict[str, str], run: RunView) -> None:
    """Each span without a majority in touch, shaded on the coordination lane."""
    lo, hi = layout[layout_key(ids[PANEL.key])]["domain"]
    t0 = run.t0
    for w in run.verdict.coordination.no_majority:
        layout["shapes"].append({"type": "rect", "xref": "x", "yref": "paper", "x0": (w["start_ms"] - t0) / 1000,
                                 "x1": (w["end_ms"] - t0) / 1000, "y0": lo, "y1": hi, "fillcolor": NO_MAJORITY,
                                 "line": {"width": 0}, "layer": "below"})


def failover_rows(verdict: Verdict) -> list[dict]:
    """The failovers table: node numbers as names, times in seconds."""
    rows = []
    for f in verdict.coordination.failovers:
        rows.append({**f.model_dump(), "before": node_label(f.leader_before) if f.leader_before is not None else "",
                     "after": node_label(f.new_leader) if f.new_leader is not None else "none"})
    return rows


FAMILY = PanelFamily(panels=(PANEL,), shown=lambda run: has_quorum(run.events),
                     traces=lambda run: quorum_traces(run.events, run.t0) + formation_traces(run.events, run.t0),
                     decorate=shade_no_majority)
