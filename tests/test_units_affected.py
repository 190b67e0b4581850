"""`kchaos affected`: which versions and clients a finding's minimal schedule is run on, how a run's
verdict counts as showing the finding, and the table written into affected.json and bug.md. The
runs are fakes here: each cell's verdict is made from its coordinates (the matrix that runs real
ones is tests/test_matrix_cli.py's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.checker.verdict import NOT_HEALED
from harness.cli import app
from harness.hunt import affected
from harness.run import matrix
from tests.test_units_tables import verdict

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def finding(tmp_path: Path, anomaly: str = "offset_regression", promised: bool = True) -> Path:
    d = tmp_path / "findings" / "01-offset_regression"
    d.mkdir(parents=True)
    shutil.copy(SCENARIOS / "async-commit-retry.toml", d / "minimal.toml")
    (d / affected.FINDING_JSON).write_text(json.dumps({"anomaly": anomaly, "promised": promised}))
    (d / "bug.md").write_text("# t\n\n## Observed\n\nx\n\n## Affected versions\n\nMeasured on one only.\n\n"
                              "## Root cause\n\nUnexplained.\n")
    return d


def test_the_findings_line_then_the_newest_of_each_later_line():
    assert affected.versions_to_try("3.9.1") == ["3.9.1", "3.9.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"]
    assert affected.versions_to_try("4.1.2") == ["4.1.1", "4.1.2", "4.2.2", "4.3.1", "4.4.0"]
    assert affected.versions_to_try("2.8.2") == ["2.8.2", "3.9.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"]
    assert affected.mode_on("3.9.2", "zk") == ("zk", "")
    assert affected.mode_on("4.4.0", "zk") == ("kraft", "zk mode does not exist on 4.4.0: run in kraft")


def test_a_run_shows_the_finding_only_where_its_promise_is_broken():
    broke = verdict("r1", ["offset_regression"], {"offset_regression": 2})
    counted = verdict("r2", [], {"offset_regression": 2})
    assert affected.showed(broke, "offset_regression", promised=True)
    assert not affected.showed(counted, "offset_regression", promised=True), "counted where it is allowed"
    assert affected.showed(counted, "offset_regression", promised=False), "a finding hunted with --anomaly"
    assert not affected.showed(broke, NOT_HEALED, promised=True)


def test_measure_counts_each_version_and_client_and_rewrites_bug_mds_table(tmp_path, monkeypatch):
    d = finding(tmp_path)
    m = affected.prepare(d, ["3.9.1", "4.4.0"], ["java", "librdkafka"], runs=3)  # java's note is its own
    assert {(c.kafka_version, c.mode, c.client) for c, *_ in m.plan.cells} == {
        ("3.9.1", "zk", "librdkafka"), ("3.9.1", "zk", "java"), ("4.4.0", "kraft", "librdkafka"),
        ("4.4.0", "kraft", "java")}
    assert len(m.plan.cells) == 12

    def run_cells(p, out, announce, **kw):
        for cell, *_ in p.cells:
            (out / "runs" / cell.run_id).mkdir(parents=True)
            if cell.client == "librdkafka":  # the library's version as the run recorded it
                (out / "runs" / cell.run_id / "run.json").write_text(json.dumps(
                    {"client": {"name": "librdkafka", "version": "librdkafka 2.16.0"}}))
        return [out / "runs" / c.run_id for c, *_ in p.cells]

    def check_and_report(finished, out, spark_master=None):
        # librdkafka shows it in seeds 1 and 2 on 3.9.1 and in seed 1 on 4.4.0; java never
        def one(d: Path):
            shows = "librdkafka" in d.name and (d.name.endswith(("-s1", "-s2")) if "3.9.1" in d.name
                                                 else d.name.endswith("-s1"))
            return verdict(d.name, ["offset_regression"] if shows else [], {"offset_regression": int(shows)})
        return matrix.Outcome([one(d) for d in finished], "", out / "index.html", [])

    monkeypatch.setattr(matrix, "run_cells", run_cells)
    monkeypatch.setattr(matrix, "check_and_report", check_and_report)
    rows = {(r.kafka, r.client): (r.k, r.n, r.note) for r in affected.measure(m, lambda what, line: None)}
    bare = "the client tables' `config` left out (another library's properties)"  # librdkafka's debug
    kraft = "zk mode does not exist on 4.4.0: run in kraft"
    assert rows == {("3.9.1", "librdkafka 2.16.0"): (2, 3, ""), ("3.9.1", "java"): (0, 3, bare),
                    ("4.4.0", "librdkafka 2.16.0"): (1, 3, kraft), ("4.4.0", "java"): (0, 3, f"{kraft}; {bare}")}
    assert len(json.loads((d / affected.AFFECTED_JSON).read_text())["rows"]) == 4
    bug = (d / "bug.md").read_text()
    assert "Measured on one only" not in bug and "## Root cause\n\nUnexplained." in bug
    assert "| 3.9.1 | zk | librdkafka 2.16.0 | 3 | 2 | 67% (21%-94%) | affected |" in bug
    assert f"| 3.9.1 | zk | java | 3 | 0 | 0% (0%-56%) | not seen; {bare} |" in bug


def test_a_client_that_cannot_run_the_workload_is_a_row_that_says_why(tmp_path, monkeypatch):
    d = finding(tmp_path)

    def refuse(specs, *args, **kw):
        if args[-1] == ["java"]:
            raise matrix.scenario_mod.ScenarioError("groups.0.protocol: java cannot run this")
        return matrix.Plan()

    monkeypatch.setattr(matrix, "plan", refuse)
    m = affected.prepare(d, ["3.9.1"], ["librdkafka", "java"], runs=2)
    assert [(r.client, r.n, r.note) for r in m.refused] == [
        ("java", 0, "not run: groups.0.protocol: java cannot run this")]
    assert "| 3.9.1 | zk | java | 0 | - | - | not run: groups.0.protocol: java cannot run this |" in \
        affected.markdown(m.refused)


@pytest.mark.parametrize(("args", "words"), [
    (["--runs", "0"], ["--runs", "1 or more"]),
    (["--versions", "9.9.9"], ["--versions", "9.9.9", "allowed"]),
])
def test_bad_options_are_refused_before_anything_runs(tmp_path, args, words):
    res = CliRunner().invoke(app, ["affected", str(finding(tmp_path)), *args])
    assert res.exit_code == 2, res.output
    for w in words:
        assert w in res.output, res.output


def test_a_directory_that_is_not_a_finding_is_refused_naming_the_file(tmp_path):
    res = CliRunner().invoke(app, ["affected", str(tmp_path)])
    assert res.exit_code == 2 and "minimal.toml" in res.output, res.output
    d = finding(tmp_path)
    (d / affected.FINDING_JSON).write_text("{}")
    res = CliRunner().invoke(app, ["affected", str(d)])
    assert res.exit_code == 2 and "finding.json" in res.output and "anomaly" in res.output, res.output


def test_measurements_of_one_finding_add_up_and_a_version_measured_again_replaces_its_row(tmp_path):
    d = finding(tmp_path)
    affected.write(d, [affected.Row("3.9.1", "zk", "kafka-clients 3.9.1", 10, 0),  # stored before rows had a library
                       affected.Row("3.9.1", "zk", "librdkafka 2.16.0", 10, 4, library="librdkafka")])
    again = [affected.Row("3.9.1", "zk", "librdkafka 2.16.0", 20, 9, library="librdkafka"),
             affected.Row("2.8.2", "zk", "kafka-clients 2.8.2", 10, 3, library="java")]
    kept = affected.earlier_rows(d, again)
    assert [(r.kafka, r.client, r.n, r.library) for r in kept] == [("3.9.1", "kafka-clients 3.9.1", 10, "java")]
    affected.write(d, kept + again)
    bug = (d / "bug.md").read_text()
    assert "| 2.8.2 | zk | kafka-clients 2.8.2 | 10 | 3 |" in bug
    assert "| 3.9.1 | zk | kafka-clients 3.9.1 | 10 | 0 |" in bug
    assert "| 3.9.1 | zk | librdkafka 2.16.0 | 20 | 9 |" in bug and "| 10 | 4 |" not in bug
