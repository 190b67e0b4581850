"""Run-directory I/O: the history contract (v1) as schemas, validation, readers and writers.

The reconciler reads only what the contract names, so histories recorded elsewhere
can be checked too. Validation is done on Parquet metadata (no data is loaded) and
names the file, the column and what was expected, before any work starts.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PRODUCED = "produced.parquet"
CONSUMED = "consumed.parquet"
REPLICAS = "replicas.parquet"
RUN_JSON = "run.json"
VERDICT_JSON = "verdict.json"
EVENTS = "events.jsonl"

# Required columns: name -> (arrow type, nullable)
PRODUCED_SCHEMA = pa.schema([
    pa.field("value", pa.string(), False),
    pa.field("producer", pa.string(), False),
    pa.field("seq", pa.int64(), False),
    pa.field("topic", pa.string(), False),
    pa.field("partition", pa.int32(), False),
    pa.field("acks", pa.string(), False),
    pa.field("status", pa.string(), False),
    pa.field("offset", pa.int64(), True),
    pa.field("send_ts_ms", pa.int64(), False),
    pa.field("ack_ts_ms", pa.int64(), True),
    pa.field("error", pa.string(), True),
])
CONSUMED_SCHEMA = pa.schema([
    pa.field("consumer", pa.string(), False),
    pa.field("seq", pa.int64(), False),
    pa.field("topic", pa.string(), False),
    pa.field("partition", pa.int32(), False),
    pa.field("offset", pa.int64(), False),
    pa.field("value", pa.string(), False),
    pa.field("poll_ts_ms", pa.int64(), False),
    pa.field("hw", pa.int64(), True),
    pa.field("phase", pa.string(), False),
])
REPLICAS_SCHEMA = pa.schema([
    pa.field("broker", pa.int32(), False),
    pa.field("topic", pa.string(), False),
    pa.field("partition", pa.int32(), False),
    pa.field("offset", pa.int64(), False),
    pa.field("value", pa.string(), False),
])
SCHEMAS = {PRODUCED: PRODUCED_SCHEMA, CONSUMED: CONSUMED_SCHEMA, REPLICAS: REPLICAS_SCHEMA}
STATUSES = ("ok", "fail", "info")
ACKS = ("0", "1", "all")
PHASES = ("live", "final")


class HistoryError(ValueError):
    """A run directory that breaks the contract; the message names the file and column."""


def _type_ok(actual: pa.DataType, expected: pa.DataType) -> bool:
    if pa.types.is_integer(expected):
        return pa.types.is_integer(actual)  # any integer width is read and widened
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual) or (
            pa.types.is_dictionary(actual) and pa.types.is_string(actual.value_type))
    return actual.equals(expected)


def _type_name(t: pa.DataType) -> str:
    return "integer" if pa.types.is_integer(t) else str(t)


@dataclass(frozen=True)
class RunDir:
    """A validated run directory."""

    path: Path
    rows: dict[str, int]
    run: dict

    @property
    def run_id(self) -> str:
        return str(self.run.get("run_id") or self.path.name)


def validate(path: Path) -> RunDir:
    """Check a run directory against the contract without loading data; raise HistoryError."""
    path = Path(path)
    if not path.is_dir():
        raise HistoryError(f"{path}: not a directory")
    rows = {}
    for name, schema in SCHEMAS.items():
        f = path / name
        if not f.exists():
            raise HistoryError(f"{f}: missing (a run directory needs {', '.join(SCHEMAS)} and {RUN_JSON})")
        try:
            meta = pq.ParquetFile(f)
        except Exception as e:  # corrupt or not Parquet
            raise HistoryError(f"{f}: not a readable Parquet file ({e})") from e
        actual = meta.schema_arrow
        for field in schema:
            idx = actual.get_field_index(field.name)
            if idx < 0:
                raise HistoryError(f"{f}: missing column '{field.name}' (expected {_type_name(field.type)})")
            got = actual.field(idx).type
            if not _type_ok(got, field.type):
                raise HistoryError(f"{f}: column '{field.name}' has type {got}, expected {_type_name(field.type)}")
        rows[name] = meta.metadata.num_rows
    if rows[PRODUCED] == 0:
        raise HistoryError(f"{path / PRODUCED}: empty history (no rows)")
    run_file = path / RUN_JSON
    if not run_file.exists():
        raise HistoryError(f"{run_file}: missing (the configuration the run was made under; {{}} if unknown)")
    try:
        run = json.loads(run_file.read_text())
    except json.JSONDecodeError as e:
        raise HistoryError(f"{run_file}: not valid JSON ({e})") from e
    if not isinstance(run, dict):
        raise HistoryError(f"{run_file}: must hold a JSON object")
    return RunDir(path, rows, run)


def read_events(run_dir: Path) -> list[dict]:
    """events.jsonl of a run directory, one dict per line; [] when there is none. A line cut short
    (a run killed while writing it) is skipped: every other line still tells what happened."""
    f = Path(run_dir) / EVENTS
    if not f.exists():
        return []
    out = []
    for line in f.read_text().splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def find_run_dirs(paths: list[Path]) -> list[Path]:
    """Each path is a run directory, or a parent holding run directories at any depth."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if (p / PRODUCED).exists() or not p.is_dir():
            out.append(p)
            continue
        found = sorted({f.parent for f in p.rglob(PRODUCED)})
        if not found:
            raise HistoryError(f"{p}: no run directory (no {PRODUCED}) in or below it")
        out.extend(found)
    return out


def write_json_atomic(path: Path, data: dict) -> None:
    """Write JSON so that readers see the old file or the new one, never half of one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, sort_keys=False, default=str)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(path: Path, rows: list[dict] | dict[str, list], schema: pa.Schema) -> None:
    """Write rows (a list of dicts or a dict of columns) with the contract's schema, atomically."""
    table = pa.Table.from_pylist(rows, schema=schema) if isinstance(rows, list) else pa.table(rows, schema=schema)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
