"""Write harness/cluster/feature_levels.json: the feature levels each KRaft-capable Kafka version can format a
cluster with, read from that version's own jars (Maven Central) by FeatureLevels.java.

    python scripts/feature_levels.py [--check]

Run it when a version is added to harness/versions.py; ``--check`` compares instead of writing
(exit 1 on a difference), which tests/test_feature_levels.py does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.cluster.feature_levels import TABLE  # noqa: E402
from harness.setup.tools import resolve_jars, run_tool  # noqa: E402
from harness.versions import all_versions  # noqa: E402

SOURCE = ROOT / "scripts" / "feature_levels" / "FeatureLevels.java"


def jars(version, work: Path) -> Path:
    """``version``'s server jars, resolved from Maven Central into ``work`` once."""
    libs = work / version.version / "libs"
    if not libs.is_dir():
        libs.parent.mkdir(parents=True)
        resolve_jars(version.maven_artifacts(), "feature-levels", libs.parent, libs,
                     f"resolve Kafka {version.version}", RuntimeError)
    return libs


def levels_of(version, work: Path) -> dict[str, dict[str, int]]:
    """{feature: {min, default, production, testing}} from ``version``'s server jars."""
    out = run_tool(["java", "-cp", f"{jars(version, work)}/*:{work}", "FeatureLevels"],
                   f"feature levels of {version.version}", RuntimeError)
    rows = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    return {r.pop("feature"): r for r in rows}


def table() -> dict[str, dict[str, dict[str, int]]]:
    with tempfile.TemporaryDirectory(prefix="kchaos-feature-levels-") as tmp:
        work = Path(tmp)
        kvs = [kv for kv in all_versions() if "kraft" in kv.modes]
        run_tool(["javac", "-nowarn", "-d", str(work), "-cp", f"{jars(kvs[-1], work)}/*", str(SOURCE)],
                 "javac FeatureLevels", RuntimeError)
        return {kv.version: levels_of(kv, work) for kv in kvs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    a = ap.parse_args()
    fresh = table()
    if a.check:
        if fresh != json.loads(TABLE.read_text()):
            print(json.dumps(fresh, indent=1))
            sys.exit(f"{TABLE} differs from the versions' own jars: run python scripts/feature_levels.py")
        print(f"{TABLE}: as the jars say, {len(fresh)} versions")
        return
    TABLE.write_text(json.dumps(fresh, indent=1, sort_keys=False) + "\n")
    print(f"wrote {TABLE}: {', '.join(fresh)}")


if __name__ == "__main__":
    main()
