"""The frames every anomaly function reads, built once per check.

Every run of one check is read into the same DataFrames with a ``run`` column, so each anomaly is
one Spark job over all of them. Two aggregations carry the weight and are cached:

- ``offs`` (per_offset): one row per (run, partition, offset, value) that a replica holds or a
  reader returned, with flags saying where it was seen;
- ``vals`` (per_value): one row per (run, partition, value) that was produced there or is in its
  final log, with what the producer said of it and where the final log holds it.

The rest are small: the values that turn up twice or from nowhere (``odd``), their final-log
records (``odd_final``), and the sends behind every finding that names a sender (``sends``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.checker.contract import bad_bits, raise_if_invalid
from harness.checker.excuses import topics_recreated
from harness.checker.keys import KEY, PartitionKey
from harness.checker.prepare_txns_groups import V2Inputs, prepare_txns_groups
from harness.checker.spark_api import F
from harness.history import (
    CONSUMED,
    DELIVERIES,
    OFFSETS,
    OPTIONAL_COLUMNS,
    OPTIONAL_FILES,
    PRODUCED,
    REPLICAS,
    SCHEMAS,
    SHARE_ACKS,
    TXNS,
    RunDir,
    read_events,
)
from harness.history.footers import topics_of

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

BROADCAST_ROWS = 200_000  # rows up to which a lookup's small side is broadcast instead of shuffled

# Row flags, OR-ed together by the aggregations (one int column instead of a column per flag).
SENT, OK_ACKED, INFO, FAIL, ACKS0, ACKS1 = 1, 2, 4, 8, 16, 32  # per_value
NOT_COMMITTED = 1 << 16  # per_value: sent in a transaction whose outcome is not "committed" (v2)
IN_FINAL, IN_LIVE, ABOVE_HW, IN_REPLICA = 1, 2, 4, 8  # per_offset

SEND_COLS = ["run", "value", "producer", "topic", "partition", "acks", "status", "offset", "send_ts_ms", "ack_ts_ms",
             "error"]
_SPARK_TYPES = {"string": "string", "int32": "int", "int64": "bigint"}  # Spark SQL type names


def topics_in(runs: list[RunDir]) -> list[str | None]:
    """Every topic of every contract file of ``runs``, sorted (None last), from the footers where
    they can tell: the checker numbers topics before its first shuffle (keys.PartitionKey)."""
    topics = set().union(*(topics_of(r.path / name) for r in runs for name in SCHEMAS))
    return sorted(topics, key=lambda t: (t is None, t or ""))


def has(bit: int, col: str = "flags") -> Column:
    return F.col(col).bitwiseAND(F.lit(bit)) != 0


def mask(flags: list[tuple[Column, int]]) -> Column:
    """The flag bits whose conditions hold, as one int."""
    out = F.lit(0)
    for cond, bit in flags:
        out = out + F.when(cond, F.lit(bit)).otherwise(F.lit(0))
    return out


def small(df: DataFrame, rows: int) -> DataFrame:
    """``df`` marked for broadcast when it has few rows (as it has unless the history is badly broken)."""
    return F.broadcast(df) if rows <= BROADCAST_ROWS else df


def in_final() -> Column:
    """A per_value row whose value is in the final log of its partition."""
    return F.col("first_offset").isNotNull()


def acked_missing() -> Column:
    """A per_value row of a committed value acknowledged (acks other than "0") but absent from the final
    log of its partition: what ``lost`` counts (v2 narrows it to committed values)."""
    return has(OK_ACKED) & ~has(NOT_COMMITTED) & ~in_final()


def uncommitted() -> Column:
    """A per_offset row read live that is not in the final log there, or was read at or above its hw."""
    return has(IN_LIVE) & (~has(IN_FINAL) | has(ABOVE_HW))


class Held:
    """DataFrames persisted for one check, released together however the check ends."""

    def __init__(self) -> None:
        self.frames: list[DataFrame] = []

    def __call__(self, df: DataFrame) -> DataFrame:
        self.frames.append(df.persist())
        return df

    def release(self) -> None:
        for df in self.frames:
            df.unpersist()
        self.frames.clear()


@contextmanager
def holding() -> Iterator[Held]:
    held = Held()
    try:
        yield held
    finally:
        held.release()


def _cast(name: str, type_: object) -> Column:
    return F.col(f"`{name}`").cast(_SPARK_TYPES[str(type_)]).alias(name)


# A path Hadoop writes back unchanged in ``_metadata.file_path`` (after "file:"): runs stored under
# such paths can share one scan and be told apart by it; any other run is scanned alone.
PLAIN_PATH = re.compile(r"[A-Za-z0-9/._=+,@-]+")


def read(spark: SparkSession, runs: list[RunDir], name: str) -> DataFrame | None:
    """One contract file of every run, cast to the contract's types, with a run column. The v2
    columns of a v1 file are null where a run lacks them; an optional file is read from the runs
    that have it (None when none has).

    Runs whose files have the same Parquet schema are read in one scan, the run told by the file
    each row came from: a check of many runs plans one scan per schema, not one per run."""
    groups: dict[object, list[int]] = {}
    for i, r in enumerate(runs):
        if name in r.rows:
            plain = PLAIN_PATH.fullmatch(str((r.path / name).resolve()))
            key = (r.schemas.get(name), tuple(sorted(r.optional))) if plain and r.schemas.get(name) else ("alone", i)
            groups.setdefault(key, []).append(i)
    frames = [_scan(spark, runs, name, idxs) for idxs in groups.values()]
    if not frames:
        return None
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _scan(spark: SparkSession, runs: list[RunDir], name: str, idxs: list[int]) -> DataFrame:
    """The file ``name`` of runs ``idxs`` (their files share a schema), in one scan."""
    schema = SCHEMAS.get(name) or OPTIONAL_FILES[name]
    paths = [str((runs[i].path / name).resolve()) for i in idxs]
    df = spark.read.parquet(*paths)
    if len(idxs) == 1:
        run = F.lit(idxs[0])
    else:
        by_path = F.create_map(*[x for i, p in zip(idxs, paths, strict=True) for x in (F.lit(f"file:{p}"), F.lit(i))])
        run = F.element_at(by_path, F.col("_metadata.file_path"))
    first = runs[idxs[0]]
    cols = [_cast(f.name, f.type) for f in schema]
    cols += [_cast(f.name, f.type) if first.has_column(name, f.name)
             else F.lit(None).cast(_SPARK_TYPES[str(f.type)]).alias(f.name)
             for f in OPTIONAL_COLUMNS.get(name, [])]
    return df.select(run.cast("int").alias("run"), *cols)


def per_offset(replicas: DataFrame, consumed: DataFrame, pk: PartitionKey) -> DataFrame:
    """One row per (run, partition, offset, value) held by a replica or returned to a reader, with
    flags: IN_FINAL, IN_LIVE, ABOVE_HW (read live at or above its hw), IN_REPLICA, and contract breaches.

    Clustered by (run, partition, offset), so every later grouping by those columns (divergence)
    needs no shuffle; the aggregation buffer is a number, so Spark hash-aggregates.
    """
    live = F.col("phase") == "live"
    above = live & F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))
    reps = replicas.select(*KEY, "offset", "value", F.lit(IN_REPLICA).alias("flags"))
    reads = consumed.select(*KEY, "offset", "value", mask([
        (F.col("phase") == "final", IN_FINAL), (live, IN_LIVE), (above, ABOVE_HW), *bad_bits(CONSUMED)]).alias("flags"))
    return (pk.encode(reps.unionByName(reads))
            .repartition(*pk.cols, "offset")
            .groupBy(*pk.cols, "offset", "value")
            .agg(F.bit_or("flags").alias("flags")))


def per_value(produced: DataFrame, offs: DataFrame, pk: PartitionKey) -> DataFrame:
    """One row per (run, partition, value) produced there or in its final log: what the producer said
    of it (flags) and where the final log holds it (first and last offset; null: absent).
    ``produced`` carries each send's transaction outcome (``with_outcome``).

    The final log comes from ``offs``, which holds each of its records once. Clustered by
    (run, value), so the questions that cross partitions (is a value in two partitions' logs? was
    it produced anywhere?) need no other shuffle.
    """
    status, acks = F.col("status"), F.col("acks")
    ok = (status == "ok") & (acks != "0")
    not_committed = F.col("txn").isNotNull() & ~F.col("outcome").eqNullSafe(F.lit("committed"))
    sends = pk.encode(produced.select(*KEY, "value", F.lit(None).cast("long").alias("offset"), mask([
        (F.lit(True), SENT), (ok, OK_ACKED), (status == "info", INFO), (status == "fail", FAIL),
        (acks == "0", ACKS0), (ok & (acks == "1"), ACKS1), (not_committed, NOT_COMMITTED),
        *bad_bits(PRODUCED)]).alias("flags")))
    finals = offs.filter(has(IN_FINAL)).select(*pk.cols, "value", "offset", F.lit(0).alias("flags"))
    return (sends.unionByName(finals).repartition("run", "value")
            .groupBy(*pk.cols, "value")
            .agg(F.bit_or("flags").alias("flags"),
                 F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset")))


def with_outcome(produced: DataFrame, txns: DataFrame | None, n_txns: int) -> DataFrame:
    """``produced`` with the outcome of each send's transaction (null outside transactions, and for
    every send of a run without txns.parquet)."""
    if txns is None:
        return produced.withColumn("outcome", F.lit(None).cast("string"))
    return produced.join(small(txns.select("run", "txn", "outcome"), n_txns), on=["run", "txn"], how="left")


def odd_values(vals: DataFrame) -> DataFrame:
    """(run, value, is_dup, is_phantom) of the values at two or more offsets of the final log (in one
    partition or in several), or in the final log but never produced."""
    per_run_value = (vals.groupBy("run", "value")
                     .agg(F.sum(in_final().cast("int")).alias("final_parts"),
                          F.max((in_final() & (F.col("first_offset") != F.col("last_offset"))).cast("int"))
                          .alias("dup_here"),
                          F.bit_or("flags").alias("flags")))
    is_dup = (F.col("final_parts") >= 2) | (F.col("dup_here") == 1)
    is_phantom = (F.col("final_parts") >= 1) & ~has(SENT)
    return (per_run_value.filter(is_dup | is_phantom)
            .select("run", "value", is_dup.alias("is_dup"), is_phantom.alias("is_phantom")))


def targets(vals: DataFrame, odd: DataFrame, pk: PartitionKey) -> DataFrame:
    """The values whose sends a finding names, with what explains them (``explains``): acknowledged
    writes absent from the final log ("lost"), indeterminate or failed writes present in it
    ("landed_info", "landed_fail") and duplicated values ("dup", every send)."""
    kinds = F.array(F.when(acked_missing(), F.lit("lost")),
                    F.when(has(INFO) & in_final(), F.lit("landed_info")),
                    F.when(has(FAIL) & in_final(), F.lit("landed_fail")))
    per_partition = pk.decode(vals.select(*pk.cols, "value", "first_offset", F.explode(kinds).alias("kind"))
                              .filter(F.col("kind").isNotNull()))
    dups = odd.filter("is_dup").select("run", "value", F.lit("dup").alias("kind"),
                                       F.lit(None).cast("string").alias("topic"),
                                       F.lit(None).cast("int").alias("partition"),
                                       F.lit(None).cast("long").alias("first_offset"))
    return (per_partition.select("run", "value", "kind", "topic", "partition", "first_offset").unionByName(dups)
            .withColumnsRenamed({"topic": "t_topic", "partition": "t_partition"}))


def explains() -> Column:
    """Whether a send explains its target row: "dup" takes every send of the value, the others only
    the sends to the target's partition with the status that makes the finding."""
    status, kind = F.col("status"), F.col("kind")
    here = F.col("topic").eqNullSafe(F.col("t_topic")) & F.col("partition").eqNullSafe(F.col("t_partition"))
    return ((kind == "dup")
            | (here & (((kind == "lost") & (status == "ok") & (F.col("acks") != "0"))
                       | ((kind == "landed_info") & (status == "info"))
                       | ((kind == "landed_fail") & (status == "fail")))))


