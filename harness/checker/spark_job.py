"""The reconciliation job on PySpark.

All runs given to one ``kchaos check`` are read into the same DataFrames with a
``run`` column, so each anomaly is one Spark job over every run at once. Only
aggregates and at most ``examples`` rows per anomaly and run reach the driver.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

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
)

EXAMPLES = 10
BUCKET_MS = 1000  # unavailability is exact for thresholds of at least one bucket


def spark_session(master: str | None = None) -> SparkSession:
    """Embedded local[*] by default; a real cluster when a master URL is given."""
    cores = os.cpu_count() or 2
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
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={quiet}")
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


def _domain_errors(df: DataFrame, runs: list[RunDir], name: str, checks: dict[str, F.Column],
                   allowed: dict[str, str]) -> None:
    """One pass counting rows whose values break the contract; raise naming file, column and allowed values."""
    aggs = [F.sum(cond.cast("int")).alias(col) for col, cond in checks.items()]
    for r in df.groupBy("run").agg(*aggs).collect():
        for col in checks:
            if r[col]:
                raise HistoryError(f"{runs[r['run']].path / name}: column '{col}' has {r[col]} rows outside "
                                   f"the contract (allowed: {allowed[col]})")


def validate_values(produced: DataFrame, consumed: DataFrame, runs: list[RunDir]) -> None:
    """Values the schema cannot express: enums, required non-nulls, and a final read being present."""
    def bad_enum(c: str, values: tuple[str, ...]) -> F.Column:
        return F.col(c).isNull() | ~F.col(c).isin(*values)

    _domain_errors(produced, runs, PRODUCED, {
        "status": bad_enum("status", STATUSES), "acks": bad_enum("acks", ACKS),
        "value": F.col("value").isNull(), "seq": F.col("seq").isNull(), "partition": F.col("partition").isNull(),
    }, {"status": ", ".join(STATUSES), "acks": ", ".join(ACKS), "value": "non-null string",
        "seq": "non-null integer", "partition": "non-null integer"})
    _domain_errors(consumed, runs, CONSUMED, {
        "phase": bad_enum("phase", PHASES), "offset": F.col("offset").isNull(), "value": F.col("value").isNull(),
        "seq": F.col("seq").isNull(),
    }, {"phase": ", ".join(PHASES), "offset": "non-null integer", "value": "non-null string",
        "seq": "non-null integer"})
    with_final = {r["run"] for r in consumed.filter(F.col("phase") == "final").select("run").distinct().collect()}
    for i, r in enumerate(runs):
        if i not in with_final:
            raise HistoryError(f"{r.path / CONSUMED}: no rows with phase 'final' (the full read after healing "
                               "that every count is measured against)")


def shuffle_partitions(runs: list[RunDir], parallelism: int) -> int:
    """About one shuffle partition per 32 MiB of input: tiny histories must not pay for 40 empty tasks."""
    size = sum((r.path / n).stat().st_size for r in runs for n in SCHEMAS)
    return max(1, min(parallelism * 4, size // (32 << 20) + 1))


def run_job(spark: SparkSession, runs: list[RunDir], n_examples: int = EXAMPLES) -> JobResult:
    n_parts = shuffle_partitions(runs, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(n_parts))
    produced = _read(spark, runs, PRODUCED)
    consumed = _read(spark, runs, CONSUMED)
    replicas = _read(spark, runs, REPLICAS)
    validate_values(produced, consumed, runs)
    key = ["run", "topic", "partition"]

    final = (consumed.filter(F.col("phase") == "final")
             .select(*key, "offset", "value").distinct().persist())
    final_vals = final.select(*key, "value").distinct()
    ok_acked = produced.filter((F.col("status") == "ok") & (F.col("acks") != "0"))

    # lost: distinct values ok with acks != 0 absent from the final log of their partition
    lost = (ok_acked.join(final_vals, on=[*key, "value"], how="left_anti")
            .groupBy("run", "value")
            .agg(F.first("producer").alias("producer"), F.first("topic").alias("topic"),
                 F.first("partition").alias("partition"), F.first("offset").alias("ack_offset"),
                 F.first("acks").alias("acks"), F.first("ack_ts_ms").alias("ack_ts_ms")))
    found = [_finding("lost", lost, "producer", "ack_ts_ms")]

    # divergence: (t, p, o) with two or more values over replicas and consumed (both phases)
    observed = (replicas.select(*key, "offset", "value", F.concat(F.lit("broker "), F.col("broker")).alias("source"))
                .unionByName(consumed.select(*key, "offset", "value",
                                             F.concat(F.col("consumer"), F.lit(" ("), F.col("phase"), F.lit(")"))
                                             .alias("source"))))
    # Dedupe first: (t, p, o, value) keys hash-aggregate; min/max over strings would sort instead.
    div = (observed.select(*key, "offset", "value").distinct()
           .groupBy(*key, "offset")
           .agg(F.count(F.lit(1)).alias("values"), F.min("value").alias("v_min"), F.max("value").alias("v_max"))
           .filter(F.col("values") >= 2))
    found.append(_finding("divergence", div, "topic", "offset"))

    # uncommitted_read: (t, p, o, v) read live not in the final log there, or at/above its hw
    live = consumed.filter(F.col("phase") == "live")
    above_hw = F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))
    unc = (live.join(final.withColumn("_in_final", F.lit(True)), on=[*key, "offset", "value"], how="left")
           .filter(F.col("_in_final").isNull() | above_hw)
           .groupBy(*key, "offset", "value")
           .agg(F.first("consumer").alias("consumer"), F.min("hw").alias("hw"),
                F.min("poll_ts_ms").alias("poll_ts_ms"),
                F.max(F.col("_in_final").isNull().cast("int")).alias("not_in_final"),
                F.max(above_hw.cast("int")).alias("at_or_above_hw")))
    found.append(_finding("uncommitted_read", unc, "topic", "poll_ts_ms"))

    # duplicate: values at two or more offsets of the final log
    dup = (final.groupBy("run", "value")
           .agg(F.count(F.lit(1)).alias("copies"),
                F.slice(F.sort_array(F.collect_list(F.struct("topic", "partition", "offset"))), 1, 5).alias("at"))
           .filter(F.col("copies") >= 2)
           .join(produced.select("run", "value", "producer").dropDuplicates(["run", "value"]),
                 on=["run", "value"], how="left")
           .fillna({"producer": "(unknown)"}))
    found.append(_finding("duplicate", dup, "producer", "copies"))

    # nonmonotonic_send: adjacent ok sends (seq order) whose later one got a lower or equal offset
    w_send = Window.partitionBy("run", "producer", "topic", "partition").orderBy("seq")
    nms = (ok_acked.filter(F.col("offset").isNotNull())
           .select("run", "producer", "topic", "partition", "seq", "offset", "value")
           .withColumn("prev_offset", F.lag("offset").over(w_send))
           .withColumn("prev_seq", F.lag("seq").over(w_send))
           .filter(F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset"))))
    found.append(_finding("nonmonotonic_send", nms, "producer", "seq"))

    # nonmonotonic_poll: adjacent live reads (seq order) whose later one has a lower or equal offset
    w_poll = Window.partitionBy("run", "consumer", "topic", "partition").orderBy("seq")
    nmp = (live.select("run", "consumer", "topic", "partition", "seq", "offset", "value")
           .withColumn("prev_offset", F.lag("offset").over(w_poll))
           .withColumn("prev_seq", F.lag("seq").over(w_poll))
           .filter(F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset"))))
    found.append(_finding("nonmonotonic_poll", nmp, "topic", "seq"))

    # phantom: values in the final log never produced
    ph = (final.join(produced.select("run", "value").distinct(), on=["run", "value"], how="left_anti")
          .groupBy("run", "value")
          .agg(F.first("topic").alias("topic"), F.first("partition").alias("partition"),
               F.min("offset").alias("offset")))
    found.append(_finding("phantom", ph, "topic", "offset"))

    # Not anomalies, but reported: indeterminate writes that landed; "fail" writes that landed
    # (a client that called a written record a definite failure); acks=0 writes not found.
    for status in ("info", "fail"):
        landed = (produced.filter(F.col("status") == status).drop("offset")
                  .join(final, on=[*key, "value"], how="inner")
                  .groupBy("run", "value")
                  .agg(F.first("producer").alias("producer"), F.first("topic").alias("topic"),
                       F.first("partition").alias("partition"), F.min("offset").alias("offset"),
                       F.first("error").alias("error"), F.first("send_ts_ms").alias("send_ts_ms")))
        found.append(_finding(f"landed_{status}", landed, "producer", "send_ts_ms"))
    acks0 = (produced.filter(F.col("acks") == "0")
             .join(final_vals, on=[*key, "value"], how="left_anti")
             .select("run", "value").distinct().withColumn("none", F.lit(""))
             .withColumn("zero", F.lit(0)))
    found.append(_finding("acks0_missing", acks0, "none", "zero"))

    # Two actions for every finding of every run: counts, then the first examples of each kind.
    allf = found[0]
    for f in found[1:]:
        allf = allf.unionByName(f)
    allf = allf.persist()
    results: dict[str, AnomalyResult] = {}
    for r in allf.groupBy("kind", "run", "attr").count().collect():
        results.setdefault(r["kind"], AnomalyResult()).counts[(r["run"], r["attr"])] = r["count"]
    w = Window.partitionBy("kind", "run").orderBy("sort", "payload")
    ex = (allf.filter(~F.col("kind").isin("final_rows", "acks0_missing"))
          .withColumn("_rn", F.row_number().over(w)).filter(F.col("_rn") <= n_examples))
    for r in ex.select("kind", "run", "payload").collect():
        res = results.setdefault(r["kind"], AnomalyResult())
        res.examples.setdefault(r["run"], []).append(json.loads(r["payload"]))
    allf.unpersist()

    def per_run(kind: str) -> dict[int, int]:
        return {run: n for (run, _), n in results.get(kind, AnomalyResult()).counts.items()}

    # Per-second acknowledgement buckets for unavailability windows (small: runs x partitions x seconds).
    bk = (produced.filter((F.col("status") == "ok") & F.col("ack_ts_ms").isNotNull())
          .withColumn("sec", F.floor(F.col("ack_ts_ms") / BUCKET_MS))
          .groupBy(*key, "sec")
          .agg(F.min("ack_ts_ms").alias("first_ack"), F.max("ack_ts_ms").alias("last_ack"),
               F.count(F.lit(1)).alias("acks")))
    buckets: dict[int, list[dict]] = {}
    for row in _rows(bk):
        buckets.setdefault(row.pop("run"), []).append(row)
    span: dict[int, tuple[int | None, int | None]] = {}
    producers: dict[int, dict[str, dict[str, list[str]]]] = {}
    for r in (produced.groupBy("run", "producer")
              .agg(F.collect_set("topic").alias("topics"), F.collect_set("acks").alias("acks"),
                   F.min("send_ts_ms").alias("lo"), F.max("send_ts_ms").alias("hi")).collect()):
        producers.setdefault(r["run"], {})[r["producer"]] = {"topics": list(r["topics"]), "acks": list(r["acks"])}
        lo, hi = span.get(r["run"], (r["lo"], r["hi"]))
        span[r["run"]] = (min(lo, r["lo"]), max(hi, r["hi"]))
    final_rows = {r["run"]: r["count"] for r in final.groupBy("run").count().collect()}
    final.unpersist()
    return JobResult(
        {a: results.get(a, AnomalyResult()) for a in ANOMALIES},
        results.get("landed_info", AnomalyResult()), results.get("landed_fail", AnomalyResult()),
        per_run("acks0_missing"), final_rows, buckets, span, producers,
    )
