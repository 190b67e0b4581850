"""What the scripts that read a table out of every Kafka version's own jars share
(feature_levels.py, config_defs.py): each version's jars resolved from Maven Central, a Java source
compiled against them and run per version, and the table written, or compared (``--check``)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.setup.tools import resolve_jars, run_tool  # noqa: E402


def jars(version, work: Path) -> Path:
    """``version``'s server jars, resolved from Maven Central into ``work`` once."""
    libs = work / version.version / "libs"
    if not libs.is_dir():
        libs.parent.mkdir(parents=True)
        resolve_jars(version.maven_artifacts(), "version-table", libs.parent, libs,
                     f"resolve Kafka {version.version}", RuntimeError)
    return libs


def rows_of(source: Path, versions: list, what: str, compile_against) -> dict[str, list[dict]]:
    """Per version, the JSON lines ``source``'s main class prints on that version's jars (compiled
    against ``compile_against``'s)."""
    with tempfile.TemporaryDirectory(prefix="kchaos-version-table-") as tmp:
        work = Path(tmp)
        run_tool(["javac", "-nowarn", "-d", str(work), "-cp", f"{jars(compile_against, work)}/*", str(source)],
                 f"javac {source.name}", RuntimeError)
        out = {}
        for kv in versions:
            text = run_tool(["java", "-cp", f"{jars(kv, work)}/*:{work}", source.stem],
                            f"{what} of {kv.version}", RuntimeError)
            out[kv.version] = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        return out


def write_or_check(table: Path, make: Callable[[], dict], dump: Callable[[dict], str]) -> None:
    """``python scripts/X.py [--check]``: write ``make()`` to ``table``, or with ``--check`` compare
    (exit 1 on a difference)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    a = ap.parse_args()
    fresh = make()
    if a.check:
        if fresh != json.loads(table.read_text()):
            sys.exit(f"{table} differs from the versions' own jars: run python scripts/{Path(sys.argv[0]).name}")
        print(f"{table}: as the jars say, {len(fresh)} versions")
        return
    table.write_text(dump(fresh))
    print(f"wrote {table}: {', '.join(fresh)}")
