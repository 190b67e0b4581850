"""Write harness/scenario/config_defs.json: the broker's and the topic's config definitions of every
Kafka version kchaos runs (each name's type and validator), read from that version's own jars
(Maven Central) by ConfigDefs.java. Scenarios are validated against it before any container starts.

    python scripts/config_defs.py [--check]

Run it when a version is added to harness/versions.py; ``--check`` compares instead of writing
(exit 1 on a difference), which tests/test_docs_and_images.py does in the long tier.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.scenario.config_defs import TABLE  # noqa: E402
from harness.setup.tools import resolve_jars, run_tool  # noqa: E402
from harness.versions import all_versions  # noqa: E402

SOURCE = ROOT / "scripts" / "config_defs" / "ConfigDefs.java"


def jars(version, work: Path) -> Path:
    """``version``'s server jars, resolved from Maven Central into ``work`` once."""
    libs = work / version.version / "libs"
    if not libs.is_dir():
        libs.parent.mkdir(parents=True)
        resolve_jars(version.maven_artifacts(), "config-defs", libs.parent, libs,
                     f"resolve Kafka {version.version}", RuntimeError)
    return libs


def defs_of(version, work: Path) -> dict[str, dict[str, list]]:
    """{"broker"|"topic": {name: [type, validator class, validator text]}} from ``version``'s server jars."""
    out = run_tool(["java", "-cp", f"{jars(version, work)}/*:{work}", "ConfigDefs"],
                   f"config definitions of {version.version}", RuntimeError)
    table: dict[str, dict[str, list]] = {"broker": {}, "topic": {}}
    for row in (json.loads(x) for x in out.splitlines() if x.startswith("{")):
        table[row["scope"]][row["name"]] = [row["type"], row["check"], row["validator"]]
    return table


def table() -> dict[str, dict[str, dict[str, list]]]:
    with tempfile.TemporaryDirectory(prefix="kchaos-config-defs-") as tmp:
        work = Path(tmp)
        kvs = all_versions()
        run_tool(["javac", "-nowarn", "-d", str(work), "-cp", f"{jars(kvs[0], work)}/*", str(SOURCE)],
                 "javac ConfigDefs", RuntimeError)
        return {kv.version: defs_of(kv, work) for kv in kvs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    a = ap.parse_args()
    fresh = table()
    if a.check:
        if fresh != json.loads(TABLE.read_text()):
            sys.exit(f"{TABLE} differs from the versions' own jars: run python scripts/config_defs.py")
        print(f"{TABLE}: as the jars say, {len(fresh)} versions")
        return
    TABLE.write_text(json.dumps(fresh, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {TABLE}: {', '.join(fresh)}")


if __name__ == "__main__":
    main()
