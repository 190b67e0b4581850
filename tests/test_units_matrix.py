"""The matrix checks as it goes: each finished run is checked while the next one runs, its verdict
announced and written to matrix.json as soon as it is known, so a matrix stopped halfway keeps the
verdicts of the runs it finished. The cluster is a fake here (tests/test_matrix_cli.py runs real ones)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import scenario as scenario_mod
from harness.checker.verdict import Verdict
from harness.run import matrix
from tests.conftest import as_a_terminal_starts_it
from tests.test_units_tables import verdict

SMOKE = Path(__file__).resolve().parent.parent / "scenarios" / "smoke.toml"


class FakeKept:
    """A kept cluster whose runs write an empty run directory; the run numbered ``stop_at`` is
    interrupted (Ctrl-C), and each run after the first waits until the check of the one before it
    has started, so a check overlaps the next run."""

    def __init__(self, checking: threading.Event, stop_at: int | None = None):
        self.checking, self.stop_at, self.runs = checking, stop_at, 0

    def __enter__(self) -> FakeKept:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def execute(self, s, path: Path, reuse: bool, **kw) -> SimpleNamespace:
        self.runs += 1
        if self.runs == self.stop_at:
            raise KeyboardInterrupt
        if self.runs > 1:
            assert self.checking.wait(10), "the previous run's check started while this run went on"
            self.checking.clear()
        path.mkdir(parents=True)
        return SimpleNamespace(acked=10, final=10)


def _plan(seeds: int) -> matrix.Plan:
    s = scenario_mod.load(SMOKE)
    return matrix.Plan(cells=[(matrix.Cell("smoke", s.kafka_version, s.mode, seed), s, [], SMOKE)
                              for seed in range(1, seeds + 1)])


def _check(checking: threading.Event, broken_seed: int, batches: list[list[str]] | None = None):
    def check(paths: list[Path]) -> list[Verdict]:
        checking.set()
        if batches is not None:
            batches.append([p.name for p in paths])
        return [verdict(p.name, ["lost"] if p.name.endswith(f"-s{broken_seed}") else [], {"lost": 7}) for p in paths]
    return check


def test_each_runs_verdict_is_announced_and_written_as_soon_as_it_is_checked(monkeypatch, tmp_path):
    checking = threading.Event()
    monkeypatch.setattr(matrix, "KeptCluster", lambda: FakeKept(checking))
    said: list[tuple[str, str]] = []
    finished = matrix.run_cells(_plan(3), tmp_path, lambda what, line: said.append((what, line)),
                                check=_check(checking, broken_seed=2))
    assert len(finished) == 3
    verdicts = [line for what, line in said if what == "verdict"]
    assert len(verdicts) == 3 and any(": fail: broke lost 7" in v and "-s2:" in v for v in verdicts)
    cells = {c["seed"]: c for c in json.loads((tmp_path / "matrix.json").read_text())["cells"]}
    assert [cells[k]["verdict"] for k in (1, 2, 3)] == ["pass", "fail", "pass"]
    assert cells[2]["broken"] == [[verdict("x", [], {}).by_config[0].config, "lost", 7]]


def test_a_matrix_stopped_halfway_keeps_the_verdicts_of_the_runs_it_finished(monkeypatch, tmp_path):
    checking = threading.Event()
    monkeypatch.setattr(matrix, "KeptCluster", lambda: FakeKept(checking, stop_at=3))
    with pytest.raises(KeyboardInterrupt):
        matrix.run_cells(_plan(4), tmp_path, lambda what, line: None, check=_check(checking, broken_seed=9))
    cells = json.loads((tmp_path / "matrix.json").read_text())["cells"]
    assert sorted((c["seed"], c.get("verdict")) for c in cells) == [(1, "pass"), (2, "pass")]


def test_runs_that_finish_while_a_check_goes_on_are_checked_together_in_the_next_one(monkeypatch, tmp_path):
    started, all_done, batches = threading.Event(), threading.Event(), []

    class QuickKept(FakeKept):
        def execute(self, s, path: Path, reuse: bool, **kw) -> SimpleNamespace:
            if path.name.endswith("-s2"):
                assert started.wait(10), "the first check started"
            path.mkdir(parents=True)
            return SimpleNamespace(acked=10, final=10)

    monkeypatch.setattr(matrix, "KeptCluster", lambda: QuickKept(threading.Event()))
    first = _check(threading.Event(), broken_seed=9, batches=batches)

    def check(paths: list[Path]) -> list[Verdict]:
        if not batches:
            started.set()
            assert all_done.wait(10), "the runs went on while the first check went on"
        return first(paths)

    said: list[tuple[str, str]] = []

    def announce(what: str, line: str) -> None:
        said.append((what, line))
        if [w for w, _ in said].count("done") == 3:
            all_done.set()

    matrix.run_cells(_plan(3), tmp_path, announce, check=check)
    assert [[name[-2:] for name in b] for b in batches] == [["s1"], ["s2", "s3"]]
    assert [what for what, _ in said].count("verdict") == 3


def test_a_failed_check_is_said_and_left_for_the_end(monkeypatch, tmp_path):
    checking = threading.Event()
    monkeypatch.setattr(matrix, "KeptCluster", lambda: FakeKept(checking))
    said: list[tuple[str, str]] = []

    def broken_check(paths: list[Path]) -> list[Verdict]:
        checking.set()
        raise RuntimeError("the Spark server went away")

    matrix.run_cells(_plan(2), tmp_path, lambda what, line: said.append((what, line)), check=broken_check)
    errors = [line for what, line in said if what == "check_error"]
    assert len(errors) == 2 and "the Spark server went away" in errors[0] and "checked again at the end" in errors[0]
    assert all("verdict" not in c for c in json.loads((tmp_path / "matrix.json").read_text())["cells"])


class _FakeCluster:
    """What KeptCluster needs of a cluster: its settings, and whether it was removed."""

    def __init__(self, settings):
        self.settings, self.removed = settings, False

    def __exit__(self, *exc) -> None:
        self.removed = True


def _scenario(version: str) -> scenario_mod.Scenario:
    return scenario_mod.load(Path(__file__).resolve().parent.parent / "scenarios" / "smoke.toml",
                             [f"kafka_version={version}"])


def test_the_next_versions_cluster_boots_ahead_and_is_taken_by_its_run(monkeypatch):
    """boot_ahead boots in a thread (after ``before``: the image); the run that needs those settings
    takes that cluster instead of booting one; a kept cluster of other settings is removed; one
    booting ahead that no run takes is removed by close."""
    from harness.run import kept_cluster

    booted: list[_FakeCluster] = []
    gate = threading.Event()

    def boot(s):
        gate.wait(5)
        booted.append(_FakeCluster(s.cluster_settings()))
        return booted[-1]

    monkeypatch.setattr(kept_cluster, "_boot", boot)
    first, second = _scenario("3.9.1"), _scenario("3.9.2")
    kept = kept_cluster.KeptCluster()
    gate.set()
    assert kept.for_run(first, reuse=True) is booted[0]
    waited: list[str] = []
    kept.boot_ahead(second, before=lambda: waited.append("image"))
    kept.boot_ahead(second)  # already booting: nothing more
    assert kept.for_run(second, reuse=True) is booted[1] and len(booted) == 2 and waited == ["image"]
    assert booted[0].removed and not booted[1].removed
    kept.boot_ahead(first)
    kept.close()
    assert all(c.removed for c in booted) and len(booted) == 3


def test_an_interrupted_matrix_does_not_wait_for_a_boot_ahead(monkeypatch):
    """close(wait=False), as an interrupt does: returns while the boot goes on, and the boot's thread
    removes the cluster once it is up, since no run will take it."""
    from harness.run import kept_cluster

    gate, booted = threading.Event(), []

    def boot(s):
        gate.wait(5)
        booted.append(_FakeCluster(s.cluster_settings()))
        return booted[-1]

    monkeypatch.setattr(kept_cluster, "_boot", boot)
    kept = kept_cluster.KeptCluster()
    kept.boot_ahead(_scenario("3.9.1"))
    kept.close(wait=False)
    assert not booted, "close returned before the boot ended"
    gate.set()
    for _ in range(100):
        if booted and booted[0].removed:
            break
        threading.Event().wait(0.05)
    assert booted and booted[0].removed


class LaneKept:
    """A kept cluster for lanes in processes of their own (pickled by reference, so module level):
    each run writes its run directory with the times it began and ended and its process id. With
    ``KCHAOS_TEST_MEET`` set a run waits there (60 s at most) until two runs have begun, so runs
    one after another fail; with ``KCHAOS_TEST_BLOCK`` set a run writes ``started-PID`` there and
    blocks, and the cluster's removal writes ``removed-PID``."""

    def __enter__(self) -> LaneKept:
        return self

    def __exit__(self, *exc) -> None:
        if block := os.environ.get("KCHAOS_TEST_BLOCK"):
            (Path(block) / f"removed-{os.getpid()}").touch()

    def boot_ahead(self, s, before=None) -> None:  # the next settings' cluster: nothing to boot here
        return None

    def execute(self, s, path: Path, reuse: bool, **kw) -> SimpleNamespace:
        began = time.time()
        if block := os.environ.get("KCHAOS_TEST_BLOCK"):
            (Path(block) / f"started-{os.getpid()}").touch()
            time.sleep(300)
        if meet := os.environ.get("KCHAOS_TEST_MEET"):
            (Path(meet) / f"began-{os.getpid()}").touch()
            deadline = time.monotonic() + 60
            while len(list(Path(meet).glob("began-*"))) < 2:
                assert time.monotonic() < deadline, "the other lane's run never began beside this one"
                time.sleep(0.05)
        path.mkdir(parents=True)
        (path / "times.json").write_text(json.dumps([began, time.time(), os.getpid()]))
        return SimpleNamespace(acked=10, final=10)


