"""The HTML report opens offline in headless Chromium, shows every count of verdict.json, fetches nothing.
A real run's report is opened by tests/test_run.py, on the leader kill it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checker import check_runs
from harness.checker.verdict import Verdict
from harness.history import RunConfig
from harness.report.page import write_report
from tests.browser import assert_report_page, open_report
from tests.histories import History

T0 = 1_700_000_000_000
FAULT = {"type": "fault", "name": "kill leader (p0)", "kind": "kill", "brokers": [1], "links": [],
         "start_ms": 1_700_000_000_050, "end_ms": 1_700_000_000_400, "leader_before": 1, "controller_before": 2}


def _history_with_anomalies() -> History:
    h = History()
    h.clean(20)
    h.send("lost-1", 20)  # acknowledged, never seen again
    h.read("x", 5, phase="live", consumer="c1", hw=30)  # a different value at offset 5: divergence
    h.events += [{"type": "workload_start", "ts_ms": 1_700_000_000_000}, FAULT,
                 {"type": "isr_not_restored", "ts_ms": 1_700_000_009_000, "topic": "t", "waited_s": 120,
                  "partitions": [{"partition": 0, "leader": 2, "replicas": [1, 2, 3], "isr": [2, 3]}]},
                 {"type": "tool_failed", "ts_ms": 1_700_000_010_000, "tool": "kafka-dump-log", "node": "kafka-1",
                  "error": "kafka-dump-log failed on kafka-1 (exit 1): bad segment", "lacks": "the coordinator's log"}]
    for i, leader in enumerate([1, 1, 2, 2]):
        h.events.append({"type": "state", "ts_ms": 1_700_000_000_000 + 100 * i, "controller": 2,
                         "brokers": [1, 2, 3] if leader == 1 else [2, 3],
                         "partitions": [{"partition": 0, "leader": leader, "replicas": [1, 2, 3],
                                         "isr": [1, 2, 3] if leader == 1 else [2, 3]}]})
    return h


def _quorum_history() -> History:
    h = History()
    h.clean(20)
    h.events += [{"type": "workload_start", "ts_ms": T0},
                 {"type": "fault", "name": "kill controller", "kind": "kill", "target": "controller", "brokers": [101],
                  "nodes": ["controller-1"], "links": [], "start_ms": T0 + 1000, "end_ms": T0 + 6000,
                  "leader_before": 1, "controller_before": 101}]
    for i, (leader, majority) in enumerate([(101, True), (101, True), (-1, False), (-1, True), (102, True)]):
        h.events.append({"type": "state", "ts_ms": T0 + 800 * i, "controller": leader, "brokers": [1, 2, 3],
                         "partitions": [{"partition": 0, "leader": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3]}],
                         "quorum": {"leader": leader, "epoch": 1 + (leader == 102), "voters": [101, 102, 103],
                                    "majority": majority, "nodes": []}})
    h.run["run_id"] = "quorum"
    return h


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, tuple[Path, Verdict]]:
    """Every history of this module checked in one Spark job, each report test's runs in a
    directory of their own: run id -> (run directory, verdict)."""
    from tests.test_checker_share import share_history
    from tests.test_checker_v2 import async_commits_regressed, txn_history

    root = tmp_path_factory.mktemp("report")
    planted = _history_with_anomalies()
    planted.run["run_id"] = "planted"
    histories = {"built/planted": planted, "built/clean": History(run={**planted.run, "run_id": "clean"}).clean(10),
                 "quorum/quorum": _quorum_history()}
    for a in ("torn_txn", "aborted_read"):
        histories[f"txn/{a}"] = txn_history(a)
        histories[f"txn/{a}"].run["run_id"] = a  # the page keys its totals by run id
    for kind, h in {"group": async_commits_regressed(), "share": share_history("share_unseen"),
                    "copier": txn_history("eos_lost")}.items():
        h.run["run_id"] = f"{kind}-run"
        histories[f"kinds/{kind}-run"] = h
    dirs = [h.write(root / name) for name, h in histories.items()]
    return {d.name: (d, v) for d, v in zip(dirs, check_runs(dirs), strict=True)}


@pytest.mark.spark
def test_report_of_built_histories_renders_offline_with_every_count(checked, tmp_path):
    a, _ = checked["planted"]
    verdicts = [checked["planted"][1], checked["clean"][1]]
    html = write_report([a.parent], tmp_path / "report.html")
    page = assert_report_page(html, verdicts)
    planted = json.loads((a / "verdict.json").read_text())
    assert planted["anomalies"]["lost"] == 1 and planted["anomalies"]["divergence"] == 1
    assert "broke 1" in page.text, "the matrix marks the broken promise with its count"
    assert "lost-1" in page.text, "the lost record is listed"
    assert "kill leader (p0)" in page.text, "the fault around the anomaly is named"
    assert "Not healed: t-0: ISR [2, 3] of replicas [1, 2, 3]" in page.text, "a partition that did not heal"
    assert planted["assumptions"] == ["kafka-dump-log failed on kafka-1: the run lacks the coordinator's log "
                                      "(kafka-dump-log failed on kafka-1 (exit 1): bad segment)"]
    assert "Read these counts with care: kafka-dump-log failed on kafka-1" in page.text, \
        "a tool that failed is said in the report, not only in a log file"
    assert html.stat().st_size < 8_000_000


@pytest.mark.spark
def test_report_of_transactions_shows_their_panel_records_and_known_issue(checked, tmp_path):
    """A run with a torn transaction and one with an aborted read: the transactions panel, each
    transaction's records (the torn one's missing record "absent"), and the known issue named."""
    dirs, verdicts = zip(*(checked[a] for a in ("torn_txn", "aborted_read")), strict=True)
    html = write_report(list(dirs), tmp_path / "report.html")
    page = open_report(html)
    assert page.console_errors == []
    for v in verdicts:
        shown = page.totals[v.run_id]
        assert {"aborted_read", "torn_txn", "precommitted_read"} <= set(shown), "a transactional run's classes"
        assert shown == {a: v.anomalies[a] for a in shown} and not {a for a, n in v.anomalies.items() if n} - set(shown)
        assert not {"share_unseen", "share_over_delivered"} & set(shown), "no class its workload could not show"
    text = html.read_text()
    assert "transactions/s" in text and "committed transactions / s" in text
    assert "transaction p0:2" in text and ">absent<" in text, "the torn transaction's missing record"
    assert "transaction p0:1" in text and "c-rc (read_committed) @3" in text, "who read the aborted record"
    assert "KAFKA-17754" in page.text


@pytest.mark.spark
def test_report_draws_the_quorum_lane_and_each_controller_failover(checked, tmp_path):
    from harness.report import known_results

    t0 = T0
    d, v = checked["quorum"]
    (f,) = v.coordination.failovers
    assert (f.leader_before, f.new_leader, f.failover_ms) == (101, 102, 3200 - 1000)
    assert v.coordination.no_majority == [{"start_ms": t0 + 1600, "end_ms": t0 + 2400, "duration_ms": 800}]
    (row,) = known_results.coordination_rows([v], {"quorum": RunConfig(scenario="q", kafka_version="3.9.1",
                                                                       mode="kraft")})
    assert (row["faults"], row["failovers"], row["failover_median_ms"]) == (1, 1, 2200)
    assert "| q | 3.9.1 kraft | 1 | 1 | 1 | 2.2 (2.2) |" in known_results.coordination_markdown([row])
    html = write_report([d], tmp_path / "report.html")
    page = assert_report_page(html, [v])
    assert "Coordination faults" in page.text and "controller-2" in page.text, "the failovers table names nodes"
    assert "quorum leader" in html.read_text(), "the coordination lane is drawn"


@pytest.mark.spark
def test_the_matrix_gives_each_run_its_own_verdict_and_a_row_per_promise_maker(checked, tmp_path):
    """Runs of every workload kind: plain, transactional, a group whose async commits moved back
    (its producers' configuration passes: the run fails), a share group, the copier. The matrix's run
    verdict is verdict.json's for each; a group's broken promise sits on the group's own row; the
    matrix and the promise table fit a 1366-pixel window."""
    runs = ["clean", "planted", "torn_txn", "group-run", "share-run", "copier-run"]
    dirs, verdicts = zip(*(checked[r] for r in runs), strict=True)
    html = write_report(list(dirs), tmp_path / "report.html")
    page = assert_report_page(html, list(verdicts))
    assert page.run_verdicts == {v.run_id: v.verdict for v in verdicts}, "the run verdict is verdict.json's"
    assert page.run_verdicts["group-run"] == "fail" and all(
        c.verdict == "pass" for c in checked["group-run"][1].by_config), "failed by its group alone"
    rows = [r for r in page.matrix_rows if r["run"] == "group-run"]
    assert [(r["kind"], r["verdict"]) for r in rows if r["kind"] == "group"] == [("group", "fail")], rows
    assert all(r["verdict"] == "pass" for r in rows if r["kind"] != "group"), "only the group broke a promise"
    assert any(r["what"].startswith("group g: classic range commit=async") for r in rows)
    share = [r for r in page.matrix_rows if r["run"] == "share-run" and r["kind"] == "share group"]
    assert [(r["what"], r["verdict"]) for r in share] == [("share group sg", "fail")]
    assert any(r["kind"] == "copier" for r in page.matrix_rows if r["run"] == "copier-run")
    assert page.overflow == {"matrix-table": 0, "promise-table": 0}, "no sideways scrolling at 1366 pixels"
