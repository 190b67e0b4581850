"""The matrix checks as it goes: each finished run is checked while the next one runs, its verdict
announced and written to matrix.json as soon as it is known, so a matrix stopped halfway keeps the
verdicts of the runs it finished. The cluster is a fake here (tests/test_matrix_cli.py runs real ones)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import scenario as scenario_mod
from harness.checker.verdict import Verdict
from harness.run import matrix
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


def _check(checking: threading.Event, broken_seed: int):
    def check(path: Path) -> Verdict:
        checking.set()
        return verdict(path.name, ["lost"] if path.name.endswith(f"-s{broken_seed}") else [], {"lost": 7})
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


def test_a_failed_check_is_said_and_left_for_the_end(monkeypatch, tmp_path):
    checking = threading.Event()
    monkeypatch.setattr(matrix, "KeptCluster", lambda: FakeKept(checking))
    said: list[tuple[str, str]] = []

    def broken_check(path: Path) -> Verdict:
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
