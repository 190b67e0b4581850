"""The catalogue by name from anywhere (harness/scenario/catalogue.py): a command or a test outside
the checkout names a catalogue scenario as ``NAME``, ``NAME.toml`` or ``scenarios/NAME.toml``; a path
that exists wins; a name the catalogue lacks is refused naming the catalogue; the wheel ships it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness import scenario
from harness.run import matrix
from harness.scenario import catalogue

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("ref", ["safe-faults", "safe-faults.toml", "scenarios/safe-faults.toml",
                                 "group-async-commits-kraft", "group-async-commits-kraft.toml"])
def test_a_catalogue_name_loads_from_any_directory(ref, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = scenario.load(ref)
    assert s.name == ref.removeprefix("scenarios/").removesuffix(".toml")
    assert catalogue.find(ref).parent == catalogue.DIR


def test_a_path_that_exists_wins_over_the_catalogue(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    mine = (catalogue.DIR / "smoke.toml").read_text().replace('name = "smoke"', 'name = "my-smoke"')
    (tmp_path / "scenarios" / "smoke.toml").write_text(mine)
    assert scenario.load("scenarios/smoke.toml").name == "my-smoke"
    assert scenario.load("smoke").name == "smoke", "a bare name is the catalogue's unless a file of that name exists"


def test_a_name_the_catalogue_lacks_is_refused_naming_the_catalogue(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(scenario.ScenarioError, match=r"safe-fault: no such scenario file \(allowed: a path to a "
                       r"\.toml file, or a name in the catalogue: .*safe-faults, "):
        scenario.load("safe-fault")
    with pytest.raises(scenario.ScenarioError, match=r"elsewhere/safe-faults\.toml: no such scenario file"):
        scenario.load("elsewhere/safe-faults.toml")


def test_the_matrix_and_the_hunt_plan_catalogue_names_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plan = matrix.plan(["scenarios/smoke.toml", "safe-faults"], None, None, None, seeds=[1])
    assert sorted(cell.scenario for cell, _, _, _ in plan.cells) == ["safe-faults", "smoke"]
    assert all(path.resolve().parent == catalogue.DIR for _, _, _, path in plan.cells)


def test_the_checkouts_scenarios_folder_is_the_catalogue():
    assert (ROOT / "scenarios").resolve() == catalogue.DIR
    assert len(catalogue.names()) >= 40 and "safe-faults" in catalogue.names()


@pytest.mark.chaos_long  # a wheel built in an isolated environment: seconds of CPU the default tier keeps
def test_the_wheel_ships_the_catalogue_and_every_file_the_package_reads(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("kchaos-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"harness/scenarios/{n}.toml" for n in catalogue.names()} | {
        "harness/scenarios/README.md", "harness/scenario/config_defs.json", "harness/report/page.html.j2",
        "harness/cluster/feature_levels.json", "harness/clients/java/src/kchaos/Driver.java"}
    assert wanted <= shipped, sorted(wanted - shipped)


def test_a_run_id_keeps_a_dotted_scenario_name_whole():
    assert matrix.Cell("orders-4.4", "4.4.0", "kraft", 2).run_id == "orders-4.4-4.4.0-kraft-s2"
    assert matrix.Cell("mine/orders-4.4.toml", "4.4.0", "kraft", 2).run_id == "orders-4.4-4.4.0-kraft-s2"
