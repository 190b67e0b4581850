"""The warm Spark Connect server checks share: the cold path starts it, the warm path reuses it, and a
server that died, hangs or runs another Spark version is replaced, never waited on; two processes
checking at once share one server and both get correct verdicts. Counts are the reference's (tests/histories.py).
Each test starts servers of its own, so they are in the long tier; the default suite's `kchaos`
processes start and share the developer's warm server (tests/test_checker.py's CLI test among them).

Every warm check runs in a `kchaos check` process of its own, as a user's does: this test process
has run the rest of the suite (a browser among it), and what that leaves behind is not a user's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.checker import session, warm
from tests.histories import History

pytestmark = pytest.mark.spark


def lossy(tmp_path: Path, name: str) -> tuple[Path, dict[str, int]]:
    """A small history with one lost write and one divergent replica: a check must count both."""
    h = History().clean(5)
    h.send("v-lost", 5)
    h.replica(3, "not-v0-2", 2)
    return h.write(tmp_path / name), h.reference()


def servers() -> list[int]:
    """Pids of every Spark Connect server JVM of this user's cache folder (a pytester suite's HOME
    has servers of its own)."""
    mark = f"{warm.STATE_MARK}={warm.state_dir()}".encode()
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes()
            except OSError:
                continue
            if warm.SERVER_CLASS.encode() in cmd and b"SparkSubmit" in cmd and mark in cmd.split(b"\0"):
                out.append(int(p.name))
    return out


@pytest.fixture(autouse=True, scope="module")
def own_server(tmp_path_factory):
    """These tests start, kill and freeze servers: theirs live in a state folder of their own, apart
    from the server the rest of the suite (and the developer) checks on."""
    mp = pytest.MonkeyPatch()
    mp.setenv("KCHAOS_SPARK_STATE", str(tmp_path_factory.mktemp("spark-state")))
    yield
    warm.stop()
    mp.undo()


@pytest.fixture
def no_override(monkeypatch):
    """The default engine, as outside the tests: the warm server."""
    monkeypatch.delenv("KCHAOS_SPARK_MASTER", raising=False)
    monkeypatch.setattr(session, "DEFAULT_MASTER", None)


def warm_check(d: Path, **env: str) -> dict[str, int]:
    """`kchaos check` of one run directory in a fresh process on the warm server; its counts."""
    subprocess.run([sys.executable, "-m", "harness", "check", str(d)], env={**clean_env(), **env},
                   capture_output=True, text=True, timeout=300)
    return json.loads((d / "verdict.json").read_text())["anomalies"]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "KCHAOS_SPARK_MASTER"}


def running() -> warm.ServerInfo:
    """The warm server, started if none is up (without a check: a session is opened and released)."""
    subprocess.run([sys.executable, "-c", "from harness.checker import warm; warm.session().stop()"],
                   env=clean_env(), check=True, timeout=300)
    info = warm.read_info()
    assert info is not None and warm.alive(info)
    return info


@pytest.mark.chaos_long  # two cold starts side by side: over two minutes beside the suite's clusters
def test_two_cold_checks_at_once_share_one_new_server_and_the_next_check_reuses_it(tmp_path, no_override):
    """With no server up, two `kchaos check` processes at once start one between them; a third check
    reuses it; all three count what the independent reference counts, and give the same examples.
    (Every count of the embedded driver is checked against the same reference by test_checker.py.)"""
    warm.stop()
    env = clean_env()
    dirs = {name: lossy(tmp_path, name) for name in ("a", "b")}
    procs = [subprocess.Popen([sys.executable, "-m", "harness", "check", str(d)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for d, _ in dirs.values()]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [1, 1], outs  # a lost write breaks acks=all's promise
    for d, expected in dirs.values():
        verdict = json.loads((d / "verdict.json").read_text())
        assert {k: verdict["anomalies"][k] for k in expected} == expected
    first = warm.read_info()
    assert first is not None and servers() == [first.pid]
    d, expected = dirs["a"]
    cold_examples = json.loads((d / "verdict.json").read_text())["examples"]
    again = warm_check(d)
    assert warm.read_info() == first, "the next check reused it"
    assert {k: again[k] for k in expected} == expected and expected["lost"] == 1 and expected["divergence"] == 1
    assert json.loads((d / "verdict.json").read_text())["examples"] == cold_examples
    assert cold_examples["lost"][0]["value"] == "v-lost", "the example is the record the history lost"


@pytest.mark.chaos_long  # starts a server of its own: about a minute
def test_a_killed_server_is_replaced(tmp_path, no_override):
    d, expected = lossy(tmp_path, "run")
    old = running()
    os.kill(old.pid, signal.SIGKILL)
    counts = warm_check(d)
    new = warm.read_info()
    assert new is not None and new.pid != old.pid and warm.alive(new)
    assert {k: counts[k] for k in expected} == expected


@pytest.mark.chaos_long  # each starts a server of its own: about a minute
def test_a_hung_server_is_replaced_within_the_probe_time(tmp_path, no_override):
    d, expected = lossy(tmp_path, "run")
    old = running()
    os.kill(old.pid, signal.SIGSTOP)
    try:
        counts = warm_check(d, KCHAOS_SPARK_PROBE_S="3")
    finally:
        if warm.alive(old):
            os.kill(old.pid, signal.SIGCONT)
    new = warm.read_info()
    assert new is not None and new.pid != old.pid
    assert not warm.alive(old), "the frozen server was killed, not left behind"
    assert {k: counts[k] for k in expected} == expected


@pytest.mark.chaos_long  # each starts a server of its own: about a minute
def test_a_server_of_another_spark_version_is_replaced(tmp_path, no_override):
    d, expected = lossy(tmp_path, "run")
    old = running()
    state = warm.state_dir() / "server.json"
    state.write_text(json.dumps({**json.loads(state.read_text()), "spark_version": "3.0.0"}))
    counts = warm_check(d)
    new = warm.read_info()
    assert new is not None and new.pid != old.pid and new.spark_version != "3.0.0"
    assert not warm.alive(old) and {k: counts[k] for k in expected} == expected


@pytest.mark.chaos_long  # each starts a server of its own: about a minute
def test_a_server_nobody_recorded_is_stopped_before_a_new_one_starts(tmp_path, no_override):
    """A check whose starter died before recording its server (a killed `kchaos run` warming it up)
    must not leave two servers: the next start finds the stray one by its mark and stops it."""
    d, expected = lossy(tmp_path, "run")
    stray = running()
    (warm.state_dir() / "server.json").unlink()
    counts = warm_check(d)
    new = warm.read_info()
    assert new is not None and new.pid != stray.pid and not warm.alive(stray)
    assert servers() == [new.pid] and {k: counts[k] for k in expected} == expected


@pytest.mark.chaos_long  # starts a server of its own: about a minute
def test_an_idle_server_is_stopped_by_its_watcher(no_override):
    info = running()
    with warm.held():
        t0 = time.monotonic()
        watcher = subprocess.Popen([sys.executable, "-c", f"from harness.checker import warm; warm.watch({info.pid}, "
                                    "idle_s=0, every_s=0.2)"])
        time.sleep(1.5)
        assert warm.alive(info), "a check holds the server: the watcher waits"
    watcher.wait(timeout=30)
    assert not warm.alive(info) and warm.read_info() is None
    assert time.monotonic() - t0 < 30
