"""`kchaos run` on the cluster a `kchaos up SCENARIO` keeps, against real Kafka: the run is handed to
that process and checked here as any run, on a topic of its own; Ctrl-C to `kchaos up` leaves no
container. The protocol itself, with a stand-in for the run, is tests/test_units_kept_service.py;
what it saves is measured by benchmarks/kept_run.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.checker import warm
from harness.cluster.reaper import LABEL_PID
from harness.setup import engine
from tests.conftest import as_a_terminal_starts_it, require_docker

pytestmark = pytest.mark.docker
SCENARIO = ("acks1-leader-kill", "--set", "zookeepers=1")  # one ZooKeeper server: a quicker boot, same promise


def containers_of(pid: int) -> list[dict]:
    return engine.client().api.containers(all=True, filters={"label": f"{LABEL_PID}={pid}"})


@pytest.mark.chaos_long  # a cluster of its own; the default tier's runs share kept clusters (test_run.py)
def test_a_run_reuses_the_cluster_kchaos_up_keeps_and_ctrl_c_leaves_nothing(tmp_path):
    require_docker(["3.9.1"])
    # A registry of kept clusters of its own (the cache folder), and the suite's warm Spark server: a
    # cache folder of its own would start a second server, without its start-up cache, to check one run
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "KCHAOS_SPARK_STATE": str(warm.state_dir()),
           "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    up = subprocess.Popen([sys.executable, "-m", "harness", "up", *SCENARIO], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, preexec_fn=as_a_terminal_starts_it)
    try:
        said = []
        deadline = time.monotonic() + 180
        while not any("ready" in line for line in said) and time.monotonic() < deadline:
            assert up.poll() is None, "".join(said) + up.stdout.read()
            said.append(up.stdout.readline())
        run = subprocess.run([sys.executable, "-m", "harness", "run", *SCENARIO, "--out", str(tmp_path / "r")],
                             capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "on the kept cluster" in run.stdout + run.stderr
        assert json.loads((tmp_path / "r" / "run.json").read_text())["topics"][0]["name"].startswith("chaos-up")
        assert (tmp_path / "r" / "verdict.json").exists(), "checked here, as any run"
        assert containers_of(up.pid), "the cluster is still up for the next run"
        up.send_signal(signal.SIGINT)
        up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    deadline = time.monotonic() + 15
    while containers_of(up.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not containers_of(up.pid), "Ctrl-C to kchaos up removes its cluster"
    assert not list((tmp_path / "cache" / "kept").glob("*.json")), "and its registry entry"
