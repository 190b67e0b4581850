"""The reconciliation job on PySpark.

All runs given to one ``kchaos check`` are read into the same DataFrames with a
``run`` column, so each anomaly is one Spark job over every run at once. Only
aggregates and at most ``examples`` rows per anomaly and run reach the driver.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness.checker import cds, java
from harness.checker.promises import ANOMALIES
from harness.history import (
    ACKS,
    CONSUMED,
    PHASES,
    PRODUCED,
    REPLICAS,
    SCHEMAS,
    STATUSES,
    HistoryError,
    RunDir,
    footer_stats,
)

EXAMPLES = 10
BROADCAST_ROWS = 200_000  # anomaly rows up to which a join back to the history broadcasts them
BUCKET_MS = 1000  # unavailability is exact for thresholds of at least one bucket
CACHE_PLAIN_MAX = 1 << 30  # Parquet input up to which the cached aggregations stay uncompressed


def spark_session(master: str | None = None, jvm_options: str = "") -> SparkSession:
    """Embedded local[*] by default; a real cluster when a master URL is given.

    The driver runs on the bundled Java runtime (java) and uses the start-up cache when ``kchaos
    doctor --fix`` has built one (cds); ``jvm_options`` are added to the driver's, and replace the
    cache when given.
    """
    cores = os.cpu_count() or 2
    java.use()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only; also silences a start-up warning
    quiet = Path(__file__).with_name("log4j2-spark.properties")
    b = (
        SparkSession.builder.appName("kchaos-check")
        .master(master or "local[*]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(max(4, cores * 2)))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.enableVectorizedReader", "true")
        .config("spark.driver.memory", os.environ.get("KCHAOS_SPARK_DRIVER_MEMORY", "4g"))
        # The parallel collector: a batch job wants throughput, not G1's short pauses (about 10% here).
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={quiet} -XX:+UseParallelGC {jvm_options or cds.java_options()}")
    )
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


_SPARK_TYPES = {"string": T.StringType(), "int32": T.IntegerType(), "int64": T.LongType()}


def _read(spark: SparkSession, runs: list[RunDir], name: str) -> DataFrame:
    """Read one contract file of every run, cast to the contract's types, with a run column."""
    schema = SCHEMAS[name]
    frames = []
    for i, r in enumerate(runs):
        df = spark.read.parquet(str((r.path / name).resolve()))
        cols = [F.col(f.name).cast(_SPARK_TYPES[str(f.type)]).alias(f.name) for f in schema]
        frames.append(df.select(F.lit(i).alias("run"), *cols))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _rows(df: DataFrame) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


@dataclass
class AnomalyResult:
    counts: dict[tuple[int, str], int] = field(default_factory=dict)  # (run, attribution) -> count
    examples: dict[int, list[dict]] = field(default_factory=dict)


@dataclass
class JobResult:
    anomalies: dict[str, AnomalyResult]
    indeterminate_landed: AnomalyResult
    failed_but_present: AnomalyResult
    acks0_missing: dict[int, int]
    final_rows: dict[int, int]
    buckets: dict[int, list[dict]]  # per run: per (topic, partition, second) ack stats
    span: dict[int, tuple[int | None, int | None]]  # per run: first and last send_ts_ms
    producers: dict[int, dict[str, dict[str, list[str]]]]  # per run: producer -> topics and acks it used


def _finding(kind: str, df: DataFrame, attr: str, sort: str) -> DataFrame:
    """One anomaly frame in the common shape: kind, run, attribution, sort key, JSON payload."""
    payload = [c for c in df.columns if c != "run"]
    return df.select(
        F.lit(kind).alias("kind"), "run", F.col(attr).cast("string").alias("attr"),
        F.col(sort).cast("long").alias("sort"), F.to_json(F.struct(*payload)).alias("payload"),
    )


def _bad_enum(c: str, values: tuple[str, ...]) -> F.Column:
    return F.col(c).isNull() | ~F.col(c).isin(*values)


def contract_checks() -> dict[str, dict[str, tuple[F.Column, str]]]:
    """Values the schema cannot express, per file: column -> (row breaks the contract, what is allowed).

    Each is a flag bit OR-ed by the main aggregations, so a clean history pays no pass of its own;
    only a breach is counted, for the message.
    """
    return {
        PRODUCED: {
            "status": (_bad_enum("status", STATUSES), ", ".join(STATUSES)),
            "acks": (_bad_enum("acks", ACKS), ", ".join(ACKS)),
            "value": (F.col("value").isNull(), "non-null string"),
            "seq": (F.col("seq").isNull(), "non-null integer"),
            "partition": (F.col("partition").isNull(), "non-null integer"),
        },
        CONSUMED: {
            "phase": (_bad_enum("phase", PHASES), ", ".join(PHASES)),
            "offset": (F.col("offset").isNull(), "non-null integer"),
            "value": (F.col("value").isNull(), "non-null string"),
            "seq": (F.col("seq").isNull(), "non-null integer"),
        },
    }


# Row flags, OR-ed together by the aggregations (one int column instead of a column per flag).
SENT, OK_ACKED, INFO, FAIL, ACKS0, ACKS1 = 1, 2, 4, 8, 16, 32  # per_value
IN_FINAL, IN_LIVE, ABOVE_HW = 1, 2, 4  # per_offset
BAD_SHIFT = {PRODUCED: 6, CONSUMED: 3}  # contract breaches take the bits above those


def has(bit: int, col: str = "flags") -> F.Column:
    return F.col(col).bitwiseAND(F.lit(bit)) != 0


def _mask(flags: list[tuple[F.Column, int]]) -> F.Column:
    out = F.lit(0)
    for cond, bit in flags:
        out = out + F.when(cond, F.lit(bit)).otherwise(F.lit(0))
    return out


def _bad_bits(name: str) -> list[tuple[F.Column, int]]:
    """One flag bit per contract check of file ``name``."""
    return [(cond, 1 << (BAD_SHIFT[name] + i)) for i, (cond, _) in enumerate(contract_checks()[name].values())]


