"""The HTML durability report: one self-contained file a Kafka operator reads in a minute.

Matrix first (one row per run and configuration, a cell per anomaly class), then each run: a
timeline of charts on one shared time axis with every fault shaded, the anomalies with the
records and replicas involved, and the environment that reproduces it. Plotly's library is
inlined once; nothing is fetched when the page opens. Series are aggregated per second with
pyarrow, so the page stays small whatever the history's size.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import jinja2
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness import faults
from harness.checker.anomaly import ANOMALIES, CLASSES, GROUP_ANOMALIES, V1_ANOMALIES, showable
from harness.checker.coverage import DEFINITIONS as COVERAGE_DEFINITIONS
from harness.checker.promises import DOC_CASES, DOC_CASES_V2, promises
from harness.checker.verdict import ConfigVerdict, GroupVerdict, Verdict
from harness.checker.verdict import read as read_verdict
from harness.history import (
    CONSUMED,
    PRODUCED,
    REPLICAS,
    RUN_JSON,
    VERDICT_JSON,
    HistoryError,
    RunConfig,
    find_run_dirs,
    read_checkpoints,
    read_events,
    read_run_config,
)
from harness.history.events import Event, Fault, FaultSkipped, TriggerUnfired, WorkloadStart
from harness.report import base, groups, known_results, quorum, transactions
from harness.report.groups import group_context, group_tables
from harness.report.panels import Panel, PanelFamily, RunView, axis_ids, layout_key, on_axes
from harness.report.quorum import failover_rows
from harness.report.shares import share_group_tables
from harness.report.transactions import txn_tables
from harness.report.upgrades import upgrade_rows

TEMPLATE = Path(__file__).with_name("page.html.j2")


def _read_json(p: Path) -> dict:
    return json.loads(p.read_text()) if p.exists() else {}


def _t0(run: RunConfig, produced: pa.Table, events: list[Event]) -> int:
    if run.workload.start_ms:
        return run.workload.start_ms
    starts = [e.ts_ms for e in events if isinstance(e, WorkloadStart)]
    if starts:
        return int(starts[0])
    return int(pc.min(produced["send_ts_ms"]).as_py() or 0) if produced.num_rows else 0


PANEL_GAP = 0.02
FAMILIES: list[PanelFamily] = [base.FAMILY, transactions.FAMILY, groups.FAMILY, quorum.FAMILY]  # top to bottom


def panel_layout(panels: list[Panel]) -> dict:
    """The panels stacked on one shared time axis (the last one carries it)."""
    ids = axis_ids(panels)
    n = len(panels)
    h = (1 - PANEL_GAP * (n - 1)) / n
    layout: dict = {"height": 150 * n + 80, "margin": {"l": 60, "r": 10, "t": 60, "b": 40},
                    "legend": {"orientation": "h", "y": -0.06, "font": {"size": 10}}, "barmode": "stack",
                    "xaxis": {"title": {"text": "seconds since the workload started"}, "anchor": ids[panels[-1].key]},
                    "hovermode": "x unified", "shapes": [], "annotations": [], "font": {"size": 11}}
    for i, p in enumerate(panels):
        top = 1 - i * (h + PANEL_GAP)
        layout[layout_key(ids[p.key])] = {"domain": [top - h, top], "title": {"text": p.title, "font": {"size": 10}},
                                          "zeroline": False, **p.axis}
    return layout


def shade_faults(layout: dict, events: list[Event], t0: int) -> None:
    """Every fault shaded across the panels in its kind's colour, and labelled."""
    for i, f in enumerate(e for e in events if isinstance(e, Fault)):
        x0, x1 = (f.start_ms - t0) / 1000, ((f.end_ms or f.start_ms) - t0) / 1000
        colour = faults.colour(f.kind)
        layout["shapes"].append({"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0, "y1": 1,
                                 "fillcolor": colour, "opacity": 0.12, "line": {"width": 0}, "layer": "below"})
        layout["annotations"].append({"x": x0, "y": 1.0 + 0.018 * (i % 3), "xref": "x", "yref": "paper",
                                      "xanchor": "left", "yanchor": "bottom", "showarrow": False,
                                      "font": {"size": 9, "color": colour},
                                      "text": f"{f.name or f.kind} {_hit(f)}"
                                              + (f" on {f.trigger}" if f.trigger else "")})
        if f.trigger_ms:  # the moment its trigger's event was seen
            t = (f.trigger_ms - t0) / 1000
            layout["shapes"].append({"type": "line", "xref": "x", "yref": "paper", "x0": t, "x1": t, "y0": 0, "y1": 1,
                                     "line": {"color": colour, "width": 1, "dash": "dot"}})


