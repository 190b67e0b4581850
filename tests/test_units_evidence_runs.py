"""`kchaos evidence`: which loggers and debug contexts a finding's evidence runs turn on, and what
the archive holds. That a logger's level reaches a broker is tests/test_cluster.py's (real Kafka)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

from typer.testing import CliRunner

from harness.checker.verdict import NOT_HEALED
from harness.cli import app
from harness.hunt import affected, evidence_runs
from harness.scenario import load

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def finding(tmp_path: Path, scenario: str = "async-commit-retry", anomaly: str = "offset_regression") -> Path:
    d = tmp_path / "findings" / "01"
    d.mkdir(parents=True)
    shutil.copy(SCENARIOS / f"{scenario}.toml", d / "minimal.toml")
    (d / affected.FINDING_JSON).write_text(json.dumps({"anomaly": anomaly, "promised": True}))
    return d


def test_a_groups_finding_logs_the_group_coordinator_and_the_members_protocol(tmp_path):
    d = finding(tmp_path)
    p = evidence_runs.plan(d, runs=2)
    assert [c.seed for c, *_ in p.cells] == [1, 2]
    s = load(d / evidence_runs.EVIDENCE_TOML)
    assert s.cluster_settings().log_levels == evidence_runs.GROUPS
    assert s.groups[0].config["debug"] == evidence_runs.GROUP_DEBUG
    assert s.producers[0].config["debug"] == evidence_runs.PRODUCER_DEBUG
    assert s.faults == load(d / "minimal.toml").faults, "the same schedule"


def test_a_replication_finding_logs_the_partition_state_changes_and_controller(tmp_path):
    s = load(SCENARIOS / "zk-isr-update-lost.toml")
    levels = load(SCENARIOS / "zk-isr-update-lost.toml", evidence_runs.overrides(s, NOT_HEALED)).cluster_settings()
    assert {"kafka.cluster.Partition", "state.change.logger", "kafka.controller"} <= set(levels.log_levels)


def test_a_java_table_gets_no_librdkafka_debug_context(tmp_path):
    s = load(SCENARIOS / "async-commit-retry.toml", ["client=java", "groups.0.config={}"])
    assert not any("debug" in o for o in evidence_runs.overrides(s, "offset_regression"))


def test_the_archive_holds_the_finding_and_its_evidence_runs_but_not_the_affected_runs(tmp_path):
    d = finding(tmp_path)
    for part in ("bug.md", "report.html", affected.AFFECTED_JSON):
        (d / part).write_text("x")
    for run in ("minimal", "evidence/runs/e-s1", "affected/runs/a-s1"):
        (d / run / "logs").mkdir(parents=True)
        (d / run / "logs" / "kafka-1.log").write_text("DEBUG everything")
    archive = evidence_runs.pack(d)
    assert archive.parent == d and archive.name.startswith("01-evidence-") and archive.name.endswith(".tar.gz")
    with tarfile.open(archive) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"bug.md", "finding.json", "affected.json", "minimal.toml", "report.html", "minimal/logs/kafka-1.log",
            "evidence/runs/e-s1/logs/kafka-1.log"} <= names
    assert not any(n.startswith("affected/") for n in names)
    assert not list(d.glob("*.partial"))


def test_bad_input_is_refused_before_anything_runs(tmp_path):
    res = CliRunner().invoke(app, ["evidence", str(tmp_path), "--runs", "1"])
    assert res.exit_code == 2 and "minimal.toml" in res.output, res.output
    res = CliRunner().invoke(app, ["evidence", str(finding(tmp_path)), "--runs", "0"])
    assert res.exit_code == 2 and "--runs" in res.output, res.output
