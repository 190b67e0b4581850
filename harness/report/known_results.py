"""Known results: per scenario, Kafka version, mode and client library, in how many runs each anomaly showed and how
many broke a promise, and for faults on the coordination layer how fast it failed over. The matrix
writes them to known-results.md; the report shows them."""

from __future__ import annotations

import statistics

from harness.checker.excuses import client_label
from harness.checker.verdict import Verdict
from harness.history import RunConfig


def clients(run: RunConfig) -> str:
    """The client libraries a run used, as labels name them (``java 3.9.1 + librdkafka 2.16.0``); "-"
    for a run.json from before clients were recorded."""
    return " + ".join(sorted({client_label(c) for c in run.libraries()})) or "-"


def rows(verdicts: list[Verdict], runs: dict[str, RunConfig]) -> list[dict]:
    """Per scenario, version, mode and clients: in how many runs each anomaly showed, and how many
    broke a promise."""
    rows: dict[tuple, dict] = {}
    for v in verdicts:
        run = runs.get(v.run_id, RunConfig())
        key = (run.scenario or "?", run.kafka_version or "?", run.mode or "?",
               "elr" if run.eligible_leader_replicas else "", clients(run))
        r = rows.setdefault(key, {"scenario": key[0], "kafka_version": key[1], "mode": key[2], "elr": bool(key[3]),
                                  "client": key[4], "runs": 0, "broke_promise": 0, "any_anomaly": 0,
                                  "loss_or_divergence": 0, "with": {}})
        r["runs"] += 1
        r["broke_promise"] += v.failed
        counts = v.anomalies
        r["any_anomaly"] += any(n > 0 for n in counts.values())
        r["loss_or_divergence"] += counts["lost"] > 0 or counts["divergence"] > 0
        for a, n in counts.items():
            r["with"][a] = r["with"].get(a, 0) + (n > 0)
        r["with"]["ISR not restored"] = r["with"].get("ISR not restored", 0) + bool(v.not_healed)
    return list(rows.values())


def seen(runs_with: dict[str, int]) -> str:
    """The anomalies that showed, each with the number of runs it showed in ("none" if none did)."""
    return ", ".join(f"{a} {k}" for a, k in runs_with.items() if k) or "none"


def markdown(rows: list[dict]) -> str:
    head = ("| scenario | Kafka | client | runs | runs with loss | runs with divergence | runs with loss or divergence "
            "| runs with any anomaly | runs that broke a promise | anomalies seen (runs with each) |")
    out = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["scenario"], r["kafka_version"], r["mode"], r["client"])):
        n = r["runs"]

        def pct(k: int, n: int = n) -> str:
            return f"{k}/{n} ({100 * k / n:.0f}%)"

        kafka = f"{r['kafka_version']} {r['mode']}" + (" ELR" if r["elr"] else "")
        out.append(f"| {r['scenario']} | {kafka} | {r['client']} | {n} | {pct(r['with'].get('lost', 0))} | "
                   f"{pct(r['with'].get('divergence', 0))} | {pct(r['loss_or_divergence'])} | "
                   f"{pct(r['any_anomaly'])} | {pct(r['broke_promise'])} | {seen(r['with'])} |")
    return "\n".join(out)


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def coordination_rows(verdicts: list[Verdict], runs: dict[str, RunConfig]) -> list[dict]:
    """Per scenario, version and mode with faults on the coordination layer: how many such faults,
    how many changed the leader and how fast (failover), and what they cost (no majority, no
    acknowledgement), each as the median and the worst over the runs' faults."""
    acc: dict[tuple, dict] = {}
    for v in verdicts:
        if not v.coordination.failovers:
            continue
        run = runs.get(v.run_id, RunConfig())
        key = (run.scenario or "?", run.kafka_version or "?", run.mode or "?")
        a = acc.setdefault(key, {"runs": 0, "faults": 0, "failover": [], "no_majority": [], "outage": []})
        a["runs"] += 1
        for f in v.coordination.failovers:
            a["faults"] += 1
            if f.failover_ms is not None:
                a["failover"].append(f.failover_ms)
            a["no_majority"].append(f.no_majority_ms)
            a["outage"].append(f.outage_ms)
    return [{"scenario": k[0], "kafka_version": k[1], "mode": k[2], "runs": a["runs"], "faults": a["faults"],
             "failovers": len(a["failover"]),
             **{f"{m}_median_ms": _median(a[m]) for m in ("failover", "no_majority", "outage")},
             **{f"{m}_max_ms": max(a[m], default=None) for m in ("failover", "no_majority", "outage")}}
            for k, a in sorted(acc.items())]


def coordination_markdown(rows: list[dict]) -> str:
    """The coordination table: seconds, median (worst) over every coordination fault of the row."""
    def s(r: dict, m: str) -> str:
        med, top = r[f"{m}_median_ms"], r[f"{m}_max_ms"]
        return "-" if med is None else f"{med / 1000:.1f} ({top / 1000:.1f})"

    out = ["| scenario | Kafka | runs | coordination faults | that moved the leader | failover s | "
           "no majority s | no acknowledgement s |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {r['scenario']} | {r['kafka_version']} {r['mode']} | {r['runs']} | {r['faults']} | {r['failovers']} | "
            f"{s(r, 'failover')} | {s(r, 'no_majority')} | {s(r, 'outage')} |" for r in rows]
    return "\n".join(out)
