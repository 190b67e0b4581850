"""docs/history-contract.md is the code's: each Parquet file's columns with their types and
nullability (harness/history/contract.py's SCHEMAS, OPTIONAL_COLUMNS, OPTIONAL_FILES), run.json's
keys (RunConfig and its nested models), events.jsonl's record types (harness/history/events.py's
Event union) and one section per anomaly class (harness/checker/anomaly's CLASSES), each with its
module's definition. Pure: the doc is parsed as text; no Docker, no Spark session."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from harness.history import contract, events

ROOT = Path(__file__).resolve().parent.parent
DOC = "docs/history-contract.md"
RUN_DIRECTORY = "docs/run-directory.md"

FILES_HEADER = ["file", "presence", "what it holds"]
COLUMNS_HEADER = ["column", "type", "null", "meaning"]
OPTIONAL_HEADER = ["optional column", "type", "null", "meaning"]
RUN_JSON_HEADER = ["key", "type", "null", "required", "meaning"]
EVENTS_HEADER = ["type", "read by"]
CLASSES_HEADER = ["class", "contract", "attributed to"]
RUN_DIRECTORY_EVENTS_HEADER = ["type", "what it records", "keys (? optional)"]

_SEPARATOR = re.compile(r"\|(\s*:?-+:?\s*\|)+")


# ------------------------------------------------------------------ reading the doc

def _cells(line: str) -> list[str]:
    return [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]


def sections(text: str) -> list[tuple[int, str, str]]:
    """(level, title, body) of each heading of ``text``: the body runs to the next heading of any
    level; backticks are dropped from titles."""
    out: list[tuple[int, str, list[str]]] = [(0, "", [])]
    for line in text.splitlines():
        m = re.match(r"(#+)\s+(.*)", line)
        if m:
            out.append((len(m.group(1)), m.group(2).replace("`", "").strip(), []))
        else:
            out[-1][2].append(line)
    return [(level, title, "\n".join(body)) for level, title, body in out]


def tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every markdown table of ``text``: (the title of the heading above it, its header cells, its
    rows' cells), backticks dropped from the cells."""
    out = []
    for _, title, body in sections(text):
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("|") and i + 1 < len(lines) and _SEPARATOR.fullmatch(lines[i + 1].strip()):
                header, rows = _cells(lines[i]), []
                i += 2
                while i < len(lines) and lines[i].startswith("|"):
                    rows.append(_cells(lines[i]))
                    i += 1
                out.append((title, header, rows))
            else:
                i += 1
    return out


def table_rows(text: str, header: list[str], problems: list[str], where: str = DOC,
               under: str | None = None) -> dict[str, tuple[str, ...]]:
    """The rows of the tables of ``text`` with ``header`` (under a heading whose title contains
    ``under``, if given), first cell -> the rest. A row of the wrong width, a name given twice or
    no such table at all is a problem."""
    out: dict[str, tuple[str, ...]] = {}
    found = False
    for title, head, rows in tables(text):
        if head != header or (under is not None and under not in title):
            continue
        found = True
        for row in rows:
            if len(row) != len(header):
                problems.append(f"{where}: a row of the table '{' | '.join(header)}' under '{title}' has "
                                f"{len(row)} cells, not {len(header)}: {row}")
            elif row[0] in out:
                problems.append(f"{where}: '{row[0]}' is listed twice in the table '{' | '.join(header)}'")
            else:
                out[row[0]] = tuple(row[1:])
    if not found:
        problems.append(f"{where}: no table '{' | '.join(header)}'" + (f" under '{under}'" if under else ""))
    return out


def differences(what: str, doc: dict[str, tuple], code: dict[str, tuple], code_where: str,
                fields: tuple[str, ...] = (), doc_where: str = DOC) -> list[str]:
    """Each name on one side only, and each name whose ``fields`` differ, said with the side it is
    missing from."""
    out = []
    for name in sorted(code.keys() - doc.keys()):
        out.append(f"{what}: '{name}' is in the code ({code_where}) but missing from {doc_where}")
    for name in sorted(doc.keys() - code.keys()):
        out.append(f"{what}: '{name}' is in {doc_where} but missing from the code ({code_where})")
    for name in sorted(doc.keys() & code.keys()):
        if doc[name][:len(fields)] != code[name]:
            said = ", ".join(f"{f} {v}" for f, v in zip(fields, doc[name], strict=False))
            real = ", ".join(f"{f} {v}" for f, v in zip(fields, code[name], strict=True))
            out.append(f"{what}: '{name}' has {said} in {doc_where} but {real} in the code ({code_where})")
    return out


