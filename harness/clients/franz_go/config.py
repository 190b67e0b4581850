"""What a scenario may ask of the franz-go driver, checked before any container starts: the
version (one the Go module proxy serves, built the first time a scenario names it) and each table's
``config``, which takes Kafka's own property names where franz-go has an option that does the same
(the program's ``check`` says which, and why a value is refused)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.clients.franz_go import build as franz_build
from harness.clients.owned import owned
from harness.versions import KAFKA_VERSIONS

OWNED = owned({})
VERSION_TEXT = re.compile(r"^\d+\.\d+\.\d+$")


def as_properties(props: dict) -> dict[str, str]:
    """Properties as the program reads them: every value a string, booleans as Kafka spells them."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}


def franz_version(version: str) -> str:
    """The franz-go version a table runs: its ``client_version``, or the default where it names none
    (a scenario's client version defaults to the broker's, which is not one of franz-go's)."""
    return franz_build.DEFAULT_VERSION if version in KAFKA_VERSIONS else version


def version_refusal(version: str) -> str | None:
    v = franz_version(version)
    if not VERSION_TEXT.match(v):
        return f"client_version: {v!r} is not a franz-go release (allowed: a version such as " \
               f"{franz_build.DEFAULT_VERSION} that the Go module proxy serves)"
    try:
        franz_build.build(v, log=lambda m: print(m, file=sys.stderr))
    except franz_build.DriverBuildError as e:
        return f"client_version: franz-go {v} could not be built (allowed: a version the Go module proxy " \
               f"serves, such as {franz_build.DEFAULT_VERSION}): {str(e).splitlines()[0][:200]}"
    return None


def refusal(table, version: str) -> str | None:
    """Why the franz-go driver at ``version`` cannot make the client ``table`` describes, or None."""
    kind, v = table.kind, franz_version(version)
    for key in table.config:
        if key in OWNED[kind]:
            return f"config.{key}: {OWNED[kind][key]} (allowed: any other property franz-go has an option for)"
    if kind == "group" and getattr(table, "protocol", "classic") != "classic":
        return "protocol: the franz-go driver runs classic groups (allowed: classic)"
    if not table.config:
        return None
    with tempfile.TemporaryDirectory(prefix="kchaos-franz-check-") as d:
        cfg = Path(d) / "config.json"
        cfg.write_text(json.dumps({"properties": as_properties(table.config)}))
        proc = subprocess.run([str(franz_build.program(v)), "check", str(cfg)], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"config.{proc.stderr.strip().splitlines()[-1]}"
    return None
