"""The report's consumer groups: two timeline panels (which member held which partition, with its
generation, and each group's committed offset behind the log end per partition) and, per group,
its members, its final offsets against the log end, and for each group anomaly the records around
it. Read with pyarrow from the run directory, only for runs that have groups.
"""

from __future__ import annotations

import bisect
from pathlib import Path

import pyarrow.parquet as pq

from harness.checker.verdict import Verdict
from harness.history import CONSUMED, OFFSETS, PRODUCED, RunConfig
from harness.history.events import CommitRefused, Event, Rebalance
from harness.report.panels import Panel, PanelFamily, RunView

HELD, LAG = Panel("held", "partitions held"), Panel("lag", "commit lag (records)")
AROUND = 3  # records (or commits) shown on each side of an anomaly


def has_groups(run: RunConfig) -> bool:
    return bool(run.groups)


def held_spans(events: list[Event], end_ms: int) -> list[dict]:
    """(group, consumer, partition, generation, start_ms, end_ms) of every stretch a member held a
    partition: an assignment adds partitions, a revocation or loss removes them."""
    open_: dict[tuple[str, str, int], tuple[int, int]] = {}
    spans = []
    for e in sorted((e for e in events if isinstance(e, Rebalance)), key=lambda e: e.ts_ms):
        for p in e.partitions:
            key = (e.group, e.consumer, p)
            if e.kind == "assign":
                open_.setdefault(key, (e.ts_ms, e.generation))
            elif key in open_:
                start, gen = open_.pop(key)
                spans.append({"group": key[0], "consumer": key[1], "partition": p, "generation": gen,
                              "start_ms": start, "end_ms": e.ts_ms})
    spans += [{"group": g, "consumer": c, "partition": p, "generation": gen, "start_ms": start, "end_ms": end_ms}
              for (g, c, p), (start, gen) in open_.items()]
    return spans


def held_traces(events: list[Event], t0: int, end_ms: int) -> list[dict]:
    """One line per member process: the partitions it held over time (y = partition), and each
    refused commit as a cross."""
    by_member: dict[str, dict] = {}
    for s in held_spans(events, end_ms):
        t = by_member.setdefault(f"{s['group']}/{s['consumer']}", {"x": [], "y": [], "text": []})
        t["x"] += [(s["start_ms"] - t0) / 1000, (s["end_ms"] - t0) / 1000, None]
        t["y"] += [s["partition"]] * 2 + [None]
        t["text"] += [f"{s['consumer']} generation {s['generation']}"] * 2 + [""]
    out = [{"type": "scatter", "mode": "lines", "name": name, "yaxis": HELD.key, "line": {"width": 6},
            **t} for name, t in sorted(by_member.items())]
    refused = [e for e in events if isinstance(e, CommitRefused)]
    if refused:
        out.append({"type": "scatter", "mode": "markers", "name": "commit refused", "yaxis": HELD.key,
                    "x": [(e.ts_ms - t0) / 1000 for e in refused], "y": [-0.5] * len(refused),
                    "text": [f"{e.consumer}: {e.error}" for e in refused],
                    "marker": {"symbol": "x", "size": 10, "color": "#d62728"}})
    return out


def log_ends(d: Path) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """Per (topic, partition): acknowledgement times and the log end each one made known."""
    rows = pq.read_table(d / PRODUCED, columns=["topic", "partition", "offset", "ack_ts_ms", "status"]).to_pylist()
    ends: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for r in sorted((r for r in rows if r["status"] == "ok" and r["offset"] is not None), key=lambda r: r["ack_ts_ms"]):
        ts, end = ends.setdefault((r["topic"], r["partition"]), ([], []))
        ts.append(r["ack_ts_ms"])
        end.append(max(end[-1] if end else 0, r["offset"] + 1))
    return ends


def lag_traces(d: Path, t0: int) -> list[dict]:
    """Per group and partition: the log end known when each commit was acknowledged, minus it."""
    ends = log_ends(d)
    lines: dict[str, dict] = {}
    for c in sorted(pq.read_table(d / OFFSETS).to_pylist(), key=lambda c: c["ts_ms"]):
        if c["phase"] != "live":
            continue
        ts, end = ends.get((c["topic"], c["partition"]), ([], []))
        i = bisect.bisect_right(ts, c["ts_ms"])
        t = lines.setdefault(f"{c['group']} p{c['partition']} lag", {"x": [], "y": []})
        t["x"].append((c["ts_ms"] - t0) / 1000)
        t["y"].append((end[i - 1] if i else 0) - c["offset"])
    return [{"type": "scatter", "mode": "lines", "name": name, "yaxis": LAG.key, **t}
            for name, t in sorted(lines.items())]


