"""Upgrades under load against real Kafka, in the long tier (every version here is beyond the
default one): a rolling upgrade moves every node to the later version (controllers first, each back
in every ISR before the next goes) while the safe configuration keeps its promise, on every line of
versions, and a feature upgrade raises a level mid-run. The order, the image and the refusals are
tested on data in tests/test_units_upgrades.py."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from harness.checker import check_runs
from harness.report.page import write_report
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker
from tests.test_quorum import durable

pytestmark = pytest.mark.docker

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
# (from, mode, to): each line of the versions kchaos runs, the last ZooKeeper one included.
LINES = [("3.9.1", "zk", "3.9.2"), ("3.9.2", "kraft", "4.1.2"), ("4.1.2", "kraft", "4.2.2"),
         ("4.2.2", "kraft", "4.3.1"), ("4.3.1", "kraft", "4.4.0")]


def run(tmp_path: Path, name: str, sets: list[str], versions: list[str]):
    require_docker(versions)
    s = load(SCENARIOS / f"{name}.toml", sets)
    res = runner.execute(s, tmp_path / "run", log=lambda m: None)
    (v,) = check_runs([res.path])
    events = [json.loads(x) for x in (res.path / "events.jsonl").read_text().splitlines()]
    return v, events, res.path


def roll_steps(events: list[dict]) -> list[dict]:
    (fault,) = [e for e in events if e["type"] == "fault" and e["kind"] == "rolling_upgrade"]
    assert "upgrade_error" not in fault, fault["upgrade_error"]
    return fault["upgrade"]


def rolled(tmp_path: Path, version: str, mode: str, to: str, duration_s: int = 75):
    v, events, path = run(tmp_path, "rolling-upgrade", [f"kafka_version={version}", f"mode={mode}",
                                                        f'faults.0.to="{to}"', f"duration_s={duration_s}"],
                          [version, to])
    steps = roll_steps(events)
    brokers = [s for s in steps if s["node"].startswith("kafka-")]
    assert [s["node"] for s in brokers] == ["kafka-1", "kafka-2", "kafka-3"], "every broker, from the target on"
    assert all(s["before"] == version and s["after"] == to for s in steps)
    assert all(s["begin_ms"] <= s["stopped_ms"] <= s["started_ms"] <= s["rejoined_ms"] for s in steps)
    assert all(a["rejoined_ms"] <= b["begin_ms"] for a, b in itertools.pairwise(steps)), "one at a time"
    for b in (1, 2, 3):  # the broker's own account of what it runs after the roll
        log = (path / "logs" / f"kafka-{b}.log").read_text()
        assert f"Kafka version: {to}" in log, f"kafka-{b} never started {to}"
    return v, steps


@pytest.mark.chaos_long
def test_a_roll_across_lines_moves_every_node_and_the_safe_configuration_loses_nothing(tmp_path):
    v, steps = rolled(tmp_path, "4.1.2", "kraft", "4.4.0")
    assert steps[0]["node"].startswith("controller-"), "KRaft controllers first"
    assert durable(v), v.anomalies
    write_report([tmp_path / "run"], tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "data-upgrades" in page and "kafka-3: Kafka 4.1.2 -&gt; 4.4.0" in page


@pytest.mark.chaos_long
def test_a_feature_upgrade_mid_run_raises_the_level_under_transactions(tmp_path):
    v, events, path = run(tmp_path, "feature-upgrade", [], ["4.1.2"])
    (fault,) = [e for e in events if e["type"] == "fault" and e["kind"] == "feature_upgrade"]
    assert fault["feature_change"] == {"feature": "transaction.version", "before": 0, "after": 2, "asked": 2}
    assert json.loads((path / "run.json").read_text())["features"]["transaction.version"] == 2
    assert v.anomalies["lost"] == 0 and v.anomalies["divergence"] == 0 and not v.broken_outside_configs
    assert all(not c.broken for c in v.by_config), [c.broken for c in v.by_config]


@pytest.mark.chaos_long
@pytest.mark.parametrize(("version", "mode", "to"), LINES)
def test_a_roll_of_every_line_loses_nothing_in_the_safe_configuration(tmp_path, version, mode, to):
    v, _ = rolled(tmp_path, version, mode, to)
    assert durable(v), v.anomalies
