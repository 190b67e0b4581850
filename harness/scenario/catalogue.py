"""The scenario catalogue shipped with the package (``harness/scenarios/``; a checkout's
``scenarios/`` links to it), and how a command or a test names a scenario.

A path that exists wins. Otherwise ``NAME``, ``NAME.toml`` or ``scenarios/NAME.toml`` names the
catalogue's scenario, so ``kchaos run safe-faults`` and the README's
``chaos_run("scenarios/safe-faults.toml")`` work from any directory, not only in a checkout.
"""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parents[1] / "scenarios"
SUFFIX = ".toml"


def names() -> list[str]:
    """Every catalogue scenario's name."""
    return sorted(p.stem for p in DIR.glob(f"*{SUFFIX}"))


def catalogue_name(ref: str | Path) -> str | None:
    """The catalogue name ``ref`` gives (``NAME``, ``NAME.toml``, ``scenarios/NAME.toml``), whether or not
    the catalogue has it; None for a path into another directory."""
    head, _, tail = str(ref).rpartition("/")
    if head not in ("", "scenarios", "./scenarios") or not tail:
        return None
    return tail.removesuffix(SUFFIX)


def find(ref: str | Path) -> Path:
    """The file ``ref`` names: a path that exists, else the catalogue's scenario of that name, else
    ``ref`` as given (whose loading then says it does not exist, naming the catalogue)."""
    p = Path(ref)
    if p.exists():
        return p
    name = catalogue_name(ref)
    if name is not None and (DIR / f"{name}{SUFFIX}").is_file():
        return DIR / f"{name}{SUFFIX}"
    return p


def is_catalogued(path: Path) -> bool:
    """Whether ``path`` is one of the catalogue's own files (its repeat command can name it by name)."""
    return path.resolve().parent == DIR