def group_traces(run: RunView) -> list[dict]:
    return [*held_traces(run.events, run.t0, run.end_ms), *lag_traces(run.path, run.t0)]


def group_tables(d: Path, verdict: Verdict) -> list[dict]:
    """Per group: its verdict, its members (each process, what it returned, its generations), and its
    final committed offset against the final log end per partition."""
    d = Path(d)
    consumed = pq.read_table(d / CONSUMED, columns=["consumer", "group", "generation", "phase", "topic", "partition",
                                                   "offset"]).to_pylist()
    final_end: dict[tuple[str, int], int] = {}
    for r in consumed:
        if r["phase"] == "final":
            key = (r["topic"], r["partition"])
            final_end[key] = max(final_end.get(key, 0), r["offset"] + 1)
    offsets = [r for r in pq.read_table(d / OFFSETS).to_pylist() if r["phase"] == "final"] \
        if (d / OFFSETS).exists() else []
    out = []
    for g in verdict.by_group:
        if g.settings.get("commit") == "share":  # a share group has a table of its own (report_shares.py)
            continue
        members: dict[str, dict] = {}
        for r in consumed:
            if r["group"] == g.group and r["phase"] == "live":
                m = members.setdefault(r["consumer"], {"consumer": r["consumer"], "returned": 0, "generations": set()})
                m["returned"] += 1
                m["generations"].add(r["generation"])
        parts = [{"topic": o["topic"], "partition": o["partition"], "committed": o["offset"],
                  "log_end": final_end.get((o["topic"], o["partition"]), 0)}
                 for o in sorted(offsets, key=lambda o: (o["topic"], o["partition"])) if o["group"] == g.group]
        out.append({"verdict": g, "members": [{**m, "generations": sorted(x for x in m["generations"] if x is not None)}
                                              for m in sorted(members.values(), key=lambda m: m["consumer"])],
                    "partitions": parts})
    return out


def group_context(d: Path, verdict: Verdict, limit: int = 5) -> dict[str, list[dict]]:
    """For the first ``limit`` examples of each group anomaly, what surrounds it: the final log's
    records next to an unseen one (and which of the group's members returned each), or the group's
    commits next to the one that went back."""
    d = Path(d)
    out: dict[str, list[dict]] = {}
    unseen = (verdict.examples.get("group_unseen") or [])[:limit]
    if unseen:
        consumed = pq.read_table(d / CONSUMED, columns=["consumer", "group", "phase", "topic", "partition", "offset",
                                                       "value"]).to_pylist()
        for e in unseen:
            near = range(e["offset"] - AROUND, e["offset"] + AROUND + 1)
            log = {r["offset"]: r["value"] for r in consumed if r["phase"] == "final" and r["topic"] == e["topic"]
                   and r["partition"] == e["partition"] and r["offset"] in near}
            readers: dict[str, set[str]] = {}
            for r in consumed:
                if r["group"] == e["group"] and r["value"] in log.values():
                    readers.setdefault(r["value"], set()).add(r["consumer"])
            out.setdefault("group_unseen", []).append({"title": f"{e['group']}: {e['topic']}-{e['partition']} around "
                                                                f"offset {e['offset']}", "rows": [
                {"offset": o, "value": v, "returned by": ", ".join(sorted(readers.get(v, ()))) or "nobody"}
                for o, v in sorted(log.items())]})
    # The acknowledged commits in the order acknowledged; the coordinator's, in the order it wrote them.
    for anomaly, phase, order, whose in (("offset_regression", "live", ("ts_ms", "offset"), "commits"),
                                         ("coordinator_regression", "written", ("log_offset",),
                                          "commits the coordinator wrote")):
        regressed = (verdict.examples.get(anomaly) or [])[:limit]
        if not regressed:
            continue
        commits = sorted((r for r in pq.read_table(d / OFFSETS).to_pylist() if r["phase"] == phase),
                         key=lambda r: tuple(r[k] for k in order))
        for e in regressed:
            mine = [c for c in commits if c["group"] == e["group"] and c["partition"] == e["partition"]]
            i = next((k for k, c in enumerate(mine) if all(c[k] == e[k] for k in (*order, "offset"))), 0)
            out.setdefault(anomaly, []).append({
                "title": f"{e['group']}: {whose} to {e['topic']}-{e['partition']} around the one that went back",
                "rows": [{**{k: c[k] for k in order}, "offset": c["offset"], "went back": c is mine[i]}
                         for c in mine[max(0, i - AROUND): i + AROUND + 1]]})
    return out


FAMILY = PanelFamily(panels=(HELD, LAG), shown=lambda run: has_groups(run.run), traces=group_traces)
