"""Known results: per scenario, Kafka version and mode, in how many runs each anomaly showed and how
many broke a promise. The matrix writes them to known-results.md; the report shows them."""

from __future__ import annotations

from harness.checker.verdict import Verdict


def rows(verdicts: list[Verdict], runs: dict[str, dict]) -> list[dict]:
    """Per scenario, version and mode: in how many runs each anomaly showed, and how many broke a promise."""
    rows: dict[tuple, dict] = {}
    for v in verdicts:
        run = runs.get(v.run_id, {})
        key = (run.get("scenario", "?"), run.get("kafka_version", "?"), run.get("mode", "?"),
               "elr" if run.get("eligible_leader_replicas") else "")
        r = rows.setdefault(key, {"scenario": key[0], "kafka_version": key[1], "mode": key[2], "elr": bool(key[3]),
                                  "runs": 0, "broke_promise": 0, "any_anomaly": 0, "loss_or_divergence": 0,
                                  "with": {}})
        r["runs"] += 1
        r["broke_promise"] += v.failed
        counts = v.anomalies
        r["any_anomaly"] += any(n > 0 for n in counts.values())
        r["loss_or_divergence"] += counts["lost"] > 0 or counts["divergence"] > 0
        for a, n in counts.items():
            r["with"][a] = r["with"].get(a, 0) + (n > 0)
    return list(rows.values())


def seen(runs_with: dict[str, int]) -> str:
    """The anomalies that showed, each with the number of runs it showed in ("none" if none did)."""
    return ", ".join(f"{a} {k}" for a, k in runs_with.items() if k) or "none"


def markdown(rows: list[dict]) -> str:
    head = ("| scenario | Kafka | runs | runs with loss | runs with divergence | runs with loss or divergence "
            "| runs with any anomaly | runs that broke a promise | anomalies seen (runs with each) |")
    out = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["scenario"], r["kafka_version"], r["mode"])):
        n = r["runs"]

        def pct(k: int, n: int = n) -> str:
            return f"{k}/{n} ({100 * k / n:.0f}%)"

        kafka = f"{r['kafka_version']} {r['mode']}" + (" ELR" if r["elr"] else "")
        out.append(f"| {r['scenario']} | {kafka} | {n} | {pct(r['with'].get('lost', 0))} | "
                   f"{pct(r['with'].get('divergence', 0))} | {pct(r['loss_or_divergence'])} | "
                   f"{pct(r['any_anomaly'])} | {pct(r['broke_promise'])} | {seen(r['with'])} |")
    return "\n".join(out)
