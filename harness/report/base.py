"""The panels every run has: acknowledged writes per second and their latency, errors per second,
each partition's ISR size and leader, and the high watermark against each reader's position."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.history import CONSUMED, PRODUCED
from harness.history.events import Event, State
from harness.report.panels import Panel, PanelFamily, RunView


def _per_second(ts: pa.Array, t0: int) -> pa.Array:
    return pc.divide(pc.subtract(ts.cast(pa.int64()), t0), 1000)  # integer division: second index


def ack_traces(produced: pa.Table, t0: int, untimed: frozenset[str] = frozenset()) -> list[dict]:
    """Acknowledged writes per second, and the p50 and p99 of their latency, without the sends of the
    ``untimed`` producers (their client reports no send time: checker/capabilities.py)."""
    ok = produced.filter(pc.equal(produced["status"], "ok"))
    ok = ok.filter(pc.is_valid(ok["ack_ts_ms"]))
    if not ok.num_rows:
        return []
    sec = _per_second(ok["ack_ts_ms"], t0)
    lat = pc.subtract(ok["ack_ts_ms"], ok["send_ts_ms"]).cast(pa.float64())
    if untimed and "producer" in ok.column_names:
        lat = pc.if_else(pc.is_in(ok["producer"], pa.array(sorted(untimed))), pa.scalar(None, pa.float64()), lat)
    g = pa.table({"sec": sec, "lat": lat}).group_by("sec").aggregate(
        [("lat", "count"), ("lat", "tdigest", pc.TDigestOptions(q=[0.5, 0.99]))]).sort_by("sec")
    secs = g["sec"].to_pylist()
    q = g["lat_tdigest"].to_pylist()
    return [
        {"type": "scatter", "mode": "lines", "name": "acknowledged / s", "x": secs, "y": g["lat_count"].to_pylist(),
         "yaxis": "acked", "line": {"shape": "hv", "color": "#1f77b4"}},
        {"type": "scatter", "mode": "lines", "name": "latency p50 ms", "x": secs,
         "y": [v[0] if v else None for v in q], "yaxis": "latency", "line": {"color": "#2ca02c"}},
        {"type": "scatter", "mode": "lines", "name": "latency p99 ms", "x": secs,
         "y": [v[1] if v else None for v in q], "yaxis": "latency", "line": {"color": "#d62728"}},
    ]


def error_traces(produced: pa.Table, t0: int) -> list[dict]:
    """Writes that were not acknowledged, per second, by error and status."""
    bad = produced.filter(pc.not_equal(produced["status"], "ok"))
    if not bad.num_rows:
        return []
    ts = pc.coalesce(bad["ack_ts_ms"], bad["send_ts_ms"])
    g = pa.table({"sec": _per_second(ts, t0), "error": pc.coalesce(bad["error"], pa.scalar("(none)")),
                  "status": bad["status"]}).group_by(["error", "status", "sec"]).aggregate(
        [("sec", "count")]).sort_by("sec")
    out = []
    for e, s in sorted({(e, s) for e, s in zip(g["error"].to_pylist(), g["status"].to_pylist(), strict=True)}):
        sub = g.filter(pc.and_(pc.equal(g["error"], e), pc.equal(g["status"], s)))
        out.append({"type": "bar", "name": f"{e} ({s})", "x": sub["sec"].to_pylist(),
                    "y": sub["sec_count"].to_pylist(), "yaxis": "errors"})
    return out


def state_traces(events: list[Event], t0: int) -> list[dict]:
    """ISR size and leader per partition, from the state samples."""
    series: dict[int, dict[str, list]] = {}
    for e in events:
        if not isinstance(e, State) or e.partitions is None:
            continue
        x = round((e.ts_ms - t0) / 1000, 2)
        for p in e.partitions:
            s = series.setdefault(p.partition, {"x": [], "isr": [], "leader": []})
            s["x"].append(x)
            s["isr"].append(len(p.isr))
            s["leader"].append(p.leader if p.leader >= 0 else None)
    out = []
    for part, s in sorted(series.items()):
        out.append({"type": "scatter", "mode": "lines", "name": f"p{part} ISR size", "x": s["x"], "y": s["isr"],
                    "yaxis": "isr", "line": {"shape": "hv"}, "legendgroup": f"p{part}"})
        out.append({"type": "scatter", "mode": "markers", "name": f"p{part} leader", "x": s["x"],
                    "y": s["leader"], "yaxis": "leader", "marker": {"size": 4}, "legendgroup": f"p{part}"})
    return out


def position_traces(d: Path, t0: int) -> list[dict]:
    """The high watermark against each consumer's position, per partition (live phase)."""
    consumed = pq.read_table(d / CONSUMED, columns=["consumer", "partition", "offset", "hw", "poll_ts_ms", "phase"])
    live = consumed.filter(pc.equal(consumed["phase"], "live"))
    if not live.num_rows:
        return []
    g = pa.table({"sec": _per_second(live["poll_ts_ms"], t0), "consumer": live["consumer"],
                  "partition": live["partition"], "offset": live["offset"],
                  "hw": pc.coalesce(live["hw"], pa.scalar(-1, pa.int64()))}).group_by(
        ["consumer", "partition", "sec"]).aggregate([("offset", "max"), ("hw", "max")]).sort_by("sec")
    out = []
    for c in sorted(set(g["consumer"].to_pylist())):
        for part in sorted(set(g["partition"].to_pylist())):
            sub = g.filter(pc.and_(pc.equal(g["consumer"], c), pc.equal(g["partition"], part)))
            if not sub.num_rows:
                continue
            x = sub["sec"].to_pylist()
            out.append({"type": "scatter", "mode": "lines", "name": f"p{part} HW ({c})", "x": x,
                        "y": [v if v >= 0 else None for v in sub["hw_max"].to_pylist()], "yaxis": "offset",
                        "line": {"dash": "dot"}, "legendgroup": f"p{part}"})
            out.append({"type": "scatter", "mode": "lines", "name": f"p{part} {c} position", "x": x,
                        "y": [v + 1 for v in sub["offset_max"].to_pylist()], "yaxis": "offset",
                        "legendgroup": f"p{part}"})
    return out


def base_traces(run: RunView) -> list[dict]:
    produced = pq.read_table(run.path / PRODUCED, columns=["producer", "status", "send_ts_ms", "ack_ts_ms", "error"])
    untimed = frozenset(p.name for p in run.run.producers if p.client is not None
                        and "send_time" in p.client.cannot_tell)
    return [*ack_traces(produced, run.t0, untimed), *error_traces(produced, run.t0), *state_traces(run.events, run.t0),
            *position_traces(run.path, run.t0)]


FAMILY = PanelFamily(
    panels=(Panel("acked", "acked/s"), Panel("latency", "latency ms"), Panel("errors", "errors/s"),
            Panel("isr", "ISR size"), Panel("leader", "leader", {"dtick": 1}), Panel("offset", "offset")),
    shown=lambda run: True,
    traces=base_traces,
)
