"""Run-directory I/O: the history contract (v1 and v2) as schemas, validation, readers and writers.

The reconciler reads only what the contract names, so histories recorded elsewhere
can be checked too. Validation is done on Parquet metadata (no data is loaded) and
names the file, the column and what was expected, before any work starts.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.history import events

PRODUCED = "produced.parquet"
CONSUMED = "consumed.parquet"
REPLICAS = "replicas.parquet"
RUN_JSON = "run.json"
VERDICT_JSON = "verdict.json"
EVENTS = events.EVENTS
TXNS = "txns.parquet"  # v2: one row per transaction
OFFSETS = "offsets.parquet"  # v2: committed group offsets
DELIVERIES = "deliveries.parquet"  # share groups: every record a member was given (docs/share-groups.md)
SHARE_ACKS = "share_acks.parquet"  # share groups: every acknowledgement a member sent, with its outcome

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
# offsets.parquet's phases: a group's commits as its members saw them take effect ("live"), its
# committed offset read after healing ("final"), and each commit its coordinator wrote to
# __consumer_offsets, read from the log after healing, in the order written ("written").
OFFSET_PHASES = ("live", "final", "written")

# v2 only adds: optional columns of the v1 files (null when absent) and two optional files.
OPTIONAL_COLUMNS = {
    PRODUCED: pa.schema([pa.field("txn", pa.string(), True), pa.field("source", pa.string(), True)]),
    CONSUMED: pa.schema([pa.field("isolation", pa.string(), True), pa.field("group", pa.string(), True),
                         pa.field("generation", pa.int64(), True)]),
    # a "written" row's offset in __consumer_offsets: the order the coordinator wrote the commits in
    OFFSETS: pa.schema([pa.field("log_offset", pa.int64(), True)]),
}
TXNS_SCHEMA = pa.schema([
    pa.field("txn", pa.string(), False),
    pa.field("producer", pa.string(), False),
    pa.field("outcome", pa.string(), False),
    pa.field("begin_ts_ms", pa.int64(), False),
    pa.field("commit_ts_ms", pa.int64(), True),
    pa.field("end_ts_ms", pa.int64(), True),
])
OFFSETS_SCHEMA = pa.schema([
    pa.field("group", pa.string(), False),
    pa.field("topic", pa.string(), False),
    pa.field("partition", pa.int32(), False),
    pa.field("offset", pa.int64(), False),
    pa.field("ts_ms", pa.int64(), False),
    pa.field("phase", pa.string(), False),
])
# What a share group's delivery and acknowledgement rows both begin with: whose, and which record.
SHARE_RECORD = [
    pa.field("group", pa.string(), False),
    pa.field("member", pa.string(), False),
    pa.field("topic", pa.string(), False),
    pa.field("partition", pa.int32(), False),
    pa.field("offset", pa.int64(), False),
    pa.field("value", pa.string(), False),
]
DELIVERIES_SCHEMA = pa.schema([
    *SHARE_RECORD,
    pa.field("delivery_count", pa.int32(), True),  # as the client reported it (null: it reported none)
    pa.field("ts_ms", pa.int64(), False),  # when poll returned it
])
SHARE_ACKS_SCHEMA = pa.schema([
    *SHARE_RECORD,
    pa.field("type", pa.string(), False),  # accept | release | reject
    pa.field("outcome", pa.string(), False),  # ok | error | unknown
    pa.field("error", pa.string(), True),
    pa.field("ts_ms", pa.int64(), False),  # when the outcome was known (the commit returned)
])
ACK_TYPES = ("accept", "release", "reject")
ACK_OUTCOMES = ("ok", "error", "unknown")
OPTIONAL_FILES = {TXNS: TXNS_SCHEMA, OFFSETS: OFFSETS_SCHEMA, DELIVERIES: DELIVERIES_SCHEMA,
                  SHARE_ACKS: SHARE_ACKS_SCHEMA}
PRODUCED_V2_SCHEMA = pa.schema([*PRODUCED_SCHEMA, *OPTIONAL_COLUMNS[PRODUCED]])
CONSUMED_V2_SCHEMA = pa.schema([*CONSUMED_SCHEMA, *OPTIONAL_COLUMNS[CONSUMED]])
OFFSETS_WRITTEN_SCHEMA = pa.schema([*OFFSETS_SCHEMA, *OPTIONAL_COLUMNS[OFFSETS]])  # with the coordinator's order
OUTCOMES = ("committed", "aborted", "unknown")
ISOLATIONS = ("read_committed", "read_uncommitted")


class HistoryError(ValueError):
    """A run directory that breaks the contract; the message names the file and column."""


# ------------------------------------------------------------------ run.json

class ClientLibrary(BaseModel):
    """Which client library made a client, and its version (``{"name": "librdkafka", "version": "2.16.0"}``)."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str
    version: str = ""
    cannot_tell: list[str] = []  # what its clients do not report (harness/clients/registry.py's Library)


