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
