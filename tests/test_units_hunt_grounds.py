"""The hunting grounds (scenarios/hunt/): each loads as a scenario, its [hunt] table draws every kind
it names, and the folder's README lists it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.hunt.space import vocabulary
from harness.scenario import load

GROUNDS = Path(__file__).resolve().parent.parent / "harness" / "scenarios" / "hunt"


def ground_files() -> list[Path]:
    return sorted(GROUNDS.glob("*.toml"))


def test_there_are_grounds_and_the_readme_lists_each():
    readme = (GROUNDS / "README.md").read_text()
    assert ground_files(), "at least one hunting ground"
    for f in ground_files():
        assert f"`{f.name}`" in readme, f"{f.name} is not in scenarios/hunt/README.md"


@pytest.mark.parametrize("path", ground_files(), ids=lambda p: p.stem)
def test_each_ground_draws_every_kind_its_hunt_table_names(path):
    s = load(path)
    assert s.hunt is not None and s.hunt.kinds, f"{path.name}: a ground keeps its draws on it ([hunt] kinds)"
    drawn = {m.kind for m in vocabulary(s)}
    assert drawn == set(s.hunt.kinds), f"{path.name}: kinds its scenario refuses: {set(s.hunt.kinds) - drawn}"
