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
        # The parallel collector: a batch job wants throughput, not G1's short pauses (about 10% here).
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={quiet} -XX:+UseParallelGC")
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

    They are counted inside the main aggregations (a flag per row, summed), not in a pass of their own.
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


def _bad(name: str, col: str) -> str:
    return f"bad_{name.split('.')[0]}_{col}"


def _bad_flags(name: str, rows_of_this_file: bool) -> list[F.Column]:
    """One 0/1 column per contract check of file ``name`` (all 0 for rows from another file)."""
    return [(cond.cast("int") if rows_of_this_file else F.lit(0)).alias(_bad(name, col))
            for col, (cond, _) in contract_checks()[name].items()]


def _bad_sums(name: str) -> list[F.Column]:
    return [F.sum(_bad(name, col)).alias(_bad(name, col)) for col in contract_checks()[name]]


def raise_if_invalid(runs: list[RunDir], sums: dict[int, dict[str, int]]) -> None:
    """Name the file, column and allowed values of the first contract breach; a run needs a final read."""
    for i, r in enumerate(runs):
        got = sums.get(i, {})
        for name, checks in contract_checks().items():
            for col, (_, allowed) in checks.items():
                if n := got.get(_bad(name, col)):
                    raise HistoryError(f"{r.path / name}: column '{col}' has {n} rows outside the contract "
                                       f"(allowed: {allowed})")
        if not got.get("final_rows"):
            raise HistoryError(f"{r.path / CONSUMED}: no rows with phase 'final' (the full read after healing "
                               "that every count is measured against)")


def shuffle_partitions(runs: list[RunDir], parallelism: int) -> int:
    """About one shuffle partition per 32 MiB of input: tiny histories must not pay for 40 empty tasks."""
    size = sum((r.path / n).stat().st_size for r in runs for n in SCHEMAS)
    return max(1, min(parallelism * 4, size // (32 << 20) + 1))


KEY = ["run", "topic", "partition"]
REPLICA, LIVE, FINAL = 0, 1, 2  # where an observation of (topic, partition, offset, value) came from


def per_offset(replicas: DataFrame, consumed: DataFrame) -> DataFrame:
    """One row per (run, topic, partition, offset, value) held by a replica or returned to a reader.

    The observations are clustered once by (run, topic, partition, offset); every grouping below
    that includes those columns then runs without another shuffle, and the aggregation buffers are
    numbers only, so Spark hash-aggregates (a string min or max would make it sort).
    """
    obs = (replicas.select(*KEY, "offset", "value", F.lit(REPLICA).alias("src"),
                           F.lit(None).cast("long").alias("hw"), F.lit(None).cast("long").alias("poll_ts_ms"),
                           *_bad_flags(CONSUMED, False))
           .unionByName(consumed.select(*KEY, "offset", "value",
                                        F.when(F.col("phase") == "final", FINAL).otherwise(LIVE).alias("src"),
                                        "hw", "poll_ts_ms", *_bad_flags(CONSUMED, True))))
    live = F.col("src") == LIVE
    return (obs.repartition(*KEY, "offset")
            .groupBy(*KEY, "offset", "value")
            .agg(F.max((F.col("src") == FINAL).cast("int")).alias("in_final"),
                 F.max(live.cast("int")).alias("in_live"),
                 F.max((live & F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))).cast("int"))
                 .alias("above_hw"),
                 F.min(F.when(live, F.col("hw"))).alias("hw"),
                 F.min(F.when(live, F.col("poll_ts_ms"))).alias("poll_ts_ms"),
                 *_bad_sums(CONSUMED)))


def per_value(produced: DataFrame, consumed: DataFrame) -> DataFrame:
    """One row per (run, topic, partition, value) produced there or found in its final log, with
    what the producer said of it and where the final log holds it (first and last offset).

    Clustered by (run, value) alone, so the questions that cross partitions (is a value in two
    partitions' logs? was it produced anywhere?) are answered without another shuffle."""
    status, acks = F.col("status"), F.col("acks")
    sends = produced.select(
        *KEY, "value", F.lit(1).alias("sent"),
        ((status == "ok") & (acks != "0")).cast("int").alias("ok_acked"),
        (status == "info").cast("int").alias("info"), (status == "fail").cast("int").alias("fail"),
        (acks == "0").cast("int").alias("acks0"), F.lit(None).cast("long").alias("offset"),
        *_bad_flags(PRODUCED, True))
    finals = (consumed.filter(F.col("phase") == "final")
              .select(*KEY, "value", *(F.lit(0).alias(c) for c in ("sent", "ok_acked", "info", "fail", "acks0")),
                      "offset", *_bad_flags(PRODUCED, False)))
    return (sends.unionByName(finals).repartition("run", "value")
            .groupBy(*KEY, "value")
            .agg(*(F.max(c).alias(c) for c in ("sent", "ok_acked", "info", "fail", "acks0")),
                 F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
                 *_bad_sums(PRODUCED)))


