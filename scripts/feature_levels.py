"""Write harness/cluster/feature_levels.json: the feature levels each KRaft-capable Kafka version can format a
cluster with, read from that version's own jars (Maven Central) by FeatureLevels.java.

    python scripts/feature_levels.py [--check]

Run it when a version is added to harness/versions.py; ``--check`` compares instead of writing
(exit 1 on a difference), which tests/test_docs_and_images.py does in the long tier.
"""

from __future__ import annotations

import json

from version_tables import ROOT, rows_of, write_or_check

from harness.cluster.feature_levels import TABLE
from harness.versions import all_versions

SOURCE = ROOT / "scripts" / "feature_levels" / "FeatureLevels.java"


def table() -> dict[str, dict[str, dict[str, int]]]:
    """{version: {feature: {min, default, production, testing}}} from each KRaft version's jars."""
    kvs = [kv for kv in all_versions() if "kraft" in kv.modes]
    rows = rows_of(SOURCE, kvs, "feature levels", compile_against=kvs[-1])
    return {v: {r.pop("feature"): r for r in rs} for v, rs in rows.items()}


if __name__ == "__main__":
    write_or_check(TABLE, table, lambda t: json.dumps(t, indent=1, sort_keys=False) + "\n")