# ------------------------------------------------------------------ the comparisons

def files_problems(text: str) -> list[str]:
    """The Contents table: every file of the contract, with whether it is required."""
    problems: list[str] = []
    doc = {name: row[:1] for name, row in table_rows(text, FILES_HEADER, problems).items()}
    code = {**{n: ("required",) for n in [*contract.SCHEMAS, contract.RUN_JSON]},
            **{n: ("optional",) for n in [*contract.OPTIONAL_FILES, contract.EVENTS]}}
    return problems + differences("Contents", doc, code, "contract.SCHEMAS, RUN_JSON, OPTIONAL_FILES, EVENTS",
                                  ("presence",))


def _columns(schema) -> dict[str, tuple[str, str]]:
    return {f.name: (str(f.type), "yes" if f.nullable else "no") for f in schema}


def parquet_problems(text: str) -> list[str]:
    """Per Parquet file: its columns' names, types and nullability, required and optional."""
    problems: list[str] = []
    tabled = {(t, h[0]) for t, h, _ in tables(text) if h in (COLUMNS_HEADER, OPTIONAL_HEADER)}
    files = sorted({*contract.SCHEMAS, *contract.OPTIONAL_FILES, *contract.OPTIONAL_COLUMNS,
                    *(f for title, _ in tabled for f in re.findall(r"[\w.]+\.parquet", title))})
    for f in files:
        if f in contract.SCHEMAS:
            required, where = _columns(contract.SCHEMAS[f]), f"contract.SCHEMAS[{f!r}]"
        elif f in contract.OPTIONAL_FILES:
            required, where = _columns(contract.OPTIONAL_FILES[f]), f"contract.OPTIONAL_FILES[{f!r}]"
        else:
            required, where = {}, "contract.SCHEMAS, OPTIONAL_FILES"
        doc = table_rows(text, COLUMNS_HEADER, problems, under=f)
        problems += differences(f"{f} columns", doc, required, where, ("type", "null"))
        optional = _columns(contract.OPTIONAL_COLUMNS.get(f, []))
        if optional or any(f in title and head == OPTIONAL_HEADER[0] for title, head in tabled):
            doc = table_rows(text, OPTIONAL_HEADER, problems, under=f)
            problems += differences(f"{f} optional columns", doc, optional, f"contract.OPTIONAL_COLUMNS[{f!r}]",
                                    ("type", "null"))
    return problems


_JSON_NAMES = {str: "string", int: "integer", bool: "boolean", float: "number", object: "any"}


def _model(t: object) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _unwrap(annotation: object) -> tuple[object, bool]:
    """(the type, whether null is allowed) of ``T | None`` or ``T``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0], True
    return annotation, False


def json_type(t: object) -> str:
    """A run.json key's type as the doc spells it: string, integer, boolean, object of string,
    list of string, list of objects, one of "0", "1", "all"."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Literal:
        return "one of " + ", ".join(f'"{a}"' for a in args)
    if origin is list:
        return "list of objects" if _model(args[0]) else f"list of {json_type(args[0])}"
    if origin is dict:
        return f"object of {json_type(args[1])}"
    if _model(t):
        return "object"
    if t in _JSON_NAMES:
        return _JSON_NAMES[t]  # type: ignore[index]
    raise AssertionError(f"run.json: the doc has no spelling for the type {t!r} (extend json_type)")


