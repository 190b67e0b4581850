"""Open a report in headless Chromium (Debian's package) and collect what a reader's browser would see."""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class PageCheck:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    text: str = ""
    distinct_colours: int = 0
    plots: int = 0
    totals: dict[str, dict[str, int]] = field(default_factory=dict)  # run id -> anomaly -> count shown
    run_verdicts: dict[str, str] = field(default_factory=dict)  # run id -> the matrix's run verdict cell
    matrix_rows: list[dict] = field(default_factory=list)  # each matrix row: its run, kind, label and verdict
    overflow: dict[str, int] = field(default_factory=dict)  # table id -> pixels it is wider than its box


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        msg = "Debian's chromium is not installed (scripts/setup.sh installs it: apt-get install chromium)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def open_report(html: Path, open_runs: bool = True) -> PageCheck:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    out = PageCheck()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.on("console", lambda m: out.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: out.console_errors.append(str(e)))
        page.on("request", lambda r: out.requests.append(r.url))
        page.goto(html.resolve().as_uri())
        page.wait_for_load_state("load")
        if open_runs:
            page.evaluate("document.querySelectorAll('details.run').forEach(d => d.open = true)")
        page.wait_for_timeout(1500)
        out.plots = page.evaluate("document.querySelectorAll('.plot .main-svg').length")
        out.text = page.inner_text("body")
        out.totals = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('details.run')].map(
            d => [d.dataset.runId, Object.fromEntries([...d.querySelectorAll('[data-total]')].map(
                c => [c.dataset.total, parseInt(c.textContent)]))]))""")
        out.run_verdicts = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
            '[data-run-verdict]')].map(c => [c.dataset.runVerdict, c.textContent.trim()]))""")
        out.matrix_rows = page.evaluate("""() => [...document.querySelectorAll('#matrix-table tr[data-row-of]')].map(
            r => ({run: r.dataset.rowOf, kind: r.dataset.kind, what: r.querySelector('td.cfg').textContent.trim(),
                   verdict: r.querySelector('td.cfg').nextElementSibling.classList.contains('faults')
                       ? r.querySelector('td.cfg').nextElementSibling.nextElementSibling.textContent.trim()
                       : r.querySelector('td.cfg').nextElementSibling.textContent.trim()}))""")
        out.overflow = page.evaluate("""() => Object.fromEntries(['matrix-table', 'promise-table'].map(id => {
            const t = document.getElementById(id);
            return [id, t ? Math.max(0, t.scrollWidth - t.parentElement.clientWidth) : -1]; }))""")
        shot = page.screenshot(full_page=False)
        browser.close()
    img = Image.open(io.BytesIO(shot)).convert("RGB")
    out.distinct_colours = len(img.getcolors(maxcolors=1 << 20) or [])
    return out


def assert_report_page(html: Path, verdicts: list) -> PageCheck:
    """Open ``html`` and assert what every report must do: no console error, nothing fetched but the
    page itself, a drawn screenshot, a timeline per run, and each run's counts as verdict.json has them."""
    page = open_report(html)
    assert page.console_errors == []
    assert all(u.startswith("file://") for u in page.requests), page.requests
    assert page.requests == [html.resolve().as_uri()], "the page loads nothing besides itself"
    assert page.distinct_colours > 20, "the screenshot is blank"
    assert page.plots >= len(verdicts), "every run's timeline rendered"
    for v in verdicts:
        shown = page.totals[v.run_id]
        assert shown == {a: v.anomalies[a] for a in shown}, "the page shows verdict.json's counts"
        assert not any(n for a, n in v.anomalies.items() if a not in shown), "only zero counts may be left out"
    return page