@dataclass
class Inputs:
    """The prepared frames (see the module's docstring) and the per-run facts the passes found."""

    pk: PartitionKey
    produced: DataFrame
    live: DataFrame  # consumed.parquet's rows of phase "live"
    offs: DataFrame
    vals: DataFrame
    odd_final: DataFrame
    sends: DataFrame
    final_rows: dict[int, int]
    uncommitted_rows: int
    v2: V2Inputs
    log_starts: DataFrame | None = None  # (run, topic, partition, log_start) of partitions whose log start moved
    # (run, topic, deleted_ms, created_ms) of topics an operator deleted and created again: the last such
    # recreation per topic, created_ms NEVER where Kafka did not finish it (recreate_topic)
    recreations: DataFrame | None = None


LOG_START_SCHEMA = "`run` INT, `topic` STRING, `partition` INT, `log_start` BIGINT"


def log_starts_frame(spark: SparkSession, runs: list[RunDir]) -> DataFrame | None:
    """run.json's log start offsets after the final read (``topics[].log_start_offsets``), one row per
    partition whose log no longer starts at 0; None when no run's has moved."""
    rows = [(i, t.name, int(p), o) for i, r in enumerate(runs) for t in r.config.topics or []
            for p, o in t.log_start_offsets.items() if o > 0]
    return spark.createDataFrame(rows, LOG_START_SCHEMA) if rows else None


