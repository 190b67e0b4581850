"""kchaos matrix resumes: finished runs are not run again, and every run is checked and reported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.histories import History

pytestmark = pytest.mark.docker  # the matrix asks the engine whether images exist before anything


def test_a_finished_matrix_is_not_run_again_but_checked_and_reported(tmp_path):
    from tests.conftest import require_docker

    require_docker(["3.9.1"])
    out = tmp_path / "reports"
    h = History(run={"run_id": "smoke-3.9.1-zk-s1", "scenario": "smoke", "kafka_version": "3.9.1", "mode": "zk",
                     "topics": [{"name": "t", "replication_factor": 3, "config": {"min.insync.replicas": "2"}}],
                     "producers": [{"name": "p0", "acks": "all", "idempotence": True, "topic": "t"}]})
    h.clean(30).write(out / "runs" / "smoke-3.9.1-zk-s1")
    res = subprocess.run([sys.executable, "-m", "harness", "matrix", "--scenarios", "smoke", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "1 runs in the matrix, 1 already done, 0 to run" in res.stdout
    assert (out / "index.html").exists() and "report:" in res.stdout.splitlines()[-1]
    assert "| smoke | 3.9.1 zk | - | 1 | 0/1 (0%) |" in (out / "known-results.md").read_text()
    v = json.loads((out / "runs" / "smoke-3.9.1-zk-s1" / "verdict.json").read_text())
    assert v["verdict"] == "pass"


@pytest.mark.chaos_long  # several runs on one cluster: over a minute and a half
def test_cells_that_may_share_run_on_one_kept_cluster_each_on_a_topic_of_its_own(tmp_path):
    """Two seeds of a plain workload: the second runs on the first's cluster, healed, on its own
    topic, and its repeat command names that topic; both are checked and pass."""
    from tests.conftest import require_docker

    require_docker(["3.9.1"])
    out = tmp_path / "reports"
    res = subprocess.run([sys.executable, "-m", "harness", "matrix", "--scenarios", "smoke", "--seeds", "2",
                          "--set", "duration_s=10", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    runs = {d.name[-2:]: json.loads((d / "run.json").read_text()) for d in (out / "runs").iterdir()}
    assert [runs[s]["cluster_run"] for s in ("s1", "s2")] == [1, 2]
    assert [runs[s]["topics"][0]["name"] for s in ("s1", "s2")] == ["chaos-m0", "chaos-m1"]
    assert runs["s2"]["reproduce"].startswith("kchaos run scenarios/smoke.toml --seed 2 ")
    assert "--set 'topic.name=\"chaos-m1\"'" in runs["s2"]["reproduce"]
    assert runs["s2"]["phases"]["cluster_up"] < 1
    checked = [line for line in res.stdout.splitlines() if line.strip().startswith("checked")]
    assert len(checked) == 2 and all(": pass" in line for line in checked), "each run's verdict as it is known"
    for s in ("s1", "s2"):
        assert json.loads((out / "runs" / f"smoke-3.9.1-zk-duration_s=10-s{s[-1]}" / "verdict.json").read_text())[
            "verdict"] == "pass"
