"""The terminal tables: readable at 120 columns with every anomaly class counted, broken promises first."""

from __future__ import annotations

from rich.console import Console

from harness.checker import ANOMALIES, summarize
from harness.checker.verdict import Verdict
from harness.report.terminal import configs_table, runs_table

LABEL = "acks=all min.insync=2 rf=3 unclean=off idempotent=yes txn elr=on +power_loss"


def verdict(run_id: str, broken: list[str], counts: dict[str, int]) -> Verdict:
    counts = {a: counts.get(a, 0) for a in ANOMALIES}
    row = {"config": LABEL, "settings": {}, "producers": ["p"], "counts": counts, "promises": {},
           "broken": broken, "expected": [a for a, n in counts.items() if n and a not in broken],
           "verdict": "fail" if broken else "pass"}
    return Verdict.model_validate({
        "run_id": run_id, "run_dir": f"/runs/{run_id}", "verdict": "fail" if broken else "pass",
        "anomalies": counts, "examples": {}, "by_config": [row], "indeterminate_landed": {"count": 0},
        "failed_but_present": {"count": 0}, "unavailability": {"threshold_ms": 1000}})


def render(*tables) -> list[str]:
    c = Console(width=120, record=True, color_system=None)
    for t in tables:
        c.print(t)
    return c.export_text().splitlines()


def test_every_class_counted_still_reads_at_120_columns():
    everything = dict.fromkeys(ANOMALIES, 12345)
    vs = [verdict("power-loss-3.9.1-zk-s1-20261125-101010", ["lost", "divergence"], everything),
          verdict("txn-clean-4.1.2-kraft-s2-20261125-101111", [], {"duplicate": 3})]
    lines = render(runs_table(vs), configs_table(summarize(vs)))
    text = "\n".join(lines)
    assert max(map(len, lines)) <= 120
    assert "…" not in text, "nothing is clipped"
    assert "uncommitted 12,345" in text and "poll order 12,345" in text and "eos lost 12,345" in text
    label_lines = [ln for ln in lines if "acks=all" in ln or "idempotent" in ln or "+power_loss" in ln]
    assert 1 <= len(label_lines) <= 3, "the configuration label wraps over at most three lines"


def test_broken_promises_come_before_what_was_expected():
    vs = [verdict("r1", ["lost"], {"lost": 823, "duplicate": 3})]
    rows = [ln for ln in render(runs_table(vs)) if "r1" in ln]
    assert rows and rows[0].index("lost 823") < rows[0].index("duplicate 3")
    summary = render(configs_table(summarize(vs)))
    assert any("lost 823 (1 run)" in ln for ln in summary) and any("duplicate 3 (1 run)" in ln for ln in summary)


def test_what_a_verdict_assumes_is_on_the_terminal():
    """A Kafka tool that failed after the run (a tool_failed event) is said beside the run's counts."""
    v = verdict("r1", [], {"duplicate": 3})
    v.assumptions = ["kafka-dump-log failed on kafka-1: the run lacks the coordinator's log (exit 1)"]
    text = "\n".join(render(runs_table([v])))
    assert "read with care: kafka-dump-log failed on kafka-1" in text and "duplicate 3" in text


def test_what_a_run_could_not_judge_is_on_the_terminal():
    """A client that does not report something (Kafka's verifiable consumer: no high watermark) leaves
    a class judged in part: the terminal says so beside the counts, not a bare zero."""
    from harness.checker.verdict import NotJudged

    v = verdict("r1", [], {})
    v.not_judged = [NotJudged(client="verifiable kafka-tools 4.4.0", capability="poll_hw",
                              unjudged="uncommitted_read", extent="part",
                              why="reads at or above the high watermark the poll saw are not looked for")]
    text = " ".join(" ".join(render(runs_table([v]))).split())
    assert "not judged (part): uncommitted_read, verifiable kafka-tools 4.4.0" in text
