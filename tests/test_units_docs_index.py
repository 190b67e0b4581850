"""docs/README.md indexes every page under docs/, and every link in it leads to a file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _links() -> list[str]:
    return [t for t in LINK.findall(INDEX.read_text()) if not re.match(r"[a-z]+://", t)]


def test_every_docs_page_is_linked_from_the_index():
    linked = {(DOCS / t).resolve() for t in _links()}
    pages = {p.resolve() for p in DOCS.rglob("*.md") if p != INDEX}
    missing = sorted(str(p.relative_to(DOCS)) for p in pages - linked)
    assert not missing, f"docs/README.md does not link {missing}: add a line under the kind of page it is"


def test_every_link_of_the_index_resolves():
    broken = [t for t in _links() if not (DOCS / t).is_file()]
    assert _links() and not broken, f"docs/README.md links files that do not exist: {broken}"


def test_every_harness_path_the_docs_name_exists():
    """A path like ``harness/run/recording.py`` in the README, docs/, the catalogue or the benchmarks'
    README names a file that exists (``NAME`` stands for any name)."""
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *ROOT.glob("docs/**/*.md"),
             *ROOT.glob("scenarios/*.md")]
    missing = sorted({f"{page.relative_to(ROOT)}: {p}" for page in pages
                      for p in re.findall(r"harness/[A-Za-z0-9_/.-]+\.(?:py|j2|json)", page.read_text())
                      if "NAME" not in p and not (ROOT / p).exists()})
    assert not missing, "paths the docs name that do not exist:\n" + "\n".join(missing)