def run_json_keys(model: type[BaseModel], prefix: str = "") -> dict[str, tuple[str, str, str]]:
    """key (``topics[].name`` inside a list's objects) -> (type, null, required), over the model and
    the models it nests."""
    out = {}
    for name, field in model.model_fields.items():
        t, nullable = _unwrap(field.annotation)
        out[prefix + name] = (json_type(t), "yes" if nullable else "no", "yes" if field.is_required() else "no")
        is_list = typing.get_origin(t) is list
        item = typing.get_args(t)[0] if is_list else t
        if _model(item):
            out |= run_json_keys(item, f"{prefix}{name}{'[].' if is_list else '.'}")
    return out


def run_json_problems(text: str) -> list[str]:
    problems: list[str] = []
    doc = table_rows(text, RUN_JSON_HEADER, problems)
    return problems + differences("run.json", doc, run_json_keys(contract.RunConfig), "contract.RunConfig",
                                  ("type", "null", "required"))


def event_types_in_code() -> dict[str, tuple]:
    """The ``type`` literal of each model of events.Event."""
    union = typing.get_args(events.Event)[0]
    return {typing.get_args(m.model_fields["type"].annotation)[0]: () for m in typing.get_args(union)}


def events_problems(text: str, run_directory: str) -> list[str]:
    """The types this doc lists, and those of the table it links to, are the Event union's."""
    problems: list[str] = []
    code = event_types_in_code()
    problems += differences("events.jsonl types", table_rows(text, EVENTS_HEADER, problems), code,
                            "harness/history/events.py Event")
    if "(run-directory.md#eventsjsonl)" not in text:
        problems.append(f"{DOC}: the events.jsonl section does not link to run-directory.md#eventsjsonl")
    m = re.search(r"<!-- events-table:start -->\n(.*?)\n<!-- events-table:end -->", run_directory, re.S)
    if m is None:
        return [*problems, f"{RUN_DIRECTORY}: no events-table markers"]
    linked = table_rows(m.group(1), RUN_DIRECTORY_EVENTS_HEADER, problems, where=RUN_DIRECTORY)
    return problems + differences("events.jsonl types", linked, code, "harness/history/events.py Event",
                                  doc_where=RUN_DIRECTORY)


def _normal(s: str) -> str:
    return " ".join(s.replace("``", "`").split())


def anomaly_problems(text: str) -> list[str]:
    """A summary row and a section (### name, under "Anomaly classes") per class of CLASSES, the
    section holding the first paragraph of the class's definition (its module's docstring)."""
    from harness.checker.anomaly import CLASSES

    problems: list[str] = []
    doc = table_rows(text, CLASSES_HEADER, problems)
    problems += differences("anomaly classes", doc, {c.name: (c.contract, c.owner) for c in CLASSES},
                            "harness/checker/anomaly CLASSES", ("contract", "attributed to"))
    bodies: dict[str, str] = {}
    parent = ""
    for level, title, body in sections(text):
        if level == 2:
            parent = title
        elif level == 3 and parent == "Anomaly classes":
            bodies[title] = _normal(body)
    for c in CLASSES:
        if c.name not in bodies:
            problems.append(f"anomaly class '{c.name}' is in CLASSES but has no section '### {c.name}' under "
                            f"'## Anomaly classes' in {DOC}")
            continue
        d = _normal(c.definition.split("\n\n")[0]).removeprefix(f"{c.name}: ")
        if d not in bodies[c.name] and d[:1].upper() + d[1:] not in bodies[c.name]:
            problems.append(f"anomaly class '{c.name}': its section in {DOC} lacks the definition in "
                            f"harness/checker/anomaly/{c.name}.py: {d!r}")
    for title in sorted(bodies.keys() - {c.name for c in CLASSES}):
        problems.append(f"anomaly class '{title}' has a section in {DOC} but is missing from CLASSES")
    return problems


# ------------------------------------------------------------------ the tests

@pytest.fixture(scope="module")
def doc() -> str:
    return (ROOT / DOC).read_text()


def test_the_contents_table_lists_every_file_as_required_or_optional(doc):
    problems = files_problems(doc)
    assert not problems, "\n".join(problems)


def test_every_parquet_file_has_the_codes_columns_types_and_nullability(doc):
    problems = parquet_problems(doc)
    assert not problems, "\n".join(problems)


