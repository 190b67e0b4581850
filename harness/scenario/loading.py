"""Loading a scenario file: TOML read, ``--set`` overrides applied by dotted name, every problem
reported as ``FILE: KEY: what is wrong (allowed: ...)``."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from pydantic import (
    ValidationError,
)

from harness.scenario import catalogue
from harness.scenario.model import Scenario
from harness.scenario.tables import ScenarioError, unknown_key

FREEFORM_MAPS = ("broker_config", "config", "controller_config", "features")
def _set_dotted(data: dict, dotted: str, raw: str, source: str) -> None:
    """Apply one --set KEY=VALUE; VALUE is parsed as a TOML value, else taken as a string."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    parts = dotted.split(".")
    # Kafka property names contain dots: below a free-form map the rest of the path is one key.
    for i, key in enumerate(parts[:-1]):
        if key in FREEFORM_MAPS:
            parts = [*parts[: i + 1], ".".join(parts[i + 1:])]
            break
    node = data
    for i, key in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise ScenarioError(f"{source}: --set {dotted}: {'.'.join(parts[:i + 1])} is not an index of the "
                                    f"list (allowed: 0..{len(node) - 1})")
            node = node[int(key)]
        else:
            node = node.setdefault(key, [] if nxt.isdigit() else {})
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ScenarioError(f"{source}: --set {dotted}: not an index of the list (allowed: 0..{len(node) - 1})")
        node[int(last)] = value
    else:
        node[last] = value


def _explain(e: ValidationError, source: str) -> str:
    lines = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = unknown_key(Scenario, err["loc"])
        elif err["type"] == "literal_error":
            msg = f"{err.get('input')!r} is not allowed ({err['msg'].removeprefix('Input should be ')})"
        lines.append(f"{source}: {loc + ': ' if loc else ''}{msg}")
    return "\n".join(lines)


def _parsed(path: Path) -> dict:
    """A scenario file's TOML, or ScenarioError saying why it cannot be read: missing, a directory,
    unreadable, not UTF-8, not TOML."""
    if not path.exists():
        raise ScenarioError(f"{path}: no such scenario file (allowed: a path to a .toml file, or a name in the "
                            f"catalogue: {', '.join(catalogue.names())})")
    if path.is_dir():
        raise ScenarioError(f"{path}: is a directory, not a scenario file (allowed: a .toml file, or a name in "
                            "scenarios/)")
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as e:
        raise ScenarioError(f"{path}: cannot be read ({e.strerror})") from e
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {e.start}); a scenario is a TOML file") from e
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML ({e})") from e


def load(path: str | Path, overrides: list[str] | None = None, **fields) -> Scenario:
    """Read, override and validate a scenario (a path, or a catalogue name: catalogue.find); raise
    ScenarioError naming the file and key."""
    path = catalogue.find(path)
    data = _parsed(path)
    data = copy.deepcopy(data)
    data.setdefault("name", path.stem)
    for k, v in fields.items():
        if v is not None:
            data[k] = v
    for item in overrides or []:
        if "=" not in item:
            raise ScenarioError(f"{path}: --set {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        _set_dotted(data, k.strip(), v.strip(), str(path))
    return validate_tables(str(path), data)


def validate_tables(source: str, data: dict) -> Scenario:
    """A scenario from its tables (a file's, or a pytest workload's); ScenarioError names ``source``
    and the key."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(_explain(e, source)) from e