class _Shape(BaseModel):
    """A run.json object: the keys the checker reads have these shapes; any other key is free."""

    model_config = ConfigDict(extra="allow", strict=True)


class TopicConfig(_Shape):
    name: str
    partitions: int | None = Field(None, ge=1)
    replication_factor: int | None = Field(None, ge=1)
    config: dict[str, str] = Field(default_factory=dict)
    log_start_offsets: dict[str, int] = Field(default_factory=dict)  # partition -> log start after the final read


class ProducerConfig(_Shape):
    name: str
    topic: str | None = None
    acks: Literal["0", "1", "all"] | None = None
    idempotence: bool | None = None
    transactional: bool | None = None
    client: ClientLibrary | None = None


class CopierConfig(_Shape):
    producer: str
    group: str
    input_topics: list[str]
    output_topics: list[str]
    client: ClientLibrary | None = None


class GroupConfig(_Shape):
    name: str
    id: str | None = None  # its group.id on the cluster, where that is not its name (a run on a kept cluster)
    commit: Literal["auto", "sync", "async"] | None = None  # null or absent: sync
    topics: list[str] = Field(default_factory=list)
    client: ClientLibrary | None = None


class ShareGroupConfig(_Shape):
    name: str
    id: str | None = None  # its group.id on the cluster, where that is not its name (a run on a kept cluster)
    topics: list[str] = Field(default_factory=list)
    start_offsets: dict[str, int] = Field(default_factory=dict)  # "topic:partition" -> where it started
    final_start_offsets: dict[str, int] = Field(default_factory=dict)  # its share-partition start after healing
    delivery_count_limit: int = 5
    isolation: str = "read_uncommitted"
    acknowledge: str | None = None  # how its members acknowledge (the scenario's table; the report shows it)
    lock_ms: int | None = None
    crash_ratio: float = 0.0


class WorkloadSpan(_Shape):
    start_ms: int | None = None  # the producers started
    end_ms: int | None = None  # the producers stopped


class FaultConfig(_Shape):
    kind: str
    topic: str | None = None  # an operator's action: the topic it acted on
    config: str | None = None  # alter_config: the topic config it changed
    value: str | None = None  # alter_config: the value it set


class RunConfig(_Shape):
    """The keys of run.json the checker judges a run by (docs/history-contract.md, "run.json"). Every key
    is optional; one present in another shape is bad input."""

    kafka_version: str | None = None
    mode: str | None = None
    broker_config: dict[str, str] = Field(default_factory=dict)
    leader_epochs: bool | None = None
    eligible_leader_replicas: bool | None = None
    features: dict[str, int] = Field(default_factory=dict)
    topics: list[TopicConfig] | None = None
    producers: list[ProducerConfig] = Field(default_factory=list)
    copiers: list[CopierConfig] = Field(default_factory=list)
    groups: list[GroupConfig] = Field(default_factory=list)
    faults: list[FaultConfig] = Field(default_factory=list)
    share_groups: list[ShareGroupConfig] = Field(default_factory=list)
    client: ClientLibrary | None = None  # the client library of every table that names none
    workload: WorkloadSpan = Field(default_factory=WorkloadSpan)
    topic: TopicConfig | None = None  # one topic, as run.json held it before ``topics``
    # What the report shows of the run beside the verdict: where it came from and how to repeat it.
    run_id: str | None = None
    scenario: str | None = None
    description: str | None = None
    brokers: int | None = None
    racks: list[str] | None = None
    seed: int | None = None
    reproduce: str | None = None
    images: dict[str, str] = Field(default_factory=dict)
    load: list[dict[str, object]] = Field(default_factory=list)
    cluster: dict[str, object] = Field(default_factory=dict)
    clients: list[ClientLibrary] = Field(default_factory=list)  # every client library a table named
    scenario_config: dict[str, object] | None = None  # the scenario as run (a hunt reads its draws back)

    def libraries(self) -> list[ClientLibrary]:
        """The client libraries the run used (``client`` alone in a run.json from before ``clients``)."""
        return self.clients or ([self.client] if self.client else [])

    def topic_list(self) -> list[TopicConfig]:
        """The run's topics, its own first (``topic`` alone in a run.json from before ``topics``)."""
        return self.topics or ([self.topic] if self.topic is not None else [])


