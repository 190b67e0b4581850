"""The hunt's runs: a scenario run into ``DIR/runs/NAME`` and checked at once, its time recorded.

A name already run is read back instead of run again, after checking that it ran the same scenario:
a hunt's draws, confirmations and shrinking are deterministic given what earlier runs showed, so
running the same command again replays the finished part from disk and carries on (resume).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.checker.verdict import Verdict
from harness.checker.verdict import read as read_verdict
from harness.cluster.formation import FORMATION_FAILED
from harness.history import HistoryError, read_run_config
from harness.run.directory import could_not_run_dir, read_could_not_run
from harness.run.kept_cluster import KeptCluster
from harness.scenario import Scenario


class HuntError(Exception):
    """The hunt's directory cannot be used as asked (exit 2)."""


class CannotRun(Exception):
    """No run can be carried out on this machine (exit 3): no engine, no image."""


@dataclass
class Trial:
    """One finished run: its verdict (None if it could not be carried out) and what it cost."""

    name: str
    path: Path
    verdict: Verdict | None
    wall_s: float
    workload_s: float
    error: str | None = None


class Pending:
    """A trial whose check may still be going on: ``result()`` waits for it."""

    def __init__(self, finish: Callable[[], Trial]):
        self._finish = finish
        self._trial: Trial | None = None

    @classmethod
    def done(cls, trial: Trial) -> Pending:
        p = cls(lambda: trial)
        p._trial = trial
        return p

    def result(self) -> Trial:
        if self._trial is None:
            self._trial = self._finish()
        return self._trial


class RunFailed(Exception):
    """One run could not be carried out (a cluster that did not come up, a nemesis error): recorded,
    and the hunt goes on."""


# (where, what, whether it may reuse a cluster) -> its verdict, or the check still to do: a
# function the hunt may call while the next run goes on (``Trials.start``).
RunAndCheck = Callable[[Path, Scenario, bool], "Verdict | Callable[[], Verdict]"]


def run_and_check(spark_master: str | None, kept: KeptCluster) -> RunAndCheck:
    """Real Kafka: ``KeptCluster.execute`` into the path (on the kept cluster when the run may reuse
    it), then the check (the warm server by default)."""

    def go(path: Path, s: Scenario, reuse: bool) -> Callable[[], Verdict]:
        from harness.run import runner
        from harness.setup import engine

        try:
            kept.execute(s, path, reuse, log=lambda m: None)
        except engine.EngineError as e:
            raise CannotRun(str(e)) from e
        except runner.NOT_CARRIED_OUT as e:
            raise RunFailed(str(e)) from e
        return lambda: check(path, spark_master)

    return go


def check(path: Path, spark_master: str | None) -> Verdict:
    from harness.checker import check_runs

    (verdict,) = check_runs([path], master=spark_master)
    return verdict