def _hit(fault: Fault) -> str:
    """The nodes a fault hit, for its label; a client's fault names the client alone."""
    if fault.target.startswith("client:"):
        return ""
    return ", ".join(fault.nodes) if fault.nodes else str(fault.brokers)


def outline_unavailability(layout: dict, verdict: Verdict, t0: int) -> None:
    """Each window without an acknowledgement, outlined on the first panel."""
    top = layout["yaxis"]["domain"][0]
    for w in verdict.unavailability.windows:
        x0, x1 = (w["start_ms"] - t0) / 1000, (w["end_ms"] - t0) / 1000
        layout["shapes"].append({"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": top,
                                 "y1": 1, "fillcolor": "rgba(0,0,0,0)",
                                 "line": {"width": 2, "color": "#d62728", "dash": "dash"}})
        layout["annotations"].append({"x": (x0 + x1) / 2, "y": top, "xref": "x", "yref": "paper",
                                      "showarrow": False, "yanchor": "bottom", "font": {"size": 9, "color": "#d62728"},
                                      "text": f"unavailable {w['duration_ms'] / 1000:.1f} s"})


def timeline(d: Path, run: RunConfig, verdict: Verdict, events: list[Event]) -> dict:
    """Plotly figure (as a dict) of one run: the panels of every family the run has (``FAMILIES``) on
    one time axis, faults shaded."""
    produced = pq.read_table(d / PRODUCED, columns=["send_ts_ms"])
    view = RunView(Path(d), run, verdict, events, _t0(run, produced, events))
    families = [f for f in FAMILIES if f.shown(view)]
    panels = [p for f in families for p in f.panels]
    ids = axis_ids(panels)
    traces = on_axes([t for f in families for t in f.traces(view)], ids)
    layout = panel_layout(panels)
    shade_faults(layout, events, view.t0)
    outline_unavailability(layout, verdict, view.t0)
    for f in families:
        if f.decorate is not None:
            f.decorate(layout, ids, view)
    return {"data": traces, "layout": layout}


def divergence_tables(d: Path, verdict: Verdict, limit: int = 10) -> list[dict]:
    """For each divergent offset in the examples: what every replica and every reader saw there."""
    ex = verdict.examples.get("divergence") or []
    keys = {(e["topic"], e["partition"], e["offset"]) for e in ex[:limit]}
    if not keys:
        return []
    offsets = pa.array(sorted({k[2] for k in keys}), pa.int64())
    reps = pq.read_table(d / REPLICAS, filters=pc.field("offset").isin(offsets)) if (d / REPLICAS).exists() else None
    cons = pq.read_table(d / CONSUMED, columns=["consumer", "phase", "topic", "partition", "offset", "value"],
                         filters=pc.field("offset").isin(offsets))
    out = []
    for t, p, o in sorted(keys):
        cells: dict[str, str] = {}
        if reps is not None:
            for r in reps.to_pylist():
                if (r["topic"], r["partition"], r["offset"]) == (t, p, o):
                    epoch = r.get("leader_epoch")
                    cells[f"broker {r['broker']}"] = r["value"] + (f" (epoch {epoch})" if epoch is not None else "")
        for r in cons.to_pylist():
            if (r["topic"], r["partition"], r["offset"]) == (t, p, o):
                cells.setdefault(f"{r['phase']} read ({r['consumer']})", r["value"])
        out.append({"topic": t, "partition": p, "offset": o, "cells": cells})
    return out


def _example_time(e: dict) -> int | None:
    for k in ("ack_ts_ms", "poll_ts_ms", "send_ts_ms"):
        if e.get(k):
            return int(e[k])
    return None


def faults_near(events: list[Event], examples: list[dict], window_ms: int = 15000) -> list[Fault]:
    times = [t for t in (_example_time(e) for e in examples) if t]
    faults = [e for e in events if isinstance(e, Fault)]
    if not times:
        return faults
    lo, hi = min(times) - window_ms, max(times) + window_ms
    return [f for f in faults if f.start_ms <= hi and (f.end_ms or f.start_ms) >= lo]