def check_run_config(run_file: Path, run: object) -> RunConfig:
    """``run`` as read from (or about to be written to) ``run_file``, typed, if its keys have the
    contract's shapes; else HistoryError naming the file, the key and the shape it must have."""
    if not isinstance(run, dict):
        raise HistoryError(f"{run_file}: must hold a JSON object")
    try:
        return RunConfig.model_validate(run)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err["loc"] if not str(x).startswith(("function-", "literal[")))
        raise HistoryError(f"{run_file}: key '{key}': {err['msg']} (got {json.dumps(err['input'], default=str)[:80]})"
                           ) from e


def read_run_config(d: Path) -> RunConfig:
    """A run directory's run.json, typed (an empty one when the run wrote none); HistoryError names
    the key whose shape breaks the contract."""
    run_file = d / RUN_JSON
    if not run_file.exists():
        return RunConfig()
    try:
        return check_run_config(run_file, json.loads(run_file.read_bytes().decode("utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HistoryError(f"{run_file}: not valid JSON ({e})") from e


CHECKPOINTS_JSON = "checkpoints.json"


class BrokerCheckpoints(BaseModel):
    """One broker's checkpoint files for the run's topic, read after healing: per partition
    ("topic-partition") its high watermark, recovery point and log start, and its leader-epoch
    cache as (epoch, start offset) pairs."""

    model_config = ConfigDict(extra="allow")
    high_watermark: dict[str, int] = Field(default_factory=dict)
    recovery_point: dict[str, int] = Field(default_factory=dict)
    log_start: dict[str, int] = Field(default_factory=dict)
    leader_epochs: dict[str, list[tuple[int, int]]] = Field(default_factory=dict)


def read_checkpoints(d: Path) -> dict[int, BrokerCheckpoints]:
    """``checkpoints.json`` per broker id, typed; {} when the run wrote none."""
    f = d / CHECKPOINTS_JSON
    if not f.exists():
        return {}
    try:
        return {int(b): BrokerCheckpoints.model_validate(v) for b, v in json.loads(f.read_text()).items()}
    except (ValueError, ValidationError) as e:
        raise HistoryError(f"{f}: {e}") from e


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
    """A validated run directory: rows per file (the optional v2 files only when present), the v2
    columns its files have, and run.json, as read (``run``) and typed (``config``: what the checker
    judges by)."""

    path: Path
    rows: dict[str, int]
    run: dict
    config: RunConfig = dataclasses.field(default_factory=RunConfig)
    optional: frozenset[str] = frozenset()  # "file:column" of each v2 column present
    # Each file's own Parquet schema: runs whose files agree are read by Spark in one scan.
    schemas: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)

    @property
    def run_id(self) -> str:
        return str(self.run.get("run_id") or self.path.name)

    def has_column(self, name: str, column: str) -> bool:
        return f"{name}:{column}" in self.optional

    @property
    def v2(self) -> bool:
        """Whether any v2 column or file is present (run.json then says "contract": "v2")."""
        return bool(self.optional) or any(n in self.rows for n in OPTIONAL_FILES)


def _check_columns(f: Path, schema: pa.Schema, required: bool) -> list[str]:
    """The columns of ``schema`` that ``f`` has, each with the contract's type; raise HistoryError."""
    try:
        actual = pq.ParquetFile(f).schema_arrow
    except Exception as e:  # corrupt or not Parquet
        raise HistoryError(f"{f}: not a readable Parquet file ({e})") from e
    present = []
    for field in schema:
        idx = actual.get_field_index(field.name)
        if idx < 0:
            if required:
                raise HistoryError(f"{f}: missing column '{field.name}' (expected {_type_name(field.type)})")
            continue
        got = actual.field(idx).type
        if not _type_ok(got, field.type) and not pa.types.is_null(got):
            raise HistoryError(f"{f}: column '{field.name}' has type {got}, expected {_type_name(field.type)}")
        present.append(field.name)
    return present


def validate(path: Path) -> RunDir:
    """Check a run directory against the contract without loading data; raise HistoryError."""
    path = Path(path)
    if not path.exists():
        raise HistoryError(f"{path}: no such run directory")
    if not path.is_dir():
        raise HistoryError(f"{path}: not a directory (allowed: a run directory, or a directory holding run "
                           "directories)")
    rows = {}
    schemas: dict[str, str] = {}
    optional: set[str] = set()
    for name, schema in SCHEMAS.items():
        f = path / name
        if not f.exists():
            raise HistoryError(f"{f}: missing (a run directory needs {', '.join(SCHEMAS)} and {RUN_JSON})")
        _check_columns(f, schema, required=True)
        if name in OPTIONAL_COLUMNS:
            optional |= {f"{name}:{c}" for c in _check_columns(f, OPTIONAL_COLUMNS[name], required=False)}
        rows[name], schemas[name] = _rows_and_schema(f)
    for name, schema in OPTIONAL_FILES.items():
        f = path / name
        if f.exists():
            _check_columns(f, schema, required=True)
            if name in OPTIONAL_COLUMNS:
                optional |= {f"{name}:{c}" for c in _check_columns(f, OPTIONAL_COLUMNS[name], required=False)}
            rows[name], schemas[name] = _rows_and_schema(f)
    if rows[PRODUCED] == 0:
        raise HistoryError(f"{path / PRODUCED}: empty history (no rows)")
    run_file = path / RUN_JSON
    if not run_file.exists():
        raise HistoryError(f"{run_file}: missing (the configuration the run was made under; {{}} if unknown)")
    try:
        run = json.loads(run_file.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HistoryError(f"{run_file}: not valid JSON ({e})") from e
    config = check_run_config(run_file, run)
    _agrees_with_the_data(path, config)
    read_events(path)  # every record valid before any work starts
    return RunDir(path, rows, run, config, frozenset(optional), schemas)


def _agrees_with_the_data(path: Path, config: RunConfig) -> None:
    """run.json's topics are the ones the history wrote to, and none holds a partition past the count
    run.json gives it: a topic the history wrote that run.json does not list would be judged by
    the brokers' settings, and a wrong name or count silently changes the verdict. HistoryError names
    the file, the key and what the data holds. The topics come from the Parquet footers where they
    can tell (footers.topics_of), so a big history is not read for it."""
    from harness.history.footers import max_partitions

    if not config.topics:
        return  # nothing listed: every topic is judged by the defaults, which the verdict says
    produced = path / PRODUCED
    held = max_partitions(produced)
    listed = {t.name: t for t in config.topics}
    unlisted = sorted(t for t in held if t is not None and t not in listed)
    if unlisted:
        raise HistoryError(f"{path / RUN_JSON}: topics: lists {sorted(listed)}, but {PRODUCED} holds writes to "
                           f"{unlisted} (a topic run.json does not list is judged by the brokers' settings: list it)")
    for i, t in enumerate(config.topics):
        top = held.get(t.name)
        if t.partitions is not None and top is not None and top >= t.partitions:
            raise HistoryError(f"{path / RUN_JSON}: topics.{i}.partitions: {t.partitions}, but {PRODUCED} holds "
                               f"writes to partition {top} of {t.name}")


def _rows_and_schema(f: Path) -> tuple[int, str]:
    pf = pq.ParquetFile(f)
    return pf.metadata.num_rows, str(pf.schema_arrow)


def read_events(run_dir: Path) -> list[events.Event]:
    """events.jsonl of a run directory, every record validated and typed (harness/history/events.py),
    in file order; [] when there is none. A line that breaks the record types raises HistoryError."""
    try:
        return events.read(Path(run_dir) / EVENTS)
    except events.EventError as e:
        raise HistoryError(str(e)) from e


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