def raise_if_invalid(runs: list[RunDir], frames: dict[str, DataFrame], flags: dict[int, dict[str, int]],
                     final_rows: dict[int, int]) -> None:
    """Name the file, column and allowed values of the first contract breach; a run needs a final read.

    ``flags`` holds each run's OR of row flags per file, so a clean history costs nothing here;
    only a breach is counted, for the message, with a pass over that file.
    """
    for i, r in enumerate(runs):
        for name, checks in contract_checks().items():
            for j, (col, (cond, allowed)) in enumerate(checks.items()):
                if flags.get(i, {}).get(name, 0) & (1 << (BAD_SHIFT[name] + j)):
                    n = frames[name].filter((F.col("run") == i) & cond).count()
                    raise HistoryError(f"{r.path / name}: column '{col}' has {n} rows outside the contract "
                                       f"(allowed: {allowed})")
        if not final_rows.get(i):
            raise HistoryError(f"{r.path / CONSUMED}: no rows with phase 'final' (the full read after healing "
                               "that every count is measured against)")


def input_bytes(runs: list[RunDir]) -> int:
    return sum((r.path / n).stat().st_size for r in runs for n in SCHEMAS)


def shuffle_partitions(runs: list[RunDir], parallelism: int) -> int:
    """About one shuffle partition per 32 MiB of input: tiny histories must not pay for 40 empty tasks."""
    return max(1, min(parallelism * 4, input_bytes(runs) // (32 << 20) + 1))


def compress_cache(runs: list[RunDir]) -> bool:
    """Whether the cached per-offset and per-value rows should be compressed.

    Uncompressed they take about 1.7 times the Parquet input in memory (780 MiB for a 10M-record
    history) and the check runs about 2 s faster at 10M; above CACHE_PLAIN_MAX of input that
    would crowd the default 4 GiB driver, so larger histories pay the compression instead.
    """
    return input_bytes(runs) > CACHE_PLAIN_MAX


KEY = ["run", "topic", "partition"]
PACK_TOPICS_MAX = 64  # topics up to which (topic, partition) travels as one long through the big shuffles
TP_SHIFT = 33  # tp = topic id << 33 | partition + 2^31 (2^32: a null partition)
NULL_PARTITION = 1 << 32
UNKNOWN_TID = 1 << 20  # a topic the table does not hold (a replica's or a final read's): UNKNOWN_TOPIC is set
UNKNOWN_TOPIC = 1 << 10  # per_offset flag, above the consumed contract bits
NO_KEY = 1 << 11  # per_offset flag: the row's (run, topic, partition, offset) does not fit the one-long key
KEY_OFFSET_BITS_MIN = 40  # offsets the one-long key must hold at least (2^40: about 10^12)
KEY_PARTITION_BITS = 12  # partitions it holds when it can (up to 4094, whatever the name scans saw)


class PartitionKey:
    """How per_offset and per_value name a partition: (run, tp), where tp packs the topic's number in
    ``topics`` and the partition into one long, or (run, topic, partition) when there are more than
    PACK_TOPICS_MAX topics (the number comes from a CASE over the names, one comparison per topic).

    Rows without the topic string are narrower: on a 10M-record history the per-offset aggregation
    went from 24 s to 20.6 s and the per-value one from 12.8 s to 10.4 s. A join with a topic table
    instead of the CASE costs most of that back. ``decode`` gives the names back on the rows found.
    """

    def __init__(self, topics: list[str | None], runs: int = 1, max_partition: int | None = None):
        self.topics = topics
        self.packed = len(topics) <= PACK_TOPICS_MAX
        self.cols = ["run", "tp"] if self.packed else list(KEY)
        # The one-long key of per_offset: run, topic number, partition + 1 (0: null) and offset in
        # bit fields sized for this check; None when they leave too few bits for the offset.
        self.bits: tuple[int, int, int] | None = None
        # Partitions get KEY_PARTITION_BITS when the offsets can spare them, so a replica of a
        # partition the name scans did not see seldom sends per_offset round again.
        if self.packed and max_partition is not None and max_partition >= 0:
            tb, rb = (len(topics) - 1).bit_length(), (runs - 1).bit_length()
            pb = max((max_partition + 1).bit_length(), min(KEY_PARTITION_BITS, 63 - rb - tb - KEY_OFFSET_BITS_MIN))
            ob = 63 - rb - tb - pb
            self.bits = (tb, pb, ob) if ob >= KEY_OFFSET_BITS_MIN else None
        self.offset_cols = ["k"] if self.bits else [*self.cols, "offset"]

    @staticmethod
    def _case(pairs: list[tuple[F.Column, F.Column]], other: F.Column) -> F.Column:
        out = None
        for cond, val in pairs:
            out = F.when(cond, val) if out is None else out.when(cond, val)
        return other if out is None else out.otherwise(other)

    def encode(self, df: DataFrame) -> DataFrame:
        """``df`` with its topic and partition columns replaced by tp (when packed)."""
        if not self.packed:
            return df
        t, p = F.col("topic"), F.col("partition")
        tid = self._case([(t.isNull() if name is None else t == name, F.lit(i))
                          for i, name in enumerate(self.topics)], F.lit(UNKNOWN_TID))
        code = F.when(p.isNull(), F.lit(NULL_PARTITION)).otherwise(p.cast("long") + F.lit(1 << 31))
        tp = (tid.cast("long") * F.lit(1 << TP_SHIFT) + code).alias("tp")
        return df.select(*[tp if c == "topic" else F.col(c) for c in df.columns if c != "partition"])

    def unknown(self) -> F.Column:
        """Rows whose topic has no number."""
        return (F.shiftright(F.col("tp"), TP_SHIFT) == UNKNOWN_TID) if self.packed else F.lit(False)

    def key(self) -> tuple[F.Column, F.Column]:
        """(k, whether the row fits it) from run, tp and offset: k = run | topic number | partition + 1
        | offset, in the bit fields of ``bits``, so per_offset shuffles and hashes one long where it
        would otherwise carry three columns (on a 10M-record history the aggregation went from
        19.2-19.7 s to 17.7-18.4 s). A row that does not fit (a partition above any the name scans
        saw, an offset out of range, a topic without a number) is flagged: per_offset then runs
        again without this key."""
        assert self.bits is not None
        tb, pb, ob = self.bits
        tid = F.shiftright(F.col("tp"), TP_SHIFT)
        code = F.col("tp").bitwiseAND(F.lit((1 << TP_SHIFT) - 1))
        pcode = F.when(code == NULL_PARTITION, F.lit(0)).otherwise(code - F.lit((1 << 31) - 1))
        off = F.col("offset")
        fits = ((tid < F.lit(len(self.topics))) & (pcode < F.lit(1 << pb)) & (pcode >= 0)
                & off.isNotNull() & (off >= 0) & (off < F.lit(1 << ob)))
        k = F.shiftleft(F.shiftleft(F.col("run").cast("long"), tb).bitwiseOR(tid), pb).bitwiseOR(pcode)
        return F.shiftleft(k, ob).bitwiseOR(off), fits

    def unkeyed(self, offs: DataFrame) -> DataFrame:
        """per_offset's rows with run, tp and offset again, computed from k as they are read (so the
        cache holds k alone: with the three columns cached too, the gain of the key was gone)."""
        if self.bits is None:
            return offs
        tb, pb, ob = self.bits
        k = F.col("k")
        pcode = F.shiftright(k, ob).bitwiseAND(F.lit((1 << pb) - 1))
        tid = F.shiftright(k, ob + pb).bitwiseAND(F.lit((1 << tb) - 1))
        code = F.when(pcode == 0, F.lit(NULL_PARTITION)).otherwise(pcode + F.lit((1 << 31) - 1))
        return offs.select("k", F.shiftright(k, ob + pb + tb).cast("int").alias("run"),
                           (F.shiftleft(tid, TP_SHIFT) + code).alias("tp"),
                           k.bitwiseAND(F.lit((1 << ob) - 1)).alias("offset"), "value", "flags")

    def decode(self, df: DataFrame) -> DataFrame:
        """``df`` with tp replaced by topic and partition again (when packed)."""
        if not self.packed:
            return df
        tid = F.shiftright(F.col("tp"), TP_SHIFT)
        code = F.col("tp").bitwiseAND(F.lit((1 << TP_SHIFT) - 1))
        topic = self._case([(tid == i, F.lit(name)) for i, name in enumerate(self.topics)],
                           F.lit(None).cast("string")).alias("topic")
        part = (F.when(code == NULL_PARTITION, F.lit(None)).otherwise(code - F.lit(1 << 31))
                .cast("int").alias("partition"))
        return df.select(*[c for col in df.columns for c in ((topic, part) if col == "tp" else (F.col(col),))])


def per_offset(replicas: DataFrame, consumed: DataFrame, pk: PartitionKey) -> DataFrame:
    """One row per (run, topic, partition, offset, value) held by a replica or returned to a reader,
    with flags only: the reads behind the few rows that turn out uncommitted are looked up later.

    The observations are clustered once by (run, topic, partition, offset), as one long k when
    PartitionKey.key can hold them (the rows are then (k, value, flags), and PartitionKey.unkeyed
    gives the columns back); every grouping below that includes those columns (or k) then runs
    without another shuffle, and the aggregation buffers are numbers only, so Spark
    hash-aggregates (a string min or max would make it sort).
    """
    live = F.col("phase") == "live"
    above = live & F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))
    reps = pk.encode(replicas.select(*KEY, "offset", "value", F.lit(0).alias("flags")))
    obs = (reps.unionByName(pk.encode(consumed.select(
        *KEY, "offset", "value",
        _mask([(F.col("phase") == "final", IN_FINAL), (live, IN_LIVE), (above, ABOVE_HW),
               *_bad_bits(CONSUMED)]).alias("flags"))))
           .withColumn("flags", F.col("flags") + F.when(pk.unknown(), F.lit(UNKNOWN_TOPIC)).otherwise(F.lit(0))))
    if pk.bits is None:
        return (obs.repartition(*pk.cols, "offset")
                .groupBy(*pk.cols, "offset", "value")
                .agg(F.bit_or("flags").alias("flags")))
    k, fits = pk.key()
    return (obs.select(k.alias("k"), "value", (F.col("flags") + F.when(fits, 0).otherwise(NO_KEY)).alias("flags"))
            .repartition("k")
            .groupBy("k", "value")
            .agg(F.bit_or("flags").alias("flags")))


