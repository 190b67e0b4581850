"""The fault reference of docs/faults.md, rendered from the code: every fault kind of the registry
(grouped by what it acts on, as its fields say), the settings each takes, the targets, and the
trigger events. Nothing here is copied by hand: each line comes from FAULTS, FAMILIES, TARGET_DOCS,
STREAM_HELP (harness/faults/registry.py), FaultSettings (harness/faults/settings.py), EVENTS and
TRIGGER_HELP (harness/faults/triggers.py).

    python -m harness.faults.reference      # rewrite docs/faults.md between its markers
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

from harness.faults.registry import (
    CLIENT_ROLE_HELP,
    CLIENT_ROLES,
    FAMILIES,
    FAULTS,
    STREAM_HELP,
    TARGET_DOCS,
    TARGET_NOTE,
    FaultKind,
)
from harness.faults.settings import FaultSettings
from harness.faults.triggers import EVENTS, TRIGGER_HELP, Trigger

PAGE = Path(__file__).resolve().parents[2] / "docs" / "faults.md"
START, END = "<!-- fault-reference:start -->", "<!-- fault-reference:end -->"
# Settings every fault takes, whatever its kind; the others (FaultSettings) only the kinds whose
# records list them (FaultKind.takes).
COMMON_SETTINGS = ("at_s", "duration_s", "kind", "target", "partition", "on")


def family(kind: FaultKind) -> str:
    """The FAMILIES key of a kind: what it acts on, from its fields."""
    if kind.on_clients:
        return "client"
    if kind.operation:
        return "operation"
    if kind.quorum_change:
        return "quorum"
    if kind.lasting:
        return "lasting"
    if kind.disk:
        return "disk"
    if kind.toxic or kind.loses_answers:
        return "network"
    return "process"


def aimed_at(kind: FaultKind) -> str:
    """What a kind may be aimed at, in a few words."""
    if kind.on_clients:
        return "; ".join(CLIENT_ROLE_HELP[r] for r in CLIENT_ROLES if r in kind.clients)
    if kind.operation:
        return "a partition"
    if kind.quorum_change:
        return "KRaft controllers"
    if kind.lasting:
        return "the whole cluster"
    if kind.disk or kind.loses_answers:
        return "brokers, KRaft controllers"
    if not kind.on_nodes:
        return "brokers"
    return "brokers, KRaft controllers, ZooKeeper servers"


def settings_of(kind: FaultKind) -> list[str]:
    """The settings a kind takes besides COMMON_SETTINGS, in FaultSettings' order."""
    return list(kind.takes)


def _code(names) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _kinds_section() -> list[str]:
    out = ["## Fault kinds", "",
           f"{len(FAULTS)} kinds, grouped by what they act on. Every fault takes {_code(COMMON_SETTINGS)}; the "
           "settings column names what else a kind takes ([Fault settings](#fault-settings)).", ""]
    by_family: dict[str, list[FaultKind]] = {f: [] for f in FAMILIES}
    for kind in FAULTS.values():
        by_family[family(kind)].append(kind)
    for key, (title, text) in FAMILIES.items():
        kinds = by_family[key]
        if not kinds:
            continue
        out += [f"### {title}", "", text, "", "| kind | what it does | on | settings |", "|---|---|---|---|"]
        out += [f"| `{k.name}` | {k.summary or k.help} | {aimed_at(k)} | {_code(settings_of(k))} |" for k in kinds]
        out.append("")
        for k in kinds:
            more = f" {k.details}" if k.details else ""
            guide = f" More: [{k.guide}]({k.guide})." if k.guide else ""
            out.append(f"- **`{k.name}`**: {k.help}.{more}{guide}")
        out.append("")
    return out


def _settings_section() -> list[str]:
    out = ["## Fault settings", "", f"Every fault takes {_code(COMMON_SETTINGS)}. The other settings, and the kinds "
           "that take them:", ""]
    for setting, field in FaultSettings.model_fields.items():
        kinds = [k.name for k in FAULTS.values() if setting in k.takes]
        default = "" if field.default is None else f" (default `{field.default}`)"
        note = STREAM_HELP if setting == "stream" else field.description
        out.append(f"- `{setting}`{default}: {note}. Taken by {_code(kinds)}.")
    return [*out, ""]


def _targets_section() -> list[str]:
    out = ["## Targets", "", TARGET_NOTE, "", "| target | means |", "|---|---|"]
    out += [f"| {_code(spelling.split(', '))} | {means} |" for spelling, means in TARGET_DOCS]
    return [*out, ""]


def _triggers_section() -> list[str]:
    every = Trigger(event="acked", count=1, producer="p", partition=0, offset=1, fault=0, size=1, broker=1, delay_s=1)
    out = ["## Triggers", "", TRIGGER_HELP, "", "| event | fires when | needs | may name |", "|---|---|---|---|"]
    for event, (means, needs) in EVENTS.items():
        optional = [k for k in replace(every, event=event).to_dict() if k not in ("event", "delay_s", *needs)]
        out.append(f"| `{event}` | {means} | {_code(needs)} | {_code(optional)} |")
    return [*out, ""]


def fault_reference_markdown() -> str:
    """The generated part of docs/faults.md (between its markers)."""
    lines = [*_kinds_section(), *_settings_section(), *_targets_section(), *_triggers_section()]
    return "\n".join(lines).strip() + "\n"


def page_with_reference(page: str) -> str:
    """``page`` with the part between its markers replaced by the generated reference."""
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(page):
        raise ValueError(f"{PAGE} lacks the markers {START} and {END}")
    return pattern.sub(lambda _: f"{START}\n{fault_reference_markdown()}{END}", page)


def main() -> None:
    """Rewrite docs/faults.md's generated part from the code."""
    text = PAGE.read_text()
    new = page_with_reference(text)
    if new != text:
        PAGE.write_text(new)
    print(f"{PAGE}: {'rewritten' if new != text else 'up to date'}")


if __name__ == "__main__":
    sys.exit(main())
