"""The report's transactions: a timeline panel of transactions per second by outcome, with the
aborted reads and torn transactions marked on it, and per anomaly example the transaction's
records: where each one is in the final log and who read it. Read with pyarrow from the run
directory (txns.parquet and the v2 columns), only for runs that have transactions.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.checker.verdict import Verdict
from harness.history import CONSUMED, PRODUCED, TXNS
from harness.report.panels import Panel, PanelFamily

PANEL = Panel("txns", "transactions/s")
OUTCOME_COLOURS = {"committed": "#2ca02c", "aborted": "#ff7f0e", "unknown": "#7f7f7f"}
MARKED = {"aborted_read": ("poll_ts_ms", "#d62728", "x"), "torn_txn": ("commit_ts_ms", "#8c564b", "diamond"),
          "precommitted_read": ("poll_ts_ms", "#9467bd", "triangle-up")}
TXN_ANOMALIES = ("aborted_read", "torn_txn", "precommitted_read")


def has_transactions(d: Path) -> bool:
    return (Path(d) / TXNS).exists()


def txn_traces(d: Path, verdict: Verdict, t0: int) -> list[dict]:
    """Transactions ended per second by outcome (stacked bars), and the examples of the transaction
    anomalies as markers at the moment they happened (the read, or the commit of a torn one)."""
    txns = pq.read_table(Path(d) / TXNS, columns=["outcome", "begin_ts_ms", "end_ts_ms"])
    ts = pc.coalesce(txns["end_ts_ms"], txns["begin_ts_ms"])
    g = pa.table({"sec": pc.divide(pc.subtract(ts, t0), 1000), "outcome": txns["outcome"]}).group_by(
        ["outcome", "sec"]).aggregate([("sec", "count")]).sort_by("sec")
    out = []
    for outcome, colour in OUTCOME_COLOURS.items():
        sub = g.filter(pc.equal(g["outcome"], outcome))
        if sub.num_rows:
            out.append({"type": "bar", "name": f"{outcome} transactions / s", "x": sub["sec"].to_pylist(),
                        "y": sub["sec_count"].to_pylist(), "yaxis": PANEL.key, "marker": {"color": colour}})
    for name, (key, colour, symbol) in MARKED.items():
        ex = [e for e in verdict.examples.get(name) or [] if e.get(key)]
        if ex:
            out.append({"type": "scatter", "mode": "markers", "name": name.replace("_", " "), "yaxis": PANEL.key,
                        "x": [round((e[key] - t0) / 1000, 2) for e in ex], "y": [0] * len(ex),
                        "text": [e.get("txn", "") for e in ex],
                        "marker": {"color": colour, "symbol": symbol, "size": 11}})
    return out


def txn_tables(d: Path, verdict: Verdict, limit: int = 5) -> dict[str, list[dict]]:
    """Per transaction anomaly, for its first ``limit`` examples: the transaction's records, each
    with its partition, what the producer was told, where the final log holds it, and who read it."""
    wanted = {a: [e["txn"] for e in (verdict.examples.get(a) or [])[:limit] if e.get("txn")] for a in TXN_ANOMALIES}
    txn_ids = sorted({t for ts in wanted.values() for t in ts})
    if not txn_ids:
        return {}
    d = Path(d)
    sends = pq.read_table(d / PRODUCED, columns=["value", "topic", "partition", "status", "offset", "txn"],
                          filters=pc.field("txn").isin(pa.array(txn_ids))).to_pylist()
    values = pa.array(sorted({s["value"] for s in sends}))
    reads = pq.read_table(d / CONSUMED, columns=["consumer", "phase", "offset", "value", "isolation"],
                          filters=pc.field("value").isin(values)).to_pylist()
    final = {r["value"]: r["offset"] for r in reads if r["phase"] == "final"}
    readers: dict[str, list[str]] = {}
    for r in reads:
        if r["phase"] == "live":
            readers.setdefault(r["value"], []).append(f"{r['consumer']} ({r['isolation'] or 'read_uncommitted'}) "
                                                      f"@{r['offset']}")
    records = {t: [{"value": s["value"], "partition": f"{s['topic']}-{s['partition']}", "status": s["status"],
                    "acked_offset": s["offset"], "final_offset": final.get(s["value"]),
                    "read_by": ", ".join(sorted(set(readers.get(s["value"], [])))) or "nobody"}
                   for s in sends if s["txn"] == t] for t in txn_ids}
    return {a: [{"txn": t, "records": records[t]} for t in ts] for a, ts in wanted.items() if ts}


FAMILY = PanelFamily(panels=(PANEL,), shown=lambda run: has_transactions(run.path),
                     traces=lambda run: txn_traces(run.path, run.verdict, run.t0))