RECREATION_SCHEMA = "`run` INT, `topic` STRING, `deleted_ms` BIGINT, `created_ms` BIGINT"
NEVER = 1 << 62  # a recreation's created_ms where the new topic never served: every write before it was deleted


def recreations_frame(spark: SparkSession, runs: list[RunDir]) -> DataFrame | None:
    """Each run's last recreation of each topic an operator deleted and created again (the fault's
    events); None when no run has one."""
    rows = []
    for i, r in enumerate(runs):
        for topic, done in topics_recreated(read_events(r.path)).items():
            last = done[-1]
            rows.append((i, topic, last.deleted_ms, last.created_ms if last.created_ms is not None else NEVER))
    return spark.createDataFrame(rows, RECREATION_SCHEMA) if rows else None


def _run_flags(df: DataFrame, extra: dict[str, Column]) -> list[dict]:
    """Each run's OR of row flags, with ``extra`` sums, in one pass over a cached aggregation."""
    aggs = [F.bit_or("flags").alias("f"), *(F.sum(c.cast("long")).alias(n) for n, c in extra.items())]
    return [r.asDict() for r in df.groupBy("run").agg(*aggs).collect()]


def prepare(spark: SparkSession, runs: list[RunDir], hold: Held) -> Inputs:
    """Read ``runs``, build and cache the shared frames, and raise HistoryError on a contract breach
    before any finding is computed."""
    pk = PartitionKey(topics_in(runs))
    produced, consumed, replicas, txns, offsets, deliveries, share_acks = (
        read(spark, runs, n) for n in (PRODUCED, CONSUMED, REPLICAS, TXNS, OFFSETS, DELIVERIES, SHARE_ACKS))
    offs = hold(per_offset(replicas, consumed, pk))
    offs_stats = _run_flags(offs, {"final_rows": has(IN_FINAL), "unc": uncommitted()})
    vals = hold(per_value(with_outcome(produced, txns, sum(r.rows.get(TXNS, 0) for r in runs)), offs, pk))
    # The targets of the send lookup (see targets), counted to choose how the lookup joins.
    landed = (has(INFO) | has(FAIL)) & in_final()
    vals_stats = _run_flags(vals, {"targets": (acked_missing() | landed).cast("long")
                                   + (has(INFO) & has(FAIL) & in_final()).cast("long")})
    flags = {r["run"]: {CONSUMED: r["f"]} for r in offs_stats}
    for r in vals_stats:
        flags.setdefault(r["run"], {})[PRODUCED] = r["f"]
    final_rows = dict.fromkeys(range(len(runs)), 0) | {r["run"]: r["final_rows"] or 0 for r in offs_stats}
    raise_if_invalid(runs, {PRODUCED: produced, CONSUMED: consumed}, flags, final_rows)
    v2 = prepare_txns_groups(spark, runs, produced, consumed, txns, offsets,
                    offs.filter(has(IN_FINAL)).select(*pk.cols, "offset", "value"), deliveries, share_acks)
    hold(v2.polls)

    odd = hold(odd_values(vals))
    n_odd, n_dup = odd.agg(F.count(F.lit(1)), F.sum(F.col("is_dup").cast("long"))).first()
    odd_final = hold(pk.decode(offs.filter(has(IN_FINAL)).select(*pk.cols, "offset", "value")
                               .join(small(odd, n_odd), on=["run", "value"], how="inner")))
    n_targets = sum(r["targets"] or 0 for r in vals_stats) + (n_dup or 0)
    sends = hold(produced.select(*SEND_COLS)
                 .join(small(targets(vals, odd, pk), n_targets), on=["run", "value"], how="inner")
                 .filter(explains()))
    return Inputs(pk, produced, consumed.filter(F.col("phase") == "live"), offs, vals, odd_final, sends, final_rows,
                  sum(r["unc"] or 0 for r in offs_stats), v2, log_starts_frame(spark, runs),
                  recreations_frame(spark, runs))
