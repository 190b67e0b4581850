"""Write harness/scenario/config_defs.json: the broker's and the topic's config definitions of every
Kafka version kchaos runs (each name's type and validator), read from that version's own jars
(Maven Central) by ConfigDefs.java. Scenarios are validated against it before any container starts.

    python scripts/config_defs.py [--check]

Run it when a version is added to harness/versions.py; ``--check`` compares instead of writing
(exit 1 on a difference), which tests/test_docs_and_images.py does in the long tier.
"""

from __future__ import annotations

import json

from version_tables import ROOT, rows_of, write_or_check

from harness.scenario.config_defs import TABLE
from harness.versions import all_versions

SOURCE = ROOT / "scripts" / "config_defs" / "ConfigDefs.java"


def table() -> dict[str, dict[str, dict[str, list]]]:
    """{version: {"broker"|"topic": {name: [type, validator class, validator text]}}} from each
    version's server jars."""
    kvs = all_versions()
    out: dict[str, dict[str, dict[str, list]]] = {}
    for version, rows in rows_of(SOURCE, kvs, "config definitions", compile_against=kvs[0]).items():
        out[version] = {"broker": {}, "topic": {}}
        for r in rows:
            out[version][r["scope"]][r["name"]] = [r["type"], r["check"], r["validator"]]
    return out


if __name__ == "__main__":
    write_or_check(TABLE, table, lambda t: json.dumps(t, separators=(",", ":"), sort_keys=True) + "\n")