def _two_settings_plan() -> matrix.Plan:
    """Two cells of different cluster settings (the same version in two modes)."""
    s = scenario_mod.load(SMOKE)
    kraft = scenario_mod.load(SMOKE, mode="kraft")
    return matrix.Plan(cells=[(matrix.Cell("smoke", s.kafka_version, "zk", 1), s, [], SMOKE),
                              (matrix.Cell("smoke", s.kafka_version, "kraft", 1), kraft, [], SMOKE)])


def test_cells_of_different_settings_run_side_by_side_in_processes_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setenv("KCHAOS_TEST_MEET", str(tmp_path))  # each run ends only once both have begun
    said: list[tuple[str, str]] = []
    finished = matrix.run_cells(_two_settings_plan(), tmp_path, lambda what, line: said.append((what, line)),
                                check=_check(threading.Event(), broken_seed=9), side_by_side=2, kept_cluster=LaneKept)
    times = [json.loads((d / "times.json").read_text()) for d in finished]
    assert len(times) == 2 and times[0][2] != times[1][2] != os.getpid(), "each lane in a process of its own"
    assert sorted(c.get("verdict") for c in json.loads((tmp_path / "matrix.json").read_text())["cells"]) == [
        "pass", "pass"]
    assert [what for what, _ in said].count("verdict") == 2