def per_value(produced: DataFrame, offs: DataFrame, pk: PartitionKey) -> DataFrame:
    """One row per (run, topic, partition, value) produced there or found in its final log, with
    what the producer said of it (flags) and where the final log holds it (first and last offset).
    Who sent it, and when, is looked up later for the few values that need it (send_details).
    The final log comes from ``offs`` (per_offset, cached), which holds each of its records once,
    rather than from another scan of consumed.parquet.

    Clustered by (run, value) alone, so the questions that cross partitions (is a value in two
    partitions' logs? was it produced anywhere?) are answered without another shuffle."""
    status, acks = F.col("status"), F.col("acks")
    ok = (status == "ok") & (acks != "0")
    sends = pk.encode(produced.select(
        *KEY, "value", F.lit(None).cast("long").alias("offset"),
        _mask([(F.lit(True), SENT), (ok, OK_ACKED), (status == "info", INFO), (status == "fail", FAIL),
               (acks == "0", ACKS0), (ok & (acks == "1"), ACKS1), *_bad_bits(PRODUCED)]).alias("flags")))
    finals = offs.filter(has(IN_FINAL)).select(*pk.cols, "value", "offset", F.lit(0).alias("flags"))
    return (sends.unionByName(finals).repartition("run", "value")
            .groupBy(*pk.cols, "value")
            .agg(F.bit_or("flags").alias("flags"),
                 F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset")))


SEND_COLS = ["run", "value", "producer", "topic", "partition", "acks", "status", "offset", "send_ts_ms", "ack_ts_ms",
             "error"]


def explains() -> F.Column:
    """Whether a send explains its target row (kind, t_topic, t_partition): kind "dup" takes every
    send of the value, the others only the sends to (t_topic, t_partition) that explain the finding."""
    status, kind = F.col("status"), F.col("kind")
    here = F.col("topic").eqNullSafe(F.col("t_topic")) & F.col("partition").eqNullSafe(F.col("t_partition"))
    return ((kind == "dup")
            | (here & (((kind == "lost") & (status == "ok") & (F.col("acks") != "0"))
                       | ((kind == "landed_info") & (status == "info"))
                       | ((kind == "landed_fail") & (status == "fail")))))


def send_details(produced: DataFrame, targets: DataFrame, few: bool) -> DataFrame:
    """The sends behind the few values an example needs them for: ``targets`` holds (run, value,
    kind, t_topic, t_partition, first_offset), matched to sends by ``explains``.

    One pass over produced.parquet for all of them; the targets are broadcast when few (as they
    are unless the history is badly broken), so nothing of produced is shuffled. (When the
    send-order window runs, it does this lookup on its way in instead: send_pass.)
    """
    return (produced.select(*SEND_COLS).join(F.broadcast(targets) if few else targets, on=["run", "value"], how="inner")
            .filter(explains()))


def with_previous(rows: DataFrame, by: list[str]) -> DataFrame:
    """Each row with the offset and seq of the row before it in seq order within ``by``."""
    w = Window.partitionBy(*by).orderBy("seq")
    return rows.withColumn("prev_offset", F.lag("offset").over(w)).withColumn("prev_seq", F.lag("seq").over(w))


def uncommitted() -> F.Column:
    """A per-offset row read live that is not in the final log there, or was read at or above its hw."""
    return has(IN_LIVE) & (~has(IN_FINAL) | has(ABOVE_HW))


def regressed() -> F.Column:
    """The row got a lower or equal offset than the one before it (with_previous)."""
    return F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset"))


REGRESSION_COLS = ["topic", "partition", "seq", "offset", "value", "prev_offset", "prev_seq"]


def send_pass(produced: DataFrame, targets: DataFrame, table: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The send-order window and the lookup of the targets' sends (send_details) in one pass over
    produced.parquet, for when the targets are few and the window's groups hash apart.

    The targets, one row per value, are broadcast and matched on the way in; only the matched
    sends carry their details through the window's shuffle, as one struct (null for the rest).
    Returns (the sends that explain a target, the regressions with their producer's name, the
    persisted rows both come from: the caller computes them once, before the findings, and
    unpersists them).
    """
    ok = (F.col("status") == "ok") & (F.col("acks") != "0") & F.col("offset").isNotNull()
    by_value = targets.groupBy("run", "value").agg(
        F.collect_list(F.struct("kind", "t_topic", "t_partition", "first_offset")).alias("_t"))
    rows = (produced.select(*SEND_COLS, "seq", F.xxhash64("run", "producer", "topic", "partition").alias("_g"),
                            ok.alias("_ok"))
            .join(F.broadcast(by_value), on=["run", "value"], how="left")
            .filter(F.col("_ok") | F.col("_t").isNotNull()))
    # Sends that are not ok take part only as targets: all in one window group of their own (null).
    hits = (with_previous(rows.select(F.when(F.col("_ok"), F.col("_g")).alias("_w"), "_g", "_ok", "seq", "offset",
                                      "value", F.when(F.col("_t").isNotNull(), F.struct(*SEND_COLS, "_t")).alias("_s")),
                          ["_w"])
            .filter((F.col("_ok") & regressed()) | F.col("_s").isNotNull()).persist())
    sent = (hits.filter(F.col("_s").isNotNull()).select("_s.*")
            .select(*SEND_COLS, F.explode("_t").alias("t")).select(*SEND_COLS, "t.*").filter(explains()))
    regressions = (hits.filter(F.col("_ok") & regressed())
                   .join(table, on="_g", how="left").select("run", "producer", *REGRESSION_COLS))
    return sent, regressions, hits


def poll_pass(live: DataFrame, unc_at: DataFrame, pk: PartitionKey, offending: F.Column,
              table: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The poll-order window and the lookup of the uncommitted rows' reads in one pass over the live
    reads, for when those rows are few and the window's groups hash apart.

    ``unc_at`` (run, tp, offset, value, flags) is broadcast and matched on the way in; only the
    offending reads carry their details (hw, time, reader) through the window's shuffle.
    Returns (the offending reads, the regressions with their consumer's name, the persisted rows
    both come from: the caller computes them once, before the findings, and unpersists them).
    """
    key = pk.cols
    reads = (pk.encode(live.select(F.xxhash64("run", "consumer", "topic", "partition").alias("_g"), *KEY, "seq",
                                   "offset", "value", "hw", "poll_ts_ms", "cid"))
             .join(F.broadcast(unc_at.withColumn("_u", F.lit(True))), on=[*key, "offset", "value"], how="left"))
    read = F.when(F.col("_u").isNotNull() & offending, F.struct(*key, "flags", "hw", "poll_ts_ms", "cid"))
    hits = (with_previous(reads.select("_g", "seq", "offset", "value", read.alias("_r")), ["_g"])
            .filter(regressed() | F.col("_r").isNotNull()).persist())
    offending_reads = hits.filter(F.col("_r").isNotNull()).select("_r.*", "offset", "value")
    regressions = (hits.filter(regressed()).join(table, on="_g", how="left")
                   .select("run", "consumer", *REGRESSION_COLS))
    return offending_reads, regressions, hits


def name_ids(spark: SparkSession, names: dict[int, dict[str, int]], col: str,
             id_col: str) -> tuple[DataFrame, F.Column | None]:
    """Number the few producer or consumer names of each run, so the big aggregations carry a long
    where they would otherwise need a string (which makes Spark sort).

    The number is the name's 64-bit hash (``names``: run -> name -> hash, computed by the scan
    that found the names), an expression on each row rather than a join; if two names of one run
    ever share a hash, they are numbered through a (broadcast) join instead.
    Returns the (run, name, number) table and the expression that numbers a row (None: join).
    """
    rows = [(run, name, h) for run, ns in sorted(names.items()) for name, h in sorted(ns.items())]
    schema = f"run int, {col} string, {id_col} long"
    if len({(run, h) for run, _, h in rows}) == len(rows):
        return F.broadcast(spark.createDataFrame(rows, schema)), F.xxhash64(col)
    return F.broadcast(spark.createDataFrame([(run, name, i) for i, (run, name, _) in enumerate(rows)], schema)), None


def group_table(spark: SparkSession, groups: dict[tuple, int], who: str) -> DataFrame | None:
    """A window's groups, (run, who, topic, partition), by their 64-bit hash (``groups``: group ->
    hash, from the scan that found them), so the window carries one long instead of those four
    columns and the names come back by a (broadcast) join for the few rows found (each window
    measured alone at 10M records, against rows with the names as strings: 4.9 s to 4.1 s for the
    send order, 6.4 s to 5.0 s for the poll order). None when two groups share a hash: the window
    then partitions by the columns themselves.
    """
    if len(set(groups.values())) != len(groups):
        return None
    rows = [(h, run, name, topic, part) for (run, name, topic, part), h in sorted(groups.items(), key=lambda kv: kv[1])]
    return F.broadcast(spark.createDataFrame(rows, f"_g long, run int, {who} string, topic string, partition int"))


def footer_key(runs: list[RunDir]) -> tuple[set[str | None], set[int | None]] | None:
    """Every topic of every file, and the largest partition, from the files' footers (no data read),
    so per_offset can start while the name scans run; None when a footer cannot tell (a row group
    of several topics, or without statistics): per_offset then waits for the scans. Should a footer
    lie, per_offset's own flags (UNKNOWN_TOPIC, NO_KEY) still make it run again with what the rows hold.
    """
    topics: set[str | None] = set()
    parts: set[int | None] = set()
    for r in runs:
        for name in SCHEMAS:
            names, _ = footer_stats(r.path / name, "topic")
            _, top = footer_stats(r.path / name, "partition")
            if (names is None or any(t is not None and not isinstance(t, str) for t in names)
                    or (top is None and r.rows.get(name)) or (top is not None and not isinstance(top, int))):
                return None
            topics |= names
            parts.add(top)
    return topics, parts


def run_job(spark: SparkSession, runs: list[RunDir], n_examples: int = EXAMPLES) -> JobResult:
    """Reconcile ``runs`` in one Spark session. The rows it caches and the pool its side jobs run in
    are released however it ends: a check that fails midway leaves nothing cached in a session
    the caller goes on using (the pytest plugin checks many runs in one process)."""
    held: list[DataFrame] = []
    side = ThreadPoolExecutor(2)
    try:
        return _run_job(spark, runs, n_examples, held, side)
    finally:
        side.shutdown(wait=True, cancel_futures=True)
        for df in held:
            df.unpersist()


def _run_job(spark: SparkSession, runs: list[RunDir], n_examples: int, held: list[DataFrame],
             side: ThreadPoolExecutor) -> JobResult:
    def hold(df: DataFrame) -> DataFrame:
        held.append(df.persist())
        return df

    n_parts = shuffle_partitions(runs, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(n_parts))
    spark.conf.set("spark.sql.inMemoryColumnarStorage.compressed", str(compress_cache(runs)).lower())
    produced = _read(spark, runs, PRODUCED)
    consumed = _read(spark, runs, CONSUMED)
    replicas = _read(spark, runs, REPLICAS)
    # What each producer used, and the span of the sends (small); it also numbers the names.
    # Grouped by the strings themselves (a hash aggregation; collect_set would make Spark sort), folded below.
    # The hashes that number the names and the window groups come with them (name_ids, group_table).
    # The two scans are side jobs: per_offset does not wait for them when the files' footers name
    # the topics (footer_key), and they fill the cores its first stage leaves idle.
    scans = [side.submit(lambda df: df.collect(), q) for q in (
        produced.groupBy("run", "producer", "topic", "partition", "acks")
        .agg(F.min("send_ts_ms").alias("lo"), F.max("send_ts_ms").alias("hi"))
        .withColumns({"h": F.xxhash64("producer"), "g": F.xxhash64("run", "producer", "topic", "partition")}),
        # live reads only: the poll-order window and the reads' names are theirs; a final read of a
        # topic no live read or producer used is found by per_offset (UNKNOWN_TOPIC)
        consumed.filter(F.col("phase") == "live").select("run", "consumer", "topic", "partition").distinct()
        .withColumns({"h": F.xxhash64("consumer"), "g": F.xxhash64("run", "consumer", "topic", "partition")}))]

    # The topics the producers and live reads used are numbered for the big shuffles. A replica or
    # final read of another topic is flagged by per_offset, which then runs again with every topic.
    # per_offset's one-long key is sized by the partitions seen; a row it cannot hold (NO_KEY) makes
    # per_offset run again without it.
    def offsets_by(topics: set[str | None],
                   parts: set[int | None] | None) -> tuple[PartitionKey, DataFrame, DataFrame, list]:
        known = [p for p in parts or () if p is not None]
        pk = PartitionKey(sorted(topics, key=lambda t: (t is None, t or "")), len(runs),
                          max(known, default=0) if parts is not None else None)
        cached = hold(per_offset(replicas, consumed, pk))
        offs = pk.unkeyed(cached)
        return pk, cached, offs, offs.groupBy("run").agg(
            F.bit_or("flags").alias("f"), F.sum(has(IN_FINAL).cast("int")).alias("final_rows"),
            F.sum(uncommitted().cast("int")).alias("unc")).collect()

    hint = footer_key(runs)
    if hint is None:
        send_rows, poll_rows = (f.result() for f in scans)
        topics = {r["topic"] for r in send_rows} | {r["topic"] for r in poll_rows}
        parts = {r["partition"] for r in send_rows} | {r["partition"] for r in poll_rows}
    else:
        topics, parts = hint
    pk, cached, offs, per_run = offsets_by(topics, parts)
    if any(r["f"] & UNKNOWN_TOPIC for r in per_run):
        cached.unpersist()
        seen = (replicas.select("topic", "partition").unionByName(consumed.select("topic", "partition"))
                .distinct().collect())
        topics, parts = topics | {r["topic"] for r in seen}, parts | {r["partition"] for r in seen}
        pk, cached, offs, per_run = offsets_by(topics, parts)
    if any(r["f"] & NO_KEY for r in per_run):
        cached.unpersist()
        pk, cached, offs, per_run = offsets_by(topics, None)
    # What each producer used, the span of the sends, and the names, from the scans.
    span: dict[int, tuple[int | None, int | None]] = {}
    producers: dict[int, dict[str, dict[str, list[str]]]] = {}
    send_groups: dict[tuple, int] = {}  # (run, producer, topic, partition) -> hash, for the send-order window
    send_rows, poll_rows = (f.result() for f in scans)
    producer_ids: dict[int, dict[str, int]] = {}
    for r in send_rows:
        send_groups[(r["run"], r["producer"], r["topic"], r["partition"])] = r["g"]
        if r["producer"] is not None:
            producer_ids.setdefault(r["run"], {})[r["producer"]] = r["h"]
        used = producers.setdefault(r["run"], {}).setdefault(r["producer"], {"topics": [], "acks": []})
        for k, v in (("topics", r["topic"]), ("acks", r["acks"])):
            if v not in used[k]:
                used[k].append(v)
        lo, hi = span.get(r["run"], (r["lo"], r["hi"]))
        span[r["run"]] = (min(lo, r["lo"]), max(hi, r["hi"]))
    consumer_ids: dict[int, dict[str, int]] = {}
    poll_groups: dict[tuple, int] = {}  # (run, consumer, topic, partition) -> hash, for the poll-order window
    for r in poll_rows:
        poll_groups[(r["run"], r["consumer"], r["topic"], r["partition"])] = r["g"]
        if r["consumer"] is not None:
            consumer_ids.setdefault(r["run"], {})[r["consumer"]] = r["h"]
    pids, pid = name_ids(spark, producer_ids, "producer", "pid")
    cids, cid = name_ids(spark, consumer_ids, "consumer", "cid")
    produced = (produced.withColumn("pid", pid) if pid is not None
                else produced.join(pids, on=["run", "producer"], how="left"))
    consumed = (consumed.withColumn("cid", cid) if cid is not None
                else consumed.join(cids, on=["run", "consumer"], how="left"))

    flags: dict[int, dict[str, int]] = {}
    final_rows: dict[int, int] = {}
    for r in per_run:
        flags.setdefault(r["run"], {})[CONSUMED] = r["f"]
        final_rows[r["run"]] = r["final_rows"]
    vals = hold(per_value(produced, offs, pk))
    # Contract breaches, flagged by the aggregations above: raise before any verdict is built.
    # The same pass counts the rows that become targets of the send lookup below (lost writes and
    # indeterminate or failed writes that landed), to choose how the lookup joins.
    in_final = F.col("first_offset").isNotNull()
    n_targets = 0
    for r in vals.groupBy("run").agg(
            F.bit_or("flags").alias("f"),
            F.sum(((has(OK_ACKED) & ~in_final) | ((has(INFO) | has(FAIL)) & in_final)).cast("long")
                  + (has(INFO) & has(FAIL) & in_final).cast("long")).alias("targets")).collect():
        flags.setdefault(r["run"], {})[PRODUCED] = r["f"]
        n_targets += r["targets"] or 0
    raise_if_invalid(runs, {PRODUCED: produced, CONSUMED: consumed}, flags, final_rows)

    # lost: distinct values ok with acks != 0 absent from the final log of their partition; who
    # sent them, where and when is looked up below, with what the other findings need
    key = pk.cols
    lost_at = pk.decode(vals.filter(has(OK_ACKED) & ~in_final).select(*key, "value"))
    found: list[DataFrame] = []

    # divergence: (t, p, o) with two or more values over replicas and consumed (both phases)
    # A window count over what per_offset is clustered by (its one-long key k, when it has one): one
    # sort of the cached rows by a long, where a count per offset and a join back took two passes
    # (1.2 s against 1.7 s for this finding alone at 10M records). The sort takes the rows as cached
    # (k, value and flags); run, tp and offset are computed for the few found (1.5-1.7 s against 1.8-1.9 s).
    at = [*dict.fromkeys([*pk.offset_cols, *key, "offset"])]
    values_here = F.count(F.lit(1)).over(Window.partitionBy(*pk.offset_cols))
    div = (pk.unkeyed(cached.select(*cached.columns, values_here.alias("n")).filter(F.col("n") >= 2).drop("n"))
           .groupBy(*at)
           .agg(F.count(F.lit(1)).alias("values"), F.min("value").alias("v_min"), F.max("value").alias("v_max"))
           .select(*key, "offset", "values", "v_min", "v_max"))
    found.append(_finding("divergence", pk.decode(div), "topic", "offset"))

    # uncommitted_read: (t, p, o, v) read live not in the final log there, or at/above its hw.
    # Who read it, when and under which hw come from the live reads of just those rows: a
    # broadcast join when they are few (as they are unless the history is badly broken).
    unc_at = offs.filter(uncommitted()).select(*key, "offset", "value", "flags")
    few_unc = sum(r["unc"] for r in per_run) <= BROADCAST_ROWS  # counted with the per-run flags above
    # The example is the earliest offending read: any read of a record missing from the final
    # log, otherwise a read at or above its hw (not some other, committed read of the record).
    offending = ~has(IN_FINAL) | (F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw")))
    live = consumed.filter(F.col("phase") == "live")
    poll_table = group_table(spark, poll_groups, "consumer")
    # Small results the findings read more than once are computed once, in jobs that run beside the
    # main line (as the name scans do), filling the cores it leaves idle; waited for before the findings.
    pending: list[Future] = []
    if few_unc and poll_table is not None:
        # nonmonotonic_poll comes from the same pass (see below)
        unc_reads, nmp, hits = poll_pass(live, unc_at, pk, offending, poll_table)
        held.append(hits)  # persisted by the pass
        pending.append(side.submit(hits.count))
    else:
        unc_reads = (pk.encode(live.select(*KEY, "offset", "value", "hw", "poll_ts_ms", "cid"))
                     .join(F.broadcast(unc_at) if few_unc else unc_at, on=[*key, "offset", "value"], how="inner")
                     .filter(offending))
        nmp = None
    unc = (unc_reads
           .groupBy(*key, "offset", "value", "flags")
           .agg(F.min(F.struct("poll_ts_ms", "hw", "cid")).alias("read"))
           .select(*key, "offset", "value", "flags", "read.*")
           .join(cids, on=["run", "cid"], how="left")
           .select(*key, "offset", "value", "consumer", "hw", "poll_ts_ms",
                   (~has(IN_FINAL)).cast("int").alias("not_in_final"),
                   has(ABOVE_HW).cast("int").alias("at_or_above_hw")))
    found.append(_finding("uncommitted_read", pk.decode(unc), "topic", "poll_ts_ms"))

    # duplicate: values at two or more offsets of the final log, in one partition (first offset
    # differs from the last) or in several. phantom: values in the final log never produced.
    # Both are per value, answered where the values already are.
    per_run_value = (vals.groupBy("run", "value")
                     .agg(F.sum(in_final.cast("int")).alias("final_parts"),
                          F.max((in_final & (F.col("first_offset") != F.col("last_offset"))).cast("int"))
                          .alias("dup_local"),
                          F.bit_or("flags").alias("flags")))
    is_dup = (F.col("final_parts") >= 2) | (F.col("dup_local") == 1)
    is_phantom = (F.col("final_parts") >= 1) & ~has(SENT)
    odd = hold(per_run_value.filter(is_dup | is_phantom)
               .select("run", "value", is_dup.alias("is_dup"), is_phantom.alias("is_phantom")))
    # The odd values are few unless the history is badly broken: then they are broadcast, so the
    # final log's rows are matched to them where they lie instead of being shuffled by value.
    n_odd, n_dup = odd.agg(F.count(F.lit(1)), F.sum(F.col("is_dup").cast("long"))).first()
    few = n_odd <= BROADCAST_ROWS

    # Who sent the values behind lost writes, duplicates and indeterminate or failed writes that
    # landed: one lookup in produced for all of them (what the final log says is already known).
    landed_at = pk.decode(vals.select(*key, "value", "first_offset", F.explode(F.array(
        F.when(has(INFO) & in_final, F.lit("landed_info")),
        F.when(has(FAIL) & in_final, F.lit("landed_fail")))).alias("kind"))
        .filter(F.col("kind").isNotNull()))
    no_offset = F.lit(None).cast("long").alias("first_offset")
    targets = (lost_at.select("run", "value", F.lit("lost").alias("kind"), "topic", "partition", no_offset)
               .unionByName(landed_at.select("run", "value", "kind", "topic", "partition", "first_offset"))
               .unionByName(odd.filter("is_dup").select("run", "value", F.lit("dup").alias("kind"),
                                                         F.lit(None).cast("string").alias("topic"),
                                                         F.lit(None).cast("int").alias("partition"), no_offset))
               .withColumnsRenamed({"topic": "t_topic", "partition": "t_partition"}))
    few_targets = n_targets + (n_dup or 0) <= BROADCAST_ROWS
    send_table = group_table(spark, send_groups, "producer")
    if few_targets and send_table is not None:
        # nonmonotonic_send comes from the same pass (see below)
        sent, nms, hits = send_pass(produced, targets, send_table)
        held.append(hits)  # persisted by the pass
        pending.append(side.submit(hits.count))
    else:
        sent, nms = send_details(produced, targets, few_targets), None
    sent = hold(sent)

    # The example of a lost write is its earliest acknowledged send.
    lost = (sent.filter(F.col("kind") == "lost").groupBy("run", "value")
            .agg(F.min(F.struct("ack_ts_ms", "producer", "topic", "partition", "offset", "acks")).alias("s"))
            .select("run", "value", "s.producer", "s.topic", "s.partition", F.col("s.offset").alias("ack_offset"),
                    "s.acks", "s.ack_ts_ms"))
    found.append(_finding("lost", lost, "producer", "ack_ts_ms"))

    # The final log's records of the duplicate and phantom values, for both examples: one pass over
    # the per-offset cache, computed once (it is small).
    odd_final = hold(pk.decode(offs.filter(has(IN_FINAL)).select(*key, "offset", "value")
                               .join(F.broadcast(odd) if few else odd, on=["run", "value"], how="inner")))
    pending.append(side.submit(odd_final.count))
    senders = sent.filter(F.col("kind") == "dup").groupBy("run", "value").agg(F.min("producer").alias("producer"))
    dup = (odd_final.filter("is_dup")
           .groupBy("run", "value")
           .agg(F.count(F.lit(1)).alias("copies"),
                F.slice(F.sort_array(F.collect_list(F.struct("topic", "partition", "offset"))), 1, 5).alias("at"))
           .join(senders, on=["run", "value"], how="left")
           .fillna({"producer": "(unknown)"}))
    found.append(_finding("duplicate", dup, "producer", "copies"))
    ph = (odd_final.filter("is_phantom")
          .groupBy("run", "value")
          .agg(F.min(F.struct("offset", "topic", "partition")).alias("at"))
          .select("run", "value", "at.topic", "at.partition", "at.offset"))
    found.append(_finding("phantom", ph, "topic", "offset"))

    # nonmonotonic_send: adjacent ok sends (seq order) whose later one got a lower or equal offset.
    # nonmonotonic_poll: adjacent live reads (seq order) whose later one has a lower or equal offset.
    # Usually from the one-pass lookups above (send_pass, poll_pass). Otherwise windows of their own,
    # over one hash per group where the groups hash apart (group_table), else over the numbered
    # names; the names come back for the rows found.
    def adjacent_regressions(df: DataFrame, who: str, names: DataFrame, name: str,
                             table: DataFrame | None) -> DataFrame:
        if table is not None:
            rows = df.select(F.xxhash64("run", name, "topic", "partition").alias("_g"), "seq", "offset", "value")
            return with_previous(rows, ["_g"]).filter(regressed()).join(table, on="_g", how="left").select(
                "run", name, *REGRESSION_COLS)
        by = ["run", who, "topic", "partition"]
        return (with_previous(df.select(*by, "seq", "offset", "value"), by).filter(regressed())
                .join(names, on=["run", who], how="left").select("run", name, *REGRESSION_COLS))

    if nms is None:
        ok_sends = produced.filter((F.col("status") == "ok") & (F.col("acks") != "0") & F.col("offset").isNotNull())
        nms = adjacent_regressions(ok_sends, "pid", pids, "producer", send_table)
    found.append(_finding("nonmonotonic_send", nms, "producer", "seq"))
    if nmp is None:
        nmp = adjacent_regressions(live, "cid", cids, "consumer", poll_table)
    found.append(_finding("nonmonotonic_poll", nmp, "topic", "seq"))

    # Not anomalies, but reported: indeterminate writes that landed; "fail" writes that landed
    # (a client that called a written record a definite failure); acks=0 writes not found.
    for kind in ("landed_info", "landed_fail"):
        landed = (sent.filter(F.col("kind") == kind).groupBy("run", "value")
                  .agg(F.first("producer").alias("producer"), F.first("topic").alias("topic"),
                       F.first("partition").alias("partition"), F.min("first_offset").alias("offset"),
                       F.first("error").alias("error"), F.first("send_ts_ms").alias("send_ts_ms")))
        found.append(_finding(kind, landed, "producer", "send_ts_ms"))
    acks0 = (vals.filter(has(ACKS0) & ~in_final).select("run", "value").distinct()
             .withColumn("none", F.lit("")).withColumn("zero", F.lit(0)))
    found.append(_finding("acks0_missing", acks0, "none", "zero"))

    # Per-second acknowledgement buckets for unavailability windows (small: runs x partitions x
    # seconds), beside the findings.
    bk = (produced.filter((F.col("status") == "ok") & F.col("ack_ts_ms").isNotNull())
          .withColumn("sec", F.floor(F.col("ack_ts_ms") / BUCKET_MS))
          .groupBy(*KEY, "sec")
          .agg(F.min("ack_ts_ms").alias("first_ack"), F.max("ack_ts_ms").alias("last_ack"),
               F.count(F.lit(1)).alias("acks")))
    for f in pending:
        f.result()
    bucket_rows = side.submit(_rows, bk)

    # One action for every finding of every run: the counts per attribution (rows with n), and the
    # first examples of each kind (rows with a payload), both from the persisted union.
    allf = found[0]
    for f in found[1:]:
        allf = allf.unionByName(f)
    # Rebalanced as it is cached: the union has a partition per partition of every finding (80 at
    # 10M records), and the counts and examples each ran a task per partition, mostly empty; AQE
    # now packs few rows into one partition and splits many (the final action 4.6-4.7 s against
    # 6.0-6.8 s; whole checks 50.8-51.6 s against 51.7-55.0 s, alternating).
    allf = hold(allf.hint("rebalance"))
    counts = (allf.groupBy("kind", "run", "attr").agg(F.count(F.lit(1)).alias("n"))
              .withColumn("payload", F.lit(None).cast("string")))
    w = Window.partitionBy("kind", "run").orderBy("sort", "payload")
    ex = (allf.filter(F.col("kind") != "acks0_missing")
          .withColumn("_rn", F.row_number().over(w)).filter(F.col("_rn") <= n_examples)
          .select("kind", "run", F.lit(None).cast("string").alias("attr"), F.lit(None).cast("long").alias("n"),
                  "payload"))
    results: dict[str, AnomalyResult] = {}
    for r in counts.unionByName(ex).collect():
        res = results.setdefault(r["kind"], AnomalyResult())
        if r["n"] is not None:
            res.counts[(r["run"], r["attr"])] = r["n"]
        else:
            res.examples.setdefault(r["run"], []).append(json.loads(r["payload"]))

    def per_run(kind: str) -> dict[int, int]:
        return {run: n for (run, _), n in results.get(kind, AnomalyResult()).counts.items()}

    buckets: dict[int, list[dict]] = {}
    for row in bucket_rows.result():
        buckets.setdefault(row.pop("run"), []).append(row)
    final_rows = {i: final_rows.get(i) or 0 for i in range(len(runs))}
    return JobResult(
        {a: results.get(a, AnomalyResult()) for a in ANOMALIES},
        results.get("landed_info", AnomalyResult()), results.get("landed_fail", AnomalyResult()),
        per_run("acks0_missing"), final_rows, buckets, span, producers,
    )
