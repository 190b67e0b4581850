"""The README's promise table is the code's; a second `kchaos images` builds nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checker.promises import promise_table_markdown
from tests.conftest import require_docker

ROOT = Path(__file__).resolve().parent.parent


def test_readme_shows_the_promise_table_from_the_code():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- promise-table:start -->\n(.*?)\n<!-- promise-table:end -->", readme, re.S)
    assert m, "README lacks the promise-table markers"
    assert m.group(1).strip() == promise_table_markdown().strip()


@pytest.mark.docker
def test_second_images_run_does_nothing():
    require_docker()
    r = subprocess.run([sys.executable, "-m", "harness", "images"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "all images up to date" in r.stdout
    assert "building" not in r.stdout


def test_the_run_directory_doc_shows_the_event_types_from_the_code():
    from harness.events import doc_table

    doc = (ROOT / "docs" / "run-directory.md").read_text()
    m = re.search(r"<!-- events-table:start -->\n(.*?)\n<!-- events-table:end -->", doc, re.S)
    assert m, "docs/run-directory.md lacks the events-table markers"
    assert m.group(1).strip() == doc_table().strip()
