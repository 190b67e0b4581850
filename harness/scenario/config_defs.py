"""Topic configs and broker properties checked against the Kafka version's own config definitions,
before any container starts: a misspelt name (``retention.mss``) or a value the broker would
refuse (``num.network.threads = "lots"``) is bad input, not a run that fails after its cluster boots.

``config_defs.json`` holds, per Kafka version, each broker and topic config's type and validator
(its class and its text) as that version's ``ConfigDef`` states them (written by
``scripts/config_defs.py`` from the version's jars). A value is checked as ``ConfigDef`` parses it
(its type) and by the validators that say all they allow in their text: ``Range`` (``[1,...]``,
``[0,...,100]``) and the lists of allowed values (``ValidString``, ``ValidList``,
``CaseInsensitiveValidString``: ``[compact, delete]``). Any other validator (an API version,
which takes prefixes of the versions it lists; a class name) is left to the broker.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from pathlib import Path

TABLE = Path(__file__).with_name("config_defs.json")
# Broker properties Kafka accepts beyond its ConfigDef's names: per-listener overrides.
FREE_PREFIXES = ("listener.name.",)
INT_BOUNDS = {"SHORT": 2**15, "INT": 2**31, "LONG": 2**63}
RANGE = re.compile(r"\[(?P<lo>[^,\]]*),\.\.\.(?:,(?P<hi>[^\]]+))?\]")
UP_TO = re.compile(r"\[\.\.\.,(?P<hi>[^\]]+)\]")


@functools.cache
def _table() -> dict[str, dict[str, dict[str, list]]]:
    return json.loads(TABLE.read_text())


OPTION_CHECKS = ("ValidString", "ValidList", "CaseInsensitiveValidString")


def defs(version: str, scope: str) -> dict[str, list] | None:
    """{name: [type, validator class, validator text]} of ``scope`` ("broker" or "topic") at
    ``version``; None for a version the table does not have."""
    return _table().get(version, {}).get(scope)


def _number(text: str, kind: str) -> float | int:
    if kind == "DOUBLE":
        return float(text)
    value = int(text.strip())
    if not -INT_BOUNDS[kind] <= value < INT_BOUNDS[kind]:
        raise ValueError(f"out of a {kind.lower()}'s range")
    return value


def value_problem(value: str, kind: str, check: str | None, validator: str | None) -> str | None:
    """Why ConfigDef would refuse ``value`` for a config of type ``kind`` whose validator is of
    class ``check`` with text ``validator``; None when it would take it (or its validator is not
    one checked here)."""
    try:
        if kind == "BOOLEAN" and value.strip().lower() not in ("true", "false"):
            return f"{value!r} is not a boolean (allowed: true, false)"
        if kind in ("SHORT", "INT", "LONG", "DOUBLE"):
            number = _number(value, kind)
    except ValueError:
        return f"{value!r} is not {'a number' if kind == 'DOUBLE' else 'an integer'} (a {kind.lower()})"
    if not validator:
        return None
    if check in OPTION_CHECKS:
        return _options_problem(value, kind, validator)
    if check != "Range":
        return None
    if kind in ("SHORT", "INT", "LONG", "DOUBLE") and (m := RANGE.fullmatch(validator) or UP_TO.fullmatch(validator)):
        lo, hi = m.groupdict().get("lo"), m.group("hi")
        if (lo and number < float(lo)) or (hi and number > float(hi)):
            return f"{value} is out of range (allowed: {validator})"
    return None


def _options_problem(value: str, kind: str, validator: str) -> str | None:
    """A value against a validator listing what is allowed (``[compact, delete]``), each element of
    a list type's value; None when it lists none or the value is among them."""
    text, insensitive = validator, validator.startswith("(case insensitive) ")
    text = text.removeprefix("(case insensitive) ")
    if not (text.startswith("[") and text.endswith("]")) or "..." in text or len(text) < 3:
        return None
    allowed = [x.strip() for x in text[1:-1].split(",")]
    fold = (lambda s: s.lower()) if insensitive else (lambda s: s)
    given = [x.strip() for x in value.split(",")] if kind == "LIST" else [value.strip()]
    bad = [x for x in given if fold(x) not in {fold(a) for a in allowed} and x]
    return f"{value!r} is not allowed (allowed: {', '.join(allowed)})" if bad else None


def problems(props: dict[str, str], version: str, scope: str, where: str) -> list[str]:
    """One line per property of ``props`` that ``version``'s ``scope`` configs do not define, or
    whose value they would refuse, each naming ``where.NAME``."""
    table = defs(version, scope)
    if table is None:
        return []
    out = []
    for name, value in props.items():
        if name not in table:
            if name.startswith(FREE_PREFIXES):
                continue
            near = difflib.get_close_matches(name, list(table), n=3, cutoff=0.75)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            out.append(f"{where}.{name}: Kafka {version} has no {scope} config {name!r}{hint}")
        elif why := value_problem(str(value), *table[name]):
            out.append(f"{where}.{name}: {why}")
    return out
