"""docs/faults.md's reference is the code's: every fault kind, target and trigger event, rendered by
harness/faults/reference.py. After changing a kind, a target or an event, regenerate the page with
``python -m harness.faults.reference``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.faults import FAULTS, SETTINGS, TARGET_HELP, Target
from harness.faults.reference import (
    END,
    START,
    family,
    fault_reference_markdown,
    page_with_reference,
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


def _named_in_help(kind, setting: str) -> bool:
    """Whether a kind's help names a setting: in backquotes, or bare when the name has an underscore."""
    return f"`{setting}`" in kind.help or ("_" in setting and re.search(rf"\b{setting}\b", kind.help) is not None)


@pytest.mark.parametrize("kind", list(FAULTS))
def test_a_kinds_record_takes_the_settings_its_help_names(kind):
    """The record's ``takes`` (what the scenario enforces) against its help text (what a user reads):
    every setting the help names is taken, and a directional kind takes stream, a disk kind dir."""
    k = FAULTS[kind]
    named = {s for s in SETTINGS if _named_in_help(k, s)}
    named |= {"stream"} if k.directional else set()
    named |= {"dir"} if k.disk else set()
    assert named == set(k.takes)


# A value other than each setting's default, for the table below.
OTHER_VALUE = {"latency_ms": 50, "jitter_ms": 5, "rate_kbps": 16, "stream": "upstream", "to": "4.4.0",
               "feature": "metadata.version", "level": 1, "offset_s": 60.0, "op": "read", "dir": 1, "change": "add",
               "to_broker": 2, "throttle_kbps": 100, "config": "retention.ms", "value": "1000",
               "offsets": "latest", "new_partitions": 2, "api": "end_txn"}


@pytest.mark.parametrize("kind", list(FAULTS))
def test_a_scenario_fault_takes_exactly_the_settings_its_kind_takes(kind):
    from pydantic import ValidationError

    from harness.scenario.fault_tables import FaultSpec

    assert set(OTHER_VALUE) == set(SETTINGS)
    needed = {key: OTHER_VALUE[key] for key, _ in FAULTS[kind].requires}
    for setting, value in OTHER_VALUE.items():
        fault = {"at_s": 1, "kind": kind, **needed, setting: value}
        if setting in FAULTS[kind].takes:
            assert FaultSpec.model_validate(fault).settings()[setting] == value
        else:
            with pytest.raises(ValidationError, match=f"{setting}: only .* take"):
                FaultSpec.model_validate(fault)


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
