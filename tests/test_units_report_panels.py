"""The report's timeline panels are registered (report/panels.py): the page stacks the families a run
has and numbers their axes itself, so a run with transactions, groups or a quorum gets exactly the
axes its panels need, each trace on its own panel's axis."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checker.verdict import Coordination, KnownIssue, Reported, Unavailability, Verdict
from harness.history import RunConfig
from harness.history.events import from_dicts
from harness.report import page
from harness.report.panels import Panel, axis_ids, layout_key, on_axes
from tests.histories import History
from tests.test_checker_v2 import txn_history
from tests.test_report import T0, _quorum_history


def _verdict(d: Path) -> Verdict:
    return Verdict(run_id=d.name, run_dir=str(d), verdict="pass", anomalies={}, examples={}, by_config=[],
                   indeterminate_landed=Reported(count=0), failed_but_present=Reported(count=0),
                   unavailability=Unavailability(threshold_ms=1000))


def _timeline(h: History, d: Path, **verdict) -> tuple[dict, list[str]]:
    """The figure of ``h`` written to ``d``, and the titles of its panels from top to bottom."""
    d = h.write(d)
    run = RunConfig.model_validate(h.run)
    fig = page.timeline(d, run, _verdict(d).model_copy(update=verdict), from_dicts(h.events))
    axes = sorted((k for k in fig["layout"] if k.startswith("yaxis")), key=lambda k: -fig["layout"][k]["domain"][1])
    return fig, [fig["layout"][k]["title"]["text"] for k in axes]


def test_axis_ids_number_panels_in_stacking_order_and_refuse_a_shared_key():
    assert axis_ids([Panel("a", "A"), Panel("b", "B"), Panel("c", "C")]) == {"a": "y", "b": "y2", "c": "y3"}
    assert (layout_key("y"), layout_key("y12")) == ("yaxis", "yaxis12")
    with pytest.raises(ValueError, match="share a key"):
        axis_ids([Panel("a", "A"), Panel("a", "again")])


def test_traces_move_to_their_panels_axis_and_an_unknown_panel_is_refused():
    assert on_axes([{"yaxis": "b", "x": [1]}], {"a": "y", "b": "y2"}) == [{"yaxis": "y2", "x": [1]}]
    with pytest.raises(ValueError, match="nope"):
        on_axes([{"yaxis": "nope"}], {"a": "y"})


def test_every_registered_panel_has_a_key_of_its_own():
    keys = [p.key for f in page.FAMILIES for p in f.panels]
    assert len(keys) == len(set(keys)), keys


def test_a_plain_run_has_the_six_base_panels(tmp_path):
    h = History()
    h.clean(20)
    fig, titles = _timeline(h, tmp_path / "plain")
    assert titles == ["acked/s", "latency ms", "errors/s", "ISR size", "leader", "offset"]
    axes = {t["yaxis"] for t in fig["data"]}
    assert axes <= {"y", "y2", "y3", "y4", "y5", "y6"} and "y" in axes
    assert fig["layout"]["xaxis"]["anchor"] == "y6", "the last panel carries the time axis"


def test_a_quorum_run_gets_its_lane_next_after_the_base_panels(tmp_path):
    no_majority = [{"start_ms": T0 + 1600, "end_ms": T0 + 2400, "duration_ms": 800}]
    fig, titles = _timeline(_quorum_history(), tmp_path / "quorum", coordination=Coordination(no_majority=no_majority))
    assert titles[-1] == "quorum leader" and len(titles) == 7
    lane = fig["layout"]["yaxis7"]
    assert lane["type"] == "category", "the leader is a node name"
    leaders = [t for t in fig["data"] if t["name"] == "quorum leader"]
    assert leaders and leaders[0]["yaxis"] == "y7"
    assert any(s.get("fillcolor") and s["y0"] == lane["domain"][0] for s in fig["layout"]["shapes"]), \
        "the span without a majority is shaded on the lane"


def test_a_faulted_formation_is_drawn_on_the_quorum_lane_before_the_workload(tmp_path):
    h = _quorum_history()
    h.events.append({"type": "formation", "ts_ms": T0 - 9000, "kind": "kill", "leader": 102, "epoch": 1,
                     "elected_after_s": 4.1, "delay_s": 0.2, "duration_s": 3.0,
                     "heal_ms": T0 - 6000, "leader_after": 101, "epoch_after": 2, "formed_ms": T0 - 2000})
    fig, _ = _timeline(h, tmp_path / "formed")
    (formed,) = [t for t in fig["data"] if t["name"] == "formation"]
    assert formed["yaxis"] == "y7" and formed["x"] == [-9.0, -6.0, -2.0]
    assert formed["y"] == ["controller-2", "controller-2", "controller-1"]
    assert formed["text"][0] == "kill (first leader, epoch 1)" and formed["text"][2] == "formed (epoch 2)"


def test_a_transactional_run_gets_the_transactions_panel(tmp_path):
    fig, titles = _timeline(txn_history(), tmp_path / "txn")
    assert titles[6] == "transactions/s"
    assert any(t["yaxis"] == "y7" and "transactions" in t["name"] for t in fig["data"])
    for t in fig["data"]:
        assert page.layout_key(t["yaxis"]) in fig["layout"], f"trace {t['name']} on an axis the page lacks"


def test_a_runs_end_is_the_last_moment_its_typed_events_name(tmp_path):
    """The group panel draws each member's held partitions up to the run's end: the events are typed
    records (a State has ts_ms, a Fault end_ms), not dicts."""
    from harness.report.panels import RunView

    events = from_dicts([
        {"type": "workload_start", "ts_ms": T0},
        {"type": "state", "ts_ms": T0 + 500, "brokers": [1],
         "partitions": [{"partition": 0, "leader": 1, "replicas": [1], "isr": [1]}]},
        {"type": "fault", "kind": "kill", "target": "leader", "name": "kill leader", "start_ms": T0 + 1000,
         "end_ms": T0 + 9000},
    ])
    run = RunConfig.model_validate({})
    assert RunView(tmp_path, run, _verdict(tmp_path), events, T0).end_ms == T0 + 9000


def test_a_known_bug_is_called_the_cause_only_where_the_runs_logs_show_it(tmp_path):
    """The page names a known bug as what explains an anomaly only with the log line that shows its
    mechanism; one that only fits the configuration leaves the anomaly unexplained."""
    d = txn_history().write(tmp_path / "txn")
    fits = KnownIssue(issue="KAFKA-17754", anomalies=["lost"], why="a late produce lands in the next transaction")
    shown = KnownIssue(issue="kchaos-F3", anomalies=["lost"], why="the abort reuses sequences", shown=True,
                       evidence="logs/clients.log: ADVBASE chaos [0] advancing epoch base msgid to 5")
    v = _verdict(d).model_copy(update={"known_issues": [fits, shown],
                                       "anomalies": {c.name: 0 for c in page.CLASSES} | {"lost": 4}})
    text = page.render([{**page.run_section(d, v), "anchor": "run0"}], "t")
    assert "<b>kchaos-F3</b> explains lost" in text and "advancing epoch base msgid to 5" in text
    assert "<b>Unexplained</b> lost: the configuration is KAFKA-17754's" in text
    assert "no log line kchaos reads shows its mechanism" in text and "may explain" not in text