def test_one_lane_at_a_time_runs_in_this_process(tmp_path):
    finished = matrix.run_cells(_two_settings_plan(), tmp_path, lambda what, line: None, side_by_side=1,
                                kept_cluster=LaneKept)
    times = sorted(json.loads((d / "times.json").read_text()) for d in finished)
    assert [t[2] for t in times] == [os.getpid()] * 2 and times[0][1] <= times[1][0]


INTERRUPTED = """
import sys
from harness.run import matrix
from tests.test_units_matrix import LaneKept, _two_settings_plan
try:
    matrix.run_cells(_two_settings_plan(), __import__("pathlib").Path(sys.argv[1]), lambda what, line: None,
                     side_by_side=2, kept_cluster=LaneKept)
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_an_interrupted_side_by_side_matrix_stops_every_lane_and_each_removes_its_cluster(tmp_path):
    block = tmp_path / "block"
    block.mkdir()
    p = subprocess.Popen([sys.executable, "-c", INTERRUPTED, str(tmp_path / "m")], cwd=Path(__file__).parent.parent,
                         env={**os.environ, "KCHAOS_TEST_BLOCK": str(block)}, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, preexec_fn=as_a_terminal_starts_it)
    try:
        deadline = time.monotonic() + 60
        while len(list(block.glob("started-*"))) < 2 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.1)
        lanes = [int(f.name.split("-")[1]) for f in block.glob("started-*")]
        assert len(lanes) == 2, (p.poll(), list(block.iterdir()))
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out[-2000:]
    removed = sorted(int(f.name.split("-")[1]) for f in block.glob("removed-*"))
    assert removed == sorted(lanes), "each lane removed its cluster"
    for pid in lanes:
        assert not Path(f"/proc/{pid}").exists(), f"lane {pid} outlived the matrix"
    assert not (tmp_path / "m" / "runs").exists() or not any((tmp_path / "m" / "runs").iterdir())
