"""The checker on a real Spark cluster: a standalone master and worker started from the pyspark
install (loopback only, stopped afterwards) give the same verdicts as embedded local[*]."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.checker import check_runs
from harness.checker.promises import V1_ANOMALIES
from harness.checker.standalone import standalone_cluster
from tests.histories import History
from tests.test_checker import plant

# A master, a worker and a driver JVM on two cores take over a minute: the long tier runs it.
pytestmark = [pytest.mark.spark, pytest.mark.chaos_long]


def test_a_standalone_cluster_gives_the_verdicts_local_spark_gives(tmp_path):
    dirs = []
    for i, anomaly in enumerate(("none", *V1_ANOMALIES)):
        h = History().clean(5)
        if anomaly != "none":
            plant(h, anomaly)
        dirs.append(h.write(tmp_path / "runs" / f"r{i}-{anomaly}"))
    local = {v.run_id + v.run_dir: (v.verdict, v.anomalies) for v in check_runs(dirs, write_verdicts=False)}
    assert len(local) == len(dirs)
    with standalone_cluster(tmp_path / "spark") as url:
        res = subprocess.run([sys.executable, "-m", "harness", "check", "--spark-master", url, str(tmp_path / "runs")],
                             capture_output=True, text=True, timeout=600)
        assert "app-" in (tmp_path / "spark" / "master.log").read_text(), "the check ran as an application there"
    assert res.returncode == 1, res.stdout + res.stderr  # the planted anomalies break promises
    remote = {}
    for d in dirs:
        v = json.loads((d / "verdict.json").read_text())
        remote[v["run_id"] + v["run_dir"]] = (v["verdict"], v["anomalies"])
    assert remote == local
    assert sorted(sum(counts.values()) for _, counts in remote.values()) == [0] + [1] * len(V1_ANOMALIES)