class Trials:
    """Runs and checks scenarios under ``root``; ``spent`` holds every run's cost by name, this
    session's and earlier ones' (hunt.json keeps it)."""

    def __init__(self, root: Path, spent: dict[str, dict], go: RunAndCheck, spark_master: str | None = None,
                 log: Callable[[str], None] = lambda m: None):
        self.root = root
        self.spent = spent
        self.go = go
        self.spark_master = spark_master
        self.log = log
        self.consecutive_errors = 0
        self._checks: ThreadPoolExecutor | None = None

    @property
    def wall_s(self) -> float:
        return sum(x["wall_s"] for x in self.spent.values())

    def wall_through(self, name: str) -> float:
        """The hunt's wall time once run ``name`` was spent: every run's before it, in the order they
        ran, and its own, whether this session ran it or read it back on resuming (where ``wall_s``
        would be every earlier session's time)."""
        total = 0.0
        for run, cost in self.spent.items():
            total += cost["wall_s"]
            if run == name:
                break
        return total

    @property
    def workload_s(self) -> float:
        return sum(x["workload_s"] for x in self.spent.values())

    def run(self, name: str, s: Scenario, reuse: bool = False) -> Trial:
        """Run ``s`` as ``name`` and check it (or read it back); ``reuse``: it may run on a cluster
        kept from the run before, on its own topic."""
        return self.start(name, s, reuse, overlap=False).result()

    def start(self, name: str, s: Scenario, reuse: bool = False, overlap: bool = True) -> Pending:
        """Run ``s`` as ``name`` and start its check; with ``overlap`` the check goes on in the
        background while the caller starts the next run, and ``result()`` waits for it. The wall
        time a trial records is what the hunt spent on it: its run, and the wait for its check."""
        path = self.root / name
        if path.exists():
            return Pending.done(self._read_back(name, path, s))
        if (failed := self._read_back_failed(name, path, s)) is not None:
            return Pending.done(failed)
        t0 = time.monotonic()
        outcome, error = self._run(path, s, reuse)
        if outcome is None:
            return Pending.done(self._spent(name, path, s, None, time.monotonic() - t0, error))
        if not callable(outcome):
            return Pending.done(self._spent(name, path, s, outcome, time.monotonic() - t0))
        ran_s = time.monotonic() - t0
        if not overlap:
            verdict, error = self._judged(path, outcome)
            return Pending.done(self._spent(name, path, s, verdict, time.monotonic() - t0, error))
        if self._checks is None:
            self._checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kchaos-hunt-check")
        future = self._checks.submit(self._judged, path, outcome)

        def finish() -> Trial:
            t1 = time.monotonic()
            verdict, error = future.result()
            return self._spent(name, path, s, verdict, ran_s + time.monotonic() - t1, error)

        return Pending(finish)

    def _judged(self, path: Path, check_it: Callable[[], Verdict]) -> tuple[Verdict | None, str | None]:
        """The run's verdict, or why its history could not be checked: a run dir that breaks the
        history contract is kchaos's own failure, recorded as the run's error (hunt.json) and said
        at once, and the hunt goes on with its next draw."""
        try:
            return check_it(), None
        except HistoryError as e:
            self.log(f"{path.name}: its history could not be checked: {str(e).splitlines()[0][:300]}")
            return None, f"history: {e}"[:2000]

    def close(self) -> None:
        if self._checks is not None:
            self._checks.shutdown(wait=True)
            self._checks = None

    def _spent(self, name: str, path: Path, s: Scenario, verdict: Verdict | None, wall_s: float,
               error: str | None = None) -> Trial:
        cost = {"wall_s": round(wall_s, 1), "workload_s": s.duration_s if verdict else 0.0}
        self.spent[name] = cost if verdict else {**cost, "error": error}
        return Trial(name, path, verdict, cost["wall_s"], cost["workload_s"], error)

    def _read_back(self, name: str, path: Path, s: Scenario) -> Trial:
        ran = read_run_config(path).scenario_config
        if ran is None or Scenario.model_validate(ran) != s:
            raise _another_scenario(path)
        verdict, error = (read_verdict(path), None)
        if verdict is None:
            verdict, error = self._judged(path, lambda: check(path, self.spark_master))
        cost = self.spent.setdefault(name, {"wall_s": _phases_s(path), "workload_s": s.duration_s})
        return Trial(name, path, verdict, cost["wall_s"], cost["workload_s"], error or cost.get("error"))

    def _read_back_failed(self, name: str, path: Path, s: Scenario) -> Trial | None:
        """A run an earlier session of this hunt could not carry out, as it was then: not run again,
        so that a resumed hunt draws what the first one drew after it (its draws build on what each
        run showed)."""
        aside = read_could_not_run(path)
        if aside is not None and Scenario.model_validate(aside[0]) != s:
            raise _another_scenario(could_not_run_dir(path))
        cost = self.spent.get(name)
        if aside is None and (cost is None or not cost.get("error")):
            return None
        cost = self.spent.setdefault(name, {"wall_s": 0.0, "workload_s": 0.0, "error": aside[1] if aside else ""})
        return Trial(name, path, None, cost["wall_s"], 0.0, cost.get("error") or (aside[1] if aside else None))

    def _run(self, path: Path, s: Scenario, reuse: bool) -> tuple[Verdict | Callable[[], Verdict] | None, str | None]:
        try:
            verdict = self.go(path, s, reuse)
        except RunFailed as e:
            # A cluster that did not form after its formation fault is what such a run looks for
            # (Kafka's, not the machine's): it does not count toward giving the hunt up.
            self.consecutive_errors += 0 if FORMATION_FAILED in str(e) else 1
            kept = could_not_run_dir(path)
            self.log(f"{path.name}: could not run: {str(e).splitlines()[0][:200]}"
                     + (f" (its logs: {kept})" if kept.exists() else ""))
            if self.consecutive_errors >= 3:
                raise CannotRun(f"three runs in a row could not be carried out; the last: {e}") from e
            return None, str(e)[:2000]
        self.consecutive_errors = 0
        return verdict, None


def _phases_s(path: Path) -> float:
    """A finished run's own time, from its phases in run.json (cluster up to the brokers' logs): what
    a hunt counts for a run it finds on disk without an account of its cost, because the hunt was
    stopped between the run's end and its next save. Counting 0 would make a resumed hunt's times
    too short."""
    try:
        phases = json.loads((path / "run.json").read_text()).get("phases") or {}
    except (OSError, ValueError):
        return 0.0
    return round(sum(v for v in phases.values() if isinstance(v, int | float)), 1)


def _another_scenario(path: Path) -> HuntError:
    return HuntError(f"{path}: holds a run of another scenario than this hunt draws there (another --seed, "
                     "scenario or --set used this directory; allowed: the same command, or a new --out)")