def run_job(spark: SparkSession, runs: list[RunDir], n_examples: int = EXAMPLES) -> JobResult:
    n_parts = shuffle_partitions(runs, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(n_parts))
    produced = _read(spark, runs, PRODUCED)
    consumed = _read(spark, runs, CONSUMED)
    replicas = _read(spark, runs, REPLICAS)
    key = KEY
    offs = per_offset(replicas, consumed).persist()
    vals = per_value(produced, consumed).persist()
    # Contract breaches, counted by the aggregations above: raise before any verdict is built.
    sums: dict[int, dict[str, int]] = {}
    for df in (vals.groupBy("run").agg(*_bad_sums(PRODUCED)),
               offs.groupBy("run").agg(*_bad_sums(CONSUMED), F.sum("in_final").alias("final_rows"))):
        for r in df.collect():
            sums.setdefault(r["run"], {}).update({k: v for k, v in r.asDict().items() if k != "run"})
    raise_if_invalid(runs, sums)
    in_final = F.col("first_offset").isNotNull()

    # lost: distinct values ok with acks != 0 absent from the final log of their partition. Also
    # the writes that landed although the client called them indeterminate or failed. What the
    # producer recorded is joined back for these few rows only.
    by_value = (vals.select(*key, "value", "first_offset", F.explode(F.array(
        F.when((F.col("ok_acked") == 1) & ~in_final, F.lit("lost")),
        F.when((F.col("info") == 1) & in_final, F.lit("landed_info")),
        F.when((F.col("fail") == 1) & in_final, F.lit("landed_fail")))).alias("kind"))
        .filter(F.col("kind").isNotNull()))
    status_of = {"lost": (F.col("status") == "ok") & (F.col("acks") != "0"),
                 "landed_info": F.col("status") == "info", "landed_fail": F.col("status") == "fail"}
    sent = produced.join(by_value, on=[*key, "value"], how="inner").filter(
        F.coalesce(*(F.when(F.col("kind") == k, c) for k, c in status_of.items())))
    lost = (sent.filter(F.col("kind") == "lost").groupBy("run", "value")
            .agg(F.first("producer").alias("producer"), F.first("topic").alias("topic"),
                 F.first("partition").alias("partition"), F.first("offset").alias("ack_offset"),
                 F.first("acks").alias("acks"), F.first("ack_ts_ms").alias("ack_ts_ms")))
    found = [_finding("lost", lost, "producer", "ack_ts_ms")]

    # divergence: (t, p, o) with two or more values over replicas and consumed (both phases)
    div_at = (offs.groupBy(*key, "offset").agg(F.count(F.lit(1)).alias("values"))
              .filter(F.col("values") >= 2))
    div = (offs.join(div_at, on=[*key, "offset"], how="left_semi")
           .groupBy(*key, "offset")
           .agg(F.count(F.lit(1)).alias("values"), F.min("value").alias("v_min"), F.max("value").alias("v_max")))
    found.append(_finding("divergence", div, "topic", "offset"))

    # uncommitted_read: (t, p, o, v) read live not in the final log there, or at/above its hw
    unc = offs.filter((F.col("in_live") == 1) & ((F.col("in_final") == 0) | (F.col("above_hw") == 1)))
    readers = (consumed.filter(F.col("phase") == "live").select(*key, "offset", "value", "consumer")
               .join(unc.select(*key, "offset", "value"), on=[*key, "offset", "value"], how="left_semi")
               .groupBy(*key, "offset", "value").agg(F.min("consumer").alias("consumer")))
    unc = (unc.join(readers, on=[*key, "offset", "value"], how="left")
           .select(*key, "offset", "value", "consumer", "hw", "poll_ts_ms",
                   (1 - F.col("in_final")).alias("not_in_final"), F.col("above_hw").alias("at_or_above_hw")))
    found.append(_finding("uncommitted_read", unc, "topic", "poll_ts_ms"))

    # duplicate: values at two or more offsets of the final log, in one partition (first offset
    # differs from the last) or in several. phantom: values in the final log never produced.
    # Both are per value, answered where the values already are.
    per_run_value = (vals.groupBy("run", "value")
                     .agg(F.sum(in_final.cast("int")).alias("final_parts"),
                          F.max((in_final & (F.col("first_offset") != F.col("last_offset"))).cast("int"))
                          .alias("dup_local"),
                          F.max("sent").alias("sent_any")))
    is_dup = (F.col("final_parts") >= 2) | (F.col("dup_local") == 1)
    is_phantom = (F.col("final_parts") >= 1) & (F.col("sent_any") == 0)
    odd = (per_run_value.filter(is_dup | is_phantom)
           .select("run", "value", is_dup.alias("is_dup"), is_phantom.alias("is_phantom")).persist())
    dup_values = odd.filter("is_dup").select("run", "value")
    dup = (offs.filter(F.col("in_final") == 1).join(dup_values, on=["run", "value"], how="left_semi")
           .groupBy("run", "value")
           .agg(F.count(F.lit(1)).alias("copies"),
                F.slice(F.sort_array(F.collect_list(F.struct("topic", "partition", "offset"))), 1, 5).alias("at"))
           .join(produced.select("run", "value", "producer").join(dup_values, on=["run", "value"], how="left_semi")
                 .dropDuplicates(["run", "value"]), on=["run", "value"], how="left")
           .fillna({"producer": "(unknown)"}))
    found.append(_finding("duplicate", dup, "producer", "copies"))
    never_sent = odd.filter("is_phantom").select("run", "value").hint("shuffle_hash")
    ph = (vals.filter(in_final).join(never_sent, on=["run", "value"], how="left_semi")
          .groupBy("run", "value")
          .agg(F.first("topic").alias("topic"), F.first("partition").alias("partition"),
               F.min("first_offset").alias("offset")))
    found.append(_finding("phantom", ph, "topic", "offset"))

    # nonmonotonic_send: adjacent ok sends (seq order) whose later one got a lower or equal offset
    w_send = Window.partitionBy("run", "producer", "topic", "partition").orderBy("seq")
    ok_acked = produced.filter((F.col("status") == "ok") & (F.col("acks") != "0"))
    nms = (ok_acked.filter(F.col("offset").isNotNull())
           .select("run", "producer", "topic", "partition", "seq", "offset", "value")
           .withColumn("prev_offset", F.lag("offset").over(w_send))
           .withColumn("prev_seq", F.lag("seq").over(w_send))
           .filter(F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset"))))
    found.append(_finding("nonmonotonic_send", nms, "producer", "seq"))

    # nonmonotonic_poll: adjacent live reads (seq order) whose later one has a lower or equal offset
    w_poll = Window.partitionBy("run", "consumer", "topic", "partition").orderBy("seq")
    nmp = (consumed.filter(F.col("phase") == "live")
           .select("run", "consumer", "topic", "partition", "seq", "offset", "value")
           .withColumn("prev_offset", F.lag("offset").over(w_poll))
           .withColumn("prev_seq", F.lag("seq").over(w_poll))
           .filter(F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset"))))
    found.append(_finding("nonmonotonic_poll", nmp, "topic", "seq"))

    # Not anomalies, but reported: indeterminate writes that landed; "fail" writes that landed
    # (a client that called a written record a definite failure); acks=0 writes not found.
    for kind in ("landed_info", "landed_fail"):
        landed = (sent.filter(F.col("kind") == kind).groupBy("run", "value")
                  .agg(F.first("producer").alias("producer"), F.first("topic").alias("topic"),
                       F.first("partition").alias("partition"), F.min("first_offset").alias("offset"),
                       F.first("error").alias("error"), F.first("send_ts_ms").alias("send_ts_ms")))
        found.append(_finding(kind, landed, "producer", "send_ts_ms"))
    acks0 = (vals.filter((F.col("acks0") == 1) & ~in_final).select("run", "value").distinct()
             .withColumn("none", F.lit("")).withColumn("zero", F.lit(0)))
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
    final_rows = {i: sums.get(i, {}).get("final_rows") or 0 for i in range(len(runs))}
    for df in (offs, vals, odd):
        df.unpersist()
    return JobResult(
        {a: results.get(a, AnomalyResult()) for a in ANOMALIES},
        results.get("landed_info", AnomalyResult()), results.get("landed_fail", AnomalyResult()),
        per_run("acks0_missing"), final_rows, buckets, span, producers,
    )