def test_the_run_json_keys_are_run_configs(doc):
    problems = run_json_problems(doc)
    assert not problems, "\n".join(problems)


def test_the_event_types_are_the_event_models(doc):
    problems = events_problems(doc, (ROOT / RUN_DIRECTORY).read_text())
    assert not problems, "\n".join(problems)


def test_every_anomaly_class_has_a_section_with_its_definition(doc):
    problems = anomaly_problems(doc)
    assert not problems, "\n".join(problems)


def _replace_line(text: str, starts: str, by: str | None) -> str:
    """``text`` with its one line starting with ``starts`` replaced (None: removed)."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if line.startswith(starts)]
    assert len(hits) == 1, f"the plant needs one line starting {starts!r}, found {len(hits)}"
    lines[hits[0]:hits[0] + 1] = [] if by is None else [by]
    return "\n".join(lines)


PLANTS = {
    "a column removed": (
        parquet_problems, "| `seq` | int64 | no | this producer's send sequence", None,
        "produced.parquet columns: 'seq' is in the code (contract.SCHEMAS['produced.parquet']) but missing from "
        "docs/history-contract.md"),
    "a column of another type": (
        parquet_problems, "| `offset` | int64 | no | the committed offset",
        "| `offset` | int32 | no | the committed offset |",
        "offsets.parquet columns: 'offset' has type int32, null no in docs/history-contract.md but type int64, "
        "null no in the code (contract.OPTIONAL_FILES['offsets.parquet'])"),
    "an optional column removed": (
        parquet_problems, "| `generation` | int64 | yes |", None,
        "consumed.parquet optional columns: 'generation' is in the code "
        "(contract.OPTIONAL_COLUMNS['consumed.parquet']) but missing from docs/history-contract.md"),
    "a nullable column said not null": (
        parquet_problems, "| `delivery_count` | int32 | yes |", "| `delivery_count` | int32 | no | x |",
        "deliveries.parquet columns: 'delivery_count' has type int32, null no in docs/history-contract.md but "
        "type int32, null yes in the code"),
    "a run.json key the code lacks": (
        run_json_problems, "| `topics[].partitions` |", "| `topics[].partition_count` | integer | yes | no | x |",
        "run.json: 'topics[].partition_count' is in docs/history-contract.md but missing from the code "
        "(contract.RunConfig)"),
    "a run.json key said required": (
        run_json_problems, "| `faults[].kind` |", "| `faults[].kind` | string | no | no | x |",
        "run.json: 'faults[].kind' has type string, null no, required no in docs/history-contract.md but type "
        "string, null no, required yes in the code"),
    "an event type removed": (
        events_problems, "| `commit_refused` |", None,
        "events.jsonl types: 'commit_refused' is in the code (harness/history/events.py Event) but missing from "
        "docs/history-contract.md"),
    "an anomaly section renamed": (
        anomaly_problems, "### `phantom`", "### `phantoms`",
        "anomaly class 'phantom' is in CLASSES but has no section '### phantom'"),
    "an anomaly definition changed": (
        anomaly_problems, "Distinct values present at two or more offsets", "Distinct values at two offsets.",
        "anomaly class 'duplicate': its section in docs/history-contract.md lacks the definition"),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_planted_mismatch_is_reported_with_the_side_it_is_missing_from(doc, plant):
    check, starts, by, expected = PLANTS[plant]
    planted = _replace_line(doc, starts, by)
    args = (planted, (ROOT / RUN_DIRECTORY).read_text()) if check is events_problems else (planted,)
    problems = check(*args)
    assert any(expected in p for p in problems), "\n".join(problems) or "no problem reported"


def test_a_missing_table_is_reported():
    assert files_problems("# nothing here\n") == [f"{DOC}: no table 'file | presence | what it holds'",
                                                   *(f"Contents: '{n}' is in the code (contract.SCHEMAS, RUN_JSON, "
                                                     f"OPTIONAL_FILES, EVENTS) but missing from {DOC}"
                                                     for n in sorted([*contract.SCHEMAS, contract.RUN_JSON,
                                                                      *contract.OPTIONAL_FILES, contract.EVENTS]))]
