"""Ctrl-C stops a verb within seconds, exits 130 and leaves nothing half-written, wherever it waits.

`check` and `report` are stopped while they wait for the Spark server (another process holds its
lock, as one starting the server does): they can neither finish first nor notice anything but the
signal. The runs, matrices and hunts, which have containers to remove, are in tests/test_cleanup.py
and tests/test_hunt.py."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import as_a_terminal_starts_it
from tests.histories import History

STOPPED_WITHIN_S = 5.0


def waits_on(lock: Path, pid: int, timeout_s: float = 60) -> bool:
    """Whether process ``pid`` comes to wait for ``lock`` (a blocked flock in /proc/locks, its
    waiters marked ``->``) within ``timeout_s``: on a loaded machine its imports alone take seconds."""
    inode = f":{lock.stat().st_ino} "
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = Path("/proc/locks").read_text().splitlines()
        if any("->" in x and f" {pid} " in x and inode in x for x in held):
            return True
        time.sleep(0.1)
    return False


def interrupted_while_waiting_for_spark(tmp_path: Path, *args: str) -> tuple[int, float, str]:
    """``kchaos ARGS`` started while the Spark server's lock is held, SIGINT once it waits: its exit
    code, the seconds it took to exit after the signal, and what it printed."""
    state = tmp_path / "spark-state"
    state.mkdir()
    env = {**os.environ, "KCHAOS_SPARK_STATE": str(state), "COLUMNS": "200"}
    env.pop("KCHAOS_SPARK_MASTER", None)
    with open(state / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = subprocess.Popen([sys.executable, "-m", "harness", *args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, preexec_fn=as_a_terminal_starts_it)
        try:
            assert waits_on(state / "lock", p.pid), f"it never waited for the lock: {p.poll()}"
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            out, _ = p.communicate(timeout=60)
            return p.returncode, time.monotonic() - sent, out
        finally:
            if p.poll() is None:
                p.kill()


def test_check_stopped_while_it_waits_for_spark_exits_130_and_writes_no_verdict(tmp_path):
    d = History().clean(5).write(tmp_path / "run")
    code, took, out = interrupted_while_waiting_for_spark(tmp_path, "check", str(d))
    assert code == 130 and took < STOPPED_WITHIN_S, (code, took, out[-2000:])
    assert "Traceback" not in out, out[-2000:]
    assert not (d / "verdict.json").exists() and not list(d.glob("*.partial"))


def test_report_stopped_while_it_checks_exits_130_and_leaves_no_page(tmp_path):
    d = History().clean(5).write(tmp_path / "run")
    page = tmp_path / "report.html"
    code, took, out = interrupted_while_waiting_for_spark(tmp_path, "report", str(d), "-o", str(page))
    assert code == 130 and took < STOPPED_WITHIN_S, (code, took, out[-2000:])
    assert "Traceback" not in out, out[-2000:]
    assert not list(tmp_path.glob("report.html*")) and not (d / "verdict.json").exists()
