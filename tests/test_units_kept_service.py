"""The kept cluster `kchaos run` reuses (harness/run/kept_service.py), with a stand-in for the run on
the kept cluster: how a run finds a serving process of its settings, hands its run over, relays its
log and gets its result; what is refused; what a requester that went away leaves. The same on real
Kafka is tests/test_kept_service.py."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

from harness.run import kept_service
from harness.run.result import RunResult
from harness.scenario import Scenario
from tests.test_units_hunt import scenario


@pytest.fixture(autouse=True)
def own_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


class FakeRuns:
    """Runs on the "kept cluster": each writes its directory and two log lines; ``hold`` keeps the
    run going until set."""

    def __init__(self) -> None:
        self.ran: list[Scenario] = []
        self.hold = threading.Event()
        self.hold.set()

    def __call__(self, s: Scenario, out: Path, reuse: bool, scenario_file=None, overrides=(), log=print) -> RunResult:
        assert reuse, "a served run is on the kept cluster"
        self.ran.append(s)
        log(f"running {s.topic.name}")
        self.hold.wait(10)
        log("healed")
        out.mkdir(parents=True)
        (out / "run.json").write_text("{}")
        return RunResult(out, 10, 9, 8, 9, 27, 1, {"workload": 14.0})


def serving(s: Scenario, runs: FakeRuns) -> tuple[kept_service.Service, threading.Thread, list[str]]:
    service = kept_service.Service(s, kept=None, execute=runs)  # type: ignore[arg-type]
    said: list[str] = []
    ready = threading.Event()

    def go() -> None:
        with service.listening("kchaos-test") as listener:
            ready.set()
            service.serve(listener, said.append)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    assert ready.wait(5)
    return service, t, said


def stop(service: kept_service.Service, t: threading.Thread) -> None:
    service.stop()
    with contextlib.suppress(OSError):  # wake the accept with one last connection, as Ctrl-C does in kchaos up
        kept_service.Client(str(service.dir / "sock"), family="AF_UNIX", authkey=service.authkey.encode()).close()
    t.join(5)


def test_a_run_of_the_same_settings_is_served_on_a_topic_of_its_own_with_its_log(tmp_path):
    s = scenario()
    runs = FakeRuns()
    service, t, _ = serving(s, runs)
    try:
        served = kept_service.find(scenario(seed=7))
        assert served is not None and served.pid == os.getpid() and served.cluster == "kchaos-test"
        lines: list[str] = []
        res = kept_service.run_on(served, scenario(seed=7), tmp_path / "r1", "scenarios/x.toml", [], lines.append)
        assert res.path == (tmp_path / "r1").resolve() and res.acked == 9 and res.phases == {"workload": 14.0}
        assert lines == [f"running {runs.ran[0].topic.name}", "healed"]
        assert runs.ran[0].topic.name.startswith(f"{s.topic.name}-up") and runs.ran[0].seed == 7
        kept_service.run_on(served, s, tmp_path / "r2", None, [], lambda m: None)
        assert len({r.topic.name for r in runs.ran}) == 2, "each run on a topic of its own"
    finally:
        stop(service, t)
    assert not list(kept_service.registry().glob("*.json")), "the registry entry goes with the service"
    assert kept_service.find(s) is None


def test_a_scenario_of_other_settings_or_a_faulted_formation_finds_no_kept_cluster_and_one_with_a_group_does():
    service, t, _ = serving(scenario(), FakeRuns())
    try:
        assert kept_service.find(scenario(brokers=4)) is None, "other cluster settings"
        formed = scenario(cluster={"formation": {"kind": "kill", "duration_s": 2}})
        assert kept_service.find(formed) is None, "a faulted formation happens once, as its cluster starts"
        grouped = scenario(groups=[{"name": "g", "members": 2}])
        assert kept_service.find(grouped) is not None, "the group's id on the kept cluster is its run's own"
    finally:
        stop(service, t)


def test_a_registry_entry_whose_process_is_gone_is_ignored_and_removed():
    s = scenario()
    entry = kept_service.registry() / f"{kept_service.settings_key(s.cluster_settings())}.json"
    entry.parent.mkdir(parents=True)
    entry.write_text(json.dumps({"pid": 2 ** 22 + 12345, "socket": "/nonexistent", "authkey": "x", "cluster": "c"}))
    assert kept_service.find(s) is None and not entry.exists()


def test_a_run_whose_requester_went_away_leaves_no_directory(tmp_path):
    runs = FakeRuns()
    runs.hold.clear()
    service, t, said = serving(scenario(), runs)
    try:
        served = kept_service.find(scenario())
        conn = kept_service.Client(served.socket, family="AF_UNIX", authkey=served.authkey.encode())
        conn.send({"scenario": scenario().model_dump(mode="json"), "out": str(tmp_path / "gone"),
                   "scenario_file": None, "overrides": []})
        assert conn.recv()["log"].startswith("running")
        conn.close()  # Ctrl-C in kchaos run
        runs.hold.set()
        deadline = time.monotonic() + 5
        while not any("went away" in m for m in said) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (tmp_path / "gone").exists(), "nothing half-kept for a run no one checks"
        lines: list[str] = []
        kept_service.run_on(served, scenario(), tmp_path / "next", None, [], lines.append)
        assert (tmp_path / "next").exists(), "the service goes on serving"
    finally:
        stop(service, t)


def test_a_run_the_service_cannot_carry_out_fails_with_its_reason(tmp_path):
    def broken(*args, **kw):
        raise RuntimeError("the kept cluster did not heal")

    service, t, _ = serving(scenario(), broken)  # type: ignore[arg-type]
    try:
        with pytest.raises(kept_service.ServedRunFailed, match="did not heal"):
            kept_service.run_on(kept_service.find(scenario()), scenario(), tmp_path / "r", None, [], print)
    finally:
        stop(service, t)
