"""`./kchaos` has its command set the machine up first, in the command's own process (harness.cli's
_set_up_first): the set-up runs once per call, keeps the warm Spark server, stops the command when
something required is still missing, and is left out of `doctor`, which shows what is missing."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from harness import cli, doctor
from harness.doctor import Check


@pytest.fixture
def fixes(monkeypatch):
    """doctor.fix recorded rather than run; the checks as each test sets them."""
    calls: list[bool] = []
    monkeypatch.setattr(doctor, "fix", lambda log=print, stop_spark=True: calls.append(stop_spark))
    monkeypatch.setattr(doctor, "run_checks", lambda required_only=False: [Check("docker engine", True, "up")])
    return calls


def invoke(monkeypatch, args: list[str], set_up: bool = True):
    if set_up:
        monkeypatch.setenv(cli.SET_UP_FIRST, "1")
    else:
        monkeypatch.delenv(cli.SET_UP_FIRST, raising=False)
    return CliRunner().invoke(cli.app, args)


def test_a_command_sets_up_once_keeping_spark_then_runs(monkeypatch, tmp_path, fixes):
    res = invoke(monkeypatch, ["check", str(tmp_path / "no-such-run")])
    assert fixes == [False], "one set-up, the warm Spark server kept"
    assert res.exit_code == cli.EXIT_BAD_INPUT, res.output  # the command itself ran after it
    assert cli.SET_UP_FIRST not in os.environ, "the processes a command starts must not set up again"


def test_something_still_missing_stops_the_command_with_what_and_the_fix(monkeypatch, tmp_path, fixes):
    missing = Check("images", False, "not built: kchaos/kafka:3.9.1", "kchaos images")
    monkeypatch.setattr(doctor, "run_checks", lambda required_only=False: [missing] if required_only else [])
    res = invoke(monkeypatch, ["check", str(tmp_path / "no-such-run")])
    assert res.exit_code == cli.EXIT_NOT_RUN, res.output
    assert "kchaos/kafka:3.9.1" in res.output and "kchaos images" in res.output


def test_doctor_and_a_call_without_the_setting_do_not_set_up(monkeypatch, tmp_path, fixes):
    assert invoke(monkeypatch, ["doctor", "--quiet"]).exit_code == cli.EXIT_OK
    invoke(monkeypatch, ["check", str(tmp_path / "no-such-run")], set_up=False)
    assert fixes == []


def test_a_quiet_doctor_runs_only_the_checks_every_command_needs(monkeypatch):
    """The informational checks (client builds, Spark's start-up cache, the warm server) never fail;
    the client builds' alone imports every client library's module. FUSE only the disk faults need."""
    called: list[str] = []
    for name in ("check_client_builds", "check_spark_archive", "check_warm_spark", "check_fuse"):
        monkeypatch.setattr(doctor, name, lambda name=name: called.append(name) or [])
    required = doctor.run_checks(required_only=True)
    assert called == []
    assert [c.name for c in required] == ["python packages", "build tools", "docker engine", "images", "leftovers"]


def test_a_cluster_with_disk_faults_on_a_machine_without_fuse_cannot_run_and_says_why(monkeypatch, tmp_path):
    """Refused before any image is built or container started, with the engine's "cannot run" error
    (exit 3 from the command line; a run sets its directory aside with the reason)."""
    import harness.setup as setup
    from harness.setup import engine

    monkeypatch.setattr(setup, "FUSE_DEVICE", str(tmp_path / "no-fuse"))
    monkeypatch.setattr(engine, "client", lambda **_: pytest.fail("the engine was asked for before the refusal"))
    with pytest.raises(engine.EngineError, match=r"no-fuse.*modprobe fuse"):
        setup.cluster_images("3.9.1", disks=True)
    monkeypatch.setattr(doctor, "FUSE_DEVICE", str(tmp_path / "no-fuse"))
    assert not doctor.check_fuse().ok, "the full table still says it is missing"