def run_section(d: Path, verdict: Verdict) -> dict:
    run = read_run_config(d)
    events = read_events(d)
    cp = read_checkpoints(d)
    fig = timeline(d, run, verdict, events)
    anomalies = []
    for a in ANOMALIES:
        n = verdict.anomalies.get(a, 0)
        if not n:
            continue
        ex = verdict.examples.get(a) or []
        anomalies.append({"name": a, "count": n, "examples": ex,
                          "columns": sorted({k for e in ex for k in e}, key=lambda k: (k not in (
                              "value", "topic", "partition", "offset", "ack_offset"), k)),
                          "faults": faults_near(events, ex)})
    t0 = run.workload.start_ms or 0
    env = {k: v for k in ("scenario", "description", "kafka_version", "mode", "brokers", "racks", "seed",
                          "eligible_leader_replicas") if (v := getattr(run, k)) is not None}
    as_written = _read_json(d / RUN_JSON)  # "every setting": the file's own keys, shown as it holds them
    return {
        "id": verdict.run_id, "dir": str(d), "verdict": verdict, "run": run, "env": env,
        "columns": showable(run, verdict.anomalies),
        "images": run.images, "reproduce": run.reproduce or "", "load": run.load,
        "settings": {k: as_written[k] for k in ("topics", "producers", "consumers", "broker_config", "faults")
                     if k in as_written},
        "cluster_settings": run.cluster.get("settings"),
        "figure": json.dumps(fig, default=str), "anomalies": anomalies,
        "divergence": divergence_tables(d, verdict), "txn_records": txn_tables(d, verdict),
        "groups": group_tables(d, verdict) if verdict.by_group else [],
        "group_context": group_context(d, verdict) if verdict.by_group else {},
        "share_groups": share_group_tables(d, verdict, run),
        "known_issues": verdict.known_issues, "not_healed": [x.describe() for x in verdict.not_healed],
        "epochs": {b: v.leader_epochs for b, v in cp.items()},
        "checkpoints": cp, "t0": t0,
        "faults": [e for e in events if isinstance(e, Fault)],
        "upgrades": upgrade_rows([e for e in events if isinstance(e, Fault)], t0),
        "skipped": [e for e in events if isinstance(e, FaultSkipped)],
        "unfired": [e for e in events if isinstance(e, TriggerUnfired)],
        "elections": verdict.elections,
        "failovers": failover_rows(verdict),
    }


def _cell(n: int, broke: bool, a: str, why: str) -> dict:
    return {"anomaly": a, "count": n, "state": "clean" if n == 0 else ("broke" if broke else "expected"), "why": why}


def _config_cells(c: ConfigVerdict, columns: list[str]) -> list[dict | None]:
    """A producer configuration's cells: every class but a group's (None: not this row's to show)."""
    return [None if a in GROUP_ANOMALIES or a not in c.counts else
            _cell(c.counts[a], a in c.broken, a, c.promises[a].why) for a in columns]


def _group_cells(g: GroupVerdict, columns: list[str]) -> list[dict | None]:
    """A group's cells: the group classes it is judged by (a consumer group's or a share group's)."""
    return [_cell(g.counts[a], a in g.broken, a, g.promises[a].why) if a in g.counts else None for a in columns]


def group_label(g: GroupVerdict) -> tuple[str, str]:
    """(kind, label) of a group's matrix row: a consumer group, a share group, or the copier's group."""
    st = g.settings
    if st.get("commit") == "share":
        return "share group", f"share group {g.group}"
    if st.get("commit") == "transaction":
        return "copier", f"copier (group {g.group}): offsets in its transactions"
    how = [str(x) for x in (st.get("protocol"), st.get("assignor")) if x] + [f"commit={st.get('commit', '?')}"]
    return "group", f"group {g.group}: {' '.join(how)}"


def _config_label(st: dict) -> str:
    return (f"acks={st['acks']} · min.insync={st['min_insync']} · idempotent {'yes' if st['idempotence'] else 'no'}"
            f" · unclean {'on' if st['unclean_election'] else 'off'} · epochs {'on' if st['leader_epochs'] else 'off'}"
            f" · ELR {'on' if st['eligible_leader_replicas'] else 'off'}")


