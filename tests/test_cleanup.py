"""No container or network outlives a run, even one killed with SIGINT or SIGKILL."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from harness.cluster import reaper
from harness.run.directory import could_not_run_dir
from harness.setup import engine, images
from tests.conftest import as_a_terminal_starts_it, require_docker

pytestmark = pytest.mark.docker

SMOKE = Path(__file__).resolve().parent.parent / "scenarios" / "smoke.toml"


def _start_held_cluster() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "up", "--brokers", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "COLUMNS": "200"}, preexec_fn=as_a_terminal_starts_it,
    )
    deadline = time.monotonic() + 90
    assert proc.stdout is not None
    for line in proc.stdout:
        if " ready" in line and line.startswith("session "):
            return proc, line.split()[1]
        if time.monotonic() > deadline:
            break
    proc.kill()
    pytest.fail("`kchaos up` never said ready")


def _session_resources(client: docker.DockerClient, session: str) -> list[str]:
    return [x.name for x in reaper.inventory(client) if x.session == session]


def _wait_gone(client: docker.DockerClient, session: str, timeout_s: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout_s
    left = _session_resources(client, session)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _session_resources(client, session)
    return left


# SIGKILL (no handler runs: the next run's reaper must clean up) in the default tier; SIGINT in the long one.
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.chaos_long), signal.SIGKILL],
                         ids=["SIGINT", "SIGKILL"])
def test_killed_run_leaves_nothing(sig):
    require_docker(["3.9.1"])
    client = engine.client()
    proc, session = _start_held_cluster()
    assert _session_resources(client, session), "the held cluster should have containers"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    left = _wait_gone(client, session)
    assert left == [], f"left behind after {sig.name}: {left}"
    # and `kchaos doctor` agrees
    from harness.doctor import check_leftovers

    assert check_leftovers().ok


def test_a_cluster_that_cannot_come_up_fails_at_once_with_the_brokers_own_reason():
    """A broker setting each version's config definition takes but Kafka refuses beside another
    (KafkaConfig.validateValues: replica.socket.timeout.ms, 30 s by default, must be at least
    replica.fetch.wait.max.ms) is left to the broker: it exits at start, and the run stops there
    with the broker's own words, exit 3, no container and no run directory left, long before the
    boot's bound; what is kept (OUT.could-not-run) has every container's own log."""
    require_docker(["3.9.1"])
    out = Path(f"/tmp/kchaos-never-up-{os.getpid()}")
    t0 = time.monotonic()
    with subprocess.Popen([sys.executable, "-m", "harness", "run", str(SMOKE), "--out", str(out), "--set",
                           "zookeepers=1", "--set", "broker_config.replica.fetch.wait.max.ms=40000"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "COLUMNS": "200"}) as p:
        said, _ = p.communicate(timeout=300)
    took = time.monotonic() - t0
    assert p.returncode == 3 and "Traceback (most recent call last)" not in said, said[-3000:]
    assert "exited (code 1)" in said and "replica.socket.timeout.ms should always be at least" in said, said[-3000:]
    assert took < 60, f"{took:.0f} s: a broker that exits is noticed at once, not at the boot's bound"
    assert not out.exists(), "no run directory for a run that never started"
    kept = could_not_run_dir(out)
    try:
        logs = {f.name: f.read_text() for f in (kept / "logs").glob("kafka-*.log")}
        assert any("replica.socket.timeout.ms should always be at least" in x for x in logs.values()), \
            f"the brokers' own logs are kept with the error: {sorted(logs)}"
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    assert [x.name for x in reaper.inventory(engine.client()) if x.pid == str(p.pid)] == []


def test_next_run_removes_what_a_dead_run_left():
    require_docker()
    client = engine.client()
    # A network labelled as owned by a process that no longer exists.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    labels = reaper.labels()
    labels[reaper.LABEL_PID] = str(dead.pid)
    labels[reaper.LABEL_SESSION] = "deadbeef0000"
    net = client.networks.create(f"kchaos-orphan-{dead.pid}", labels=labels, internal=True)
    try:
        from harness.doctor import check_leftovers

        assert not check_leftovers().ok
        assert reaper.reap_orphans(client) >= 1
        assert _session_resources(client, "deadbeef0000") == []
        assert check_leftovers().ok
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            net.remove()


def test_inventory_and_remove_survive_a_container_removed_while_listing(monkeypatch):
    """A run's watchdog may remove a container between a listing and an inspection of it; the
    inventory and the removal read the listing alone, so such a container neither breaks them nor
    hides the others (CI once failed on `containers.list()` inspecting one already gone)."""
    require_docker()
    client = engine.client()
    session = f"race-{os.getpid()}-{time.monotonic_ns()}"
    lbl = {**reaper.labels(), reaper.LABEL_SESSION: session}
    made = [client.containers.create(images.base_ref().tag, ["true"], labels=lbl) for _ in range(2)]
    try:
        def gone(*_a, **_k):
            raise docker.errors.NotFound("removed while listing")
        monkeypatch.setattr(client.api, "inspect_container", gone)
        assert sorted(_session_resources(client, session)) == sorted(c.name for c in made)
        assert reaper.remove(client, f"{reaper.LABEL_SESSION}={session}") == 2
        assert _session_resources(client, session) == []
    finally:
        monkeypatch.undo()
        for c in made:
            with contextlib.suppress(docker.errors.NotFound):
                c.remove(force=True)


DISK_FAULT = """
name = "killed-with-a-full-disk"
kafka_version = "3.9.1"
duration_s = 60
zookeepers = 1
[topic]
partitions = 1
[[producers]]
acks = "all"
rate = 100
[[faults]]
at_s = 1
duration_s = 50
kind = "slow_disk"
target = "broker:1"
latency_ms = 100
"""


def _diskfs_processes() -> list[str]:
    """The pass-through file systems running on this machine (a container's processes are the host's too)."""
    out = subprocess.run(["pgrep", "-a", "-f", "kchaos-diskfs -real"], capture_output=True, text=True).stdout
    return out.splitlines()


@pytest.mark.chaos_long  # the default tier stays under 15 minutes
def test_a_killed_run_with_faulted_disks_leaves_no_mount_or_process(tmp_path):
    """SIGKILL while a disk fault holds: the watchdog removes the containers, and with them every
    pass-through log directory (its mount lived in the container) and its process."""
    require_docker(["3.9.1"])
    (tmp_path / "d.toml").write_text(DISK_FAULT)
    before = set(_diskfs_processes())
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(tmp_path / "d.toml"), "--out",
                             str(tmp_path / "run"), "--no-check"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 150
        while len(set(_diskfs_processes()) - before) < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(set(_diskfs_processes()) - before) >= 3, "every broker serves its log directory"
        time.sleep(8)  # the workload runs and the fault holds
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    client = engine.client()
    deadline = time.monotonic() + 90
    left = client.api.containers(all=True, filters={"label": f"{reaper.LABEL_PID}={proc.pid}"})
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = client.api.containers(all=True, filters={"label": f"{reaper.LABEL_PID}={proc.pid}"})
    assert not left, [c["Names"] for c in left]
    assert set(_diskfs_processes()) - before == set(), "no pass-through outlives its container"
    assert "kchaos-diskfs" not in Path("/proc/mounts").read_text()
    assert not (tmp_path / "run").exists(), "nothing half-written"
