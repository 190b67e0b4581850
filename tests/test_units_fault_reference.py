"""docs/faults.md's reference is the code's: every fault kind, target and trigger event, rendered by
harness/faults/reference.py. After changing a kind, a target or an event, regenerate the page with
``python -m harness.faults.reference``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.faults import FAULTS, TARGET_HELP, Target
from harness.faults.reference import (
    COMMON_SETTINGS,
    END,
    SETTINGS,
    START,
    family,
    fault_reference_markdown,
    page_with_reference,
    takes,
)
from harness.faults.registry import FAMILIES, TARGET_DOCS
from harness.faults.triggers import EVENTS

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "faults.md"
REGENERATE = "docs/faults.md is not the code's reference: run `python -m harness.faults.reference` and commit the page"


def _generated_part() -> str:
    m = re.search(re.escape(START) + r"\n(.*?)" + re.escape(END), PAGE.read_text(), re.S)
    assert m, "docs/faults.md lacks the fault-reference markers"
    return m.group(1)


def test_the_faults_page_shows_the_reference_from_the_code():
    assert _generated_part() == fault_reference_markdown(), REGENERATE


@pytest.mark.parametrize("kind", list(FAULTS))
def test_every_fault_kind_is_in_the_reference(kind):
    text = fault_reference_markdown()
    assert f"| `{kind}` |" in text  # its row in its family's table
    assert f"- **`{kind}`**: {FAULTS[kind].help}" in text  # and its whole help under the table


def test_every_family_has_kinds_and_every_kind_one_family():
    families = [family(k) for k in FAULTS.values()]
    assert set(families) == set(FAMILIES)
    text = fault_reference_markdown()
    assert all(f"### {title}" in text for title, _ in FAMILIES.values())


def test_the_settings_each_kind_takes_are_the_scenario_models():
    """The reference reads what a kind takes from the registry; the scenario model enforces it."""
    from harness.scenario.fault_tables import KIND_KEYS, FaultSpec

    assert set(FaultSpec.model_fields) == {*COMMON_SETTINGS, *SETTINGS}
    for setting, kinds in KIND_KEYS.items():
        assert {k for k, f in FAULTS.items() if takes(f, setting)} == set(kinds), setting
    directional = {k for k, f in FAULTS.items() if f.directional}
    assert {k for k, f in FAULTS.items() if takes(f, "stream")} == directional


def test_every_target_spelling_is_documented_and_parses():
    documented = [s for spelling, _ in TARGET_DOCS for s in spelling.split(", ")]
    assert sorted(documented) == sorted(TARGET_HELP.split(" | "))
    for spelling in documented:
        Target.parse(re.sub(r"[A-Z]+$", lambda m: "1" if m.group() in ("K", "N") else "x", spelling))
        assert f"`{spelling}`" in fault_reference_markdown()


@pytest.mark.parametrize("event", list(EVENTS))
def test_every_trigger_event_is_in_the_reference(event):
    assert f"| `{event}` | {EVENTS[event][0]} |" in fault_reference_markdown()


def test_regenerating_replaces_only_the_part_between_the_markers():
    page = f"# intro\n\n{START}\nstale\n{END}\n\nafter\n"
    new = page_with_reference(page)
    assert new == f"# intro\n\n{START}\n{fault_reference_markdown()}{END}\n\nafter\n"
    assert page_with_reference(new) == new
    with pytest.raises(ValueError, match="markers"):
        page_with_reference("# no markers\n")