def matrix_rows(sections: list[dict], columns: list[str]) -> list[dict]:
    """A row per thing that makes a promise in each run (a producer configuration, a group, a share
    group, the copier, a topic no producer covers), its own verdict beside the run's, which is
    ``fail`` whenever any of them broke a promise (verdict.json's, the terminal's, the exit code's)."""
    rows = []
    for s in sections:
        v = s["verdict"]
        things = [{"kind": "configuration", "what": _config_label(c.settings), "verdict": c.verdict,
                   "client": c.settings.get("client") or "-", "cells": _config_cells(c, columns)} for c in v.by_config]
        for g in v.by_group:
            kind, label = group_label(g)
            client = g.settings.get("client")
            if isinstance(client, dict):  # run.json's {"name", "version"}: the version names the library
                client = client.get("version") or client.get("name")
            things.append({"kind": kind, "what": label, "verdict": g.verdict, "cells": _group_cells(g, columns),
                           "client": client or "-"})
        things += [{"kind": "topic", "what": f"topic {b.topic} (no producer's configuration covers it)",
                    "client": "-", "verdict": "fail",
                    "cells": [_cell(b.count, True, a, b.why) if a == b.anomaly else None for a in columns]}
                   for b in v.broken_outside_configs]
        unav = v.unavailability.windows
        run = {"run": s["id"], "anchor": s["anchor"], "span": len(things), "run_verdict": v.verdict,
               "version": s["run"].kafka_version or "?", "mode": s["run"].mode or "?",
               "faults": ", ".join(sorted({f for c in v.by_config for f in c.settings["faults"]})) or "none",
               "unavailable_ms": max((w["duration_ms"] for w in unav), default=0), "unavailable_windows": len(unav)}
        rows += [{**t, **run, "first": i == 0} for i, t in enumerate(things)]
    return rows


def matrix_columns(sections: list[dict]) -> tuple[list[str], list[str]]:
    """The anomaly columns: (shown, on demand). Shown: the classes any run broke a promise with, then
    those any run counted, as the terminal orders them; on demand: the others some run's workload
    could show (every one of them zero). A class no run's workload could show has no column."""
    verdicts = [s["verdict"] for s in sections]
    can = {a for s in sections for a in showable(s["run"], s["verdict"].anomalies)}
    broken = {a for v in verdicts for _, a, _ in v.broken()}
    counted = {a for v in verdicts for a, n in v.anomalies.items() if n}
    shown = [a for a in ANOMALIES if a in broken] + [a for a in ANOMALIES if a in counted - broken]
    return shown, [a for a in ANOMALIES if a in can and a not in shown]


def promise_rows(shown: list[str] | tuple[str, ...] = V1_ANOMALIES) -> list[dict]:
    """The promise table's rows for the anomaly columns shown (the transactional rows with v2's)."""
    cases = DOC_CASES + (DOC_CASES_V2 if set(shown) - set(V1_ANOMALIES) else [])
    out = []
    for name, cfg in cases:
        p = promises(cfg)
        out.append({"name": name, "cells": [{"promised": p[a].promised, "why": p[a].why} for a in shown]})
    return out


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def render(sections: list[dict], title: str, known: list[dict] | None = None,
           matrix_status: dict | None = None) -> str:
    env = jinja2.Environment(autoescape=jinja2.select_autoescape(default=True), undefined=jinja2.StrictUndefined)
    # Inside <script> only "</script" and "<!--" end or confuse the element; "<\/" means the same in JS.
    env.filters["js"] = lambda s: jinja2.utils.markupsafe.Markup(
        s.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT").replace("<!--", "<\\u0021--"))
    env.filters["pretty"] = lambda o: json.dumps(o, indent=1, default=str)
    tpl = env.from_string(TEMPLATE.read_text())
    errors = [c for c in (matrix_status or {}).values() if c.get("status") == "error"]
    short = {c.name: jinja2.utils.markupsafe.Markup(c.column_head) for c in CLASSES}
    shown, more = matrix_columns(sections)
    columns = shown + more
    return tpl.render(title=title, sections=sections, short=short, rows=matrix_rows(sections, columns),
                      columns=columns, more=set(more), promise_rows=promise_rows(columns), known=known or [],
                      errors=errors, plotly=plotly_js(), esc=html.escape, coverage_definitions=COVERAGE_DEFINITIONS)


def write_report(run_dirs: list[Path], out: Path, title: str = "kchaos durability report",
                 matrix_status: dict | None = None) -> Path:
    """Render the report of these checked runs (each with its verdict.json) to ``out``."""
    dirs = find_run_dirs([Path(p) for p in run_dirs])
    unchecked = [d for d in dirs if not (d / VERDICT_JSON).exists()]
    if unchecked:
        raise HistoryError(f"{unchecked[0] / VERDICT_JSON}: missing (check the run first: kchaos check)")
    sections = [{**run_section(d, read_verdict(d)), "anchor": f"run{i}"}  # run ids may repeat
                for i, d in enumerate(dirs)]
    known = [k for k in known_results.rows([s["verdict"] for s in sections], {s["id"]: s["run"] for s in sections})
             if k["runs"] > 1]
    page = render(sections, title, known, matrix_status)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    try:
        tmp.write_text(page)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)  # nothing half-written is left, whatever stopped it
    return out
