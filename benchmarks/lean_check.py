"""The leanest exact Spark job I could write for what `kchaos check` finds: a lower bound for the check.

It runs in a fresh driver with the check's own session (bundled Java, start-up cache, same settings)
and does two things, timed apart:

1. The seven counts, and nothing else the check gives: one aggregation of every observation by
   offset (cached), one pass over it for divergence and uncommitted reads, one aggregation of the
   sends and final records by value, and the two sequence-order windows. Each pass brings back
   only the few anomalous rows, and the counts are taken from them.
2. Each other output the check must give, alone and in its cheapest form: the producer and
   consumer names (what the verdict's promises are looked up by), the per-second acknowledgement
   buckets (unavailability), who sent the lost, duplicated and landed values and when, where the
   duplicated and phantom values lie in the final log, and who read each uncommitted record under
   which high watermark.

Nothing here validates the contract or writes a verdict, so it is not a checker: `benchmarks/checker.py
--lean` compares its counts with DuckDB's, so it cannot be fast by being wrong. It takes one run whose
topics are listed in run.json (at most 7), partitions below 2^20 and offsets in [0, 2^40); a row
outside that stops it with an error rather than a wrong count. At most ANOMALOUS_MAX rows per pass.

Usage: python benchmarks/lean_check.py RUN_DIR   (prints one JSON line)
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

T0 = time.monotonic()


def busy_cpu_s() -> float | None:
    """Busy CPU seconds of the whole machine so far (Linux), to tell whether a phase left cores idle."""
    try:
        v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    return (sum(v) - v[3] - v[4]) / 100  # all but idle and iowait, in USER_HZ ticks


CPU0 = busy_cpu_s()

from pyspark.sql import DataFrame, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from harness.checker.spark_job import (  # noqa: E402
    CONSUMED,
    PRODUCED,
    REPLICAS,
    _read,
    compress_cache,
    shuffle_partitions,
    spark_session,
)
from harness.history import validate  # noqa: E402

ANOMALOUS_MAX = 200_000
PART_BITS, OFFSET_BITS = 20, 40
FINAL, LIVE, ABOVE_HW, BAD = 1, 2, 4, 8  # per offset
SENT, OK, LANDABLE, ACKS0 = 1, 2, 4, 8  # per value (LANDABLE: status info or fail)


def few(df: DataFrame, what: str) -> list:
    """The rows of ``df``, which must be few (the session's limit scans every partition at once)."""
    rows = df.limit(ANOMALOUS_MAX + 1).collect()
    if len(rows) > ANOMALOUS_MAX:
        raise SystemExit(f"lean_check: more than {ANOMALOUS_MAX} {what}; not a history to measure a lower bound on")
    return rows


def has(bit: int) -> F.Column:
    return F.col("f").bitwiseAND(bit) != 0


def main(run_dir: Path) -> None:
    spark = spark_session()
    runs = [validate(run_dir)]
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions(runs, spark.sparkContext.defaultParallelism)))
    spark.conf.set("spark.sql.inMemoryColumnarStorage.compressed", str(compress_cache(runs)).lower())
    # A limit otherwise scans one partition, then four, ...: a core idles and the passes run in rounds.
    spark.conf.set("spark.sql.limit.initialNumPartitions", "100000")
    topics = [t["name"] for t in json.loads((run_dir / "run.json").read_text()).get("topics", [])]
    if not 1 <= len(topics) <= 7:
        raise SystemExit(f"lean_check: {run_dir / 'run.json'} must list 1 to 7 topics")
    p, c, r = (_read(spark, runs, n) for n in (PRODUCED, CONSUMED, REPLICAS))
    tid = F.lit(len(topics))
    for i, name in reversed(list(enumerate(topics))):
        tid = F.when(F.col("topic") == name, F.lit(i)).otherwise(tid)
    tp = tid.cast("long") * F.lit(1 << PART_BITS) + F.col("partition")
    k = tp * F.lit(1 << OFFSET_BITS) + F.col("offset")
    fits = ((tid < len(topics)) & F.col("partition").between(0, (1 << PART_BITS) - 1)
            & F.col("offset").between(0, (1 << OFFSET_BITS) - 1))
    bad = F.when(fits, 0).otherwise(BAD)
    live = F.col("phase") == "live"
    flags = (F.when(F.col("phase") == "final", FINAL).otherwise(0) + F.when(live, LIVE).otherwise(0)
             + F.when(live & (F.col("offset") >= F.col("hw")), ABOVE_HW).otherwise(0) + bad)
    obs = r.select(k.alias("k"), "value", bad.alias("f")).unionByName(c.select(k.alias("k"), "value", flags.alias("f")))
    offs = obs.repartition("k").groupBy("k", "value").agg(F.bit_or("f").alias("f")).persist()

    # 1. the counts
    passes: dict[str, float] = {"start-up": round(time.monotonic() - T0, 2)}
    t = time.monotonic()
    rows = few(offs.select("k", "value", "f", F.count(F.lit(1)).over(Window.partitionBy("k")).alias("n"))
               .filter((F.col("n") >= 2) | (has(LIVE) & (~has(FINAL) | has(ABOVE_HW))) | has(BAD)),
               "divergent or uncommitted rows")
    if any(x["f"] & BAD for x in rows):
        raise SystemExit("lean_check: a row of a topic missing from run.json, or a partition or offset out of range")
    unc = [(x["k"], x["value"]) for x in rows if x["f"] & LIVE and (not x["f"] & FINAL or x["f"] & ABOVE_HW)]
    counts = {"divergence": len({x["k"] for x in rows if x["n"] >= 2}), "uncommitted_read": len(unc)}
    passes["by offset"] = round(time.monotonic() - t, 2)
    t = time.monotonic()

    ok = (F.col("status") == "ok") & (F.col("acks") != "0")
    sends = p.select(tp.alias("tp"), "value", F.lit(None).cast("long").alias("offset"),
                     (SENT + F.when(ok, OK).otherwise(0) + F.when(F.col("status").isin("info", "fail"), LANDABLE)
                      .otherwise(0) + F.when(F.col("acks") == "0", ACKS0).otherwise(0)).alias("f"))
    finals = offs.filter(has(FINAL)).select(F.shiftright("k", OFFSET_BITS).alias("tp"), "value",
                                            F.col("k").bitwiseAND((1 << OFFSET_BITS) - 1).alias("offset"),
                                            F.lit(0).alias("f"))
    in_final = F.col("lo").isNotNull()
    per_tp = (sends.unionByName(finals).repartition("value").groupBy("value", "tp")
              .agg(F.bit_or("f").alias("f"), F.min("offset").alias("lo"), F.max("offset").alias("hi")))
    per_value = (per_tp.groupBy("value")
                 .agg(F.max((has(OK) & ~in_final).cast("int")).alias("lost"),
                      F.max((has(LANDABLE) & in_final).cast("int")).alias("landed"),
                      F.max((has(ACKS0) & ~in_final).cast("int")).alias("acks0_missing"),
                      F.sum(in_final.cast("int")).alias("parts"),
                      F.max((in_final & (F.col("lo") != F.col("hi"))).cast("int")).alias("dup_here"),
                      F.bit_or("f").alias("f"))
                 .select("value", "lost", "landed", "acks0_missing",
                         ((F.col("parts") >= 2) | (F.col("dup_here") == 1)).alias("duplicate"),
                         ((F.col("parts") >= 1) & ~has(SENT)).alias("phantom")))
    odd = few(per_value.filter((F.col("lost") == 1) | (F.col("landed") == 1) | (F.col("acks0_missing") == 1)
                               | F.col("duplicate") | F.col("phantom")), "odd values")
    counts |= {a: sum(1 for x in odd if x[a]) for a in ("lost", "duplicate", "phantom")}
    passes["by value"] = round(time.monotonic() - t, 2)
    t = time.monotonic()

    def regressions(df: DataFrame, who: str) -> DataFrame:
        w = Window.partitionBy("g").orderBy("seq")
        return (df.select(F.xxhash64(who, "topic", "partition").alias("g"), "seq", "offset")
                .withColumn("prev", F.lag("offset").over(w)).filter(F.col("offset") <= F.col("prev")))

    order = few(regressions(p.filter(ok & F.col("offset").isNotNull()), "producer").select(F.lit("send").alias("w"))
                .unionByName(regressions(c.filter(live), "consumer").select(F.lit("poll").alias("w"))), "regressions")
    counts |= {f"nonmonotonic_{w}": sum(1 for x in order if x["w"] == w) for w in ("send", "poll")}
    passes["sequence order"] = round(time.monotonic() - t, 2)
    t_counts = time.monotonic() - T0
    cpu_counts = busy_cpu_s()

    # 2. the other outputs, each alone
    extras: dict[str, float] = {}

    def step(name: str, f) -> None:
        t = time.monotonic()
        f()
        extras[name] = round(time.monotonic() - t, 2)

    def names() -> None:
        with ThreadPoolExecutor(2) as pool:
            jobs = [pool.submit(q.collect) for q in (
                p.groupBy("producer", "topic", "partition", "acks").agg(F.min("send_ts_ms"), F.max("send_ts_ms")),
                c.filter(live).select("consumer", "topic", "partition").distinct())]
            for j in jobs:
                j.result()

    step("producer and consumer names, side by side", names)
    step("acknowledgement buckets", lambda: p.filter((F.col("status") == "ok") & F.col("ack_ts_ms").isNotNull())
         .groupBy("topic", "partition", F.floor(F.col("ack_ts_ms") / 1000).alias("sec"))
         .agg(F.min("ack_ts_ms"), F.max("ack_ts_ms"), F.count(F.lit(1))).collect())
    targets = spark.createDataFrame([(x["value"],) for x in odd if x["lost"] or x["landed"] or x["duplicate"]],
                                    "value string")
    step("sends of the lost, landed and duplicated values", lambda: p.join(F.broadcast(targets), "value").collect())
    placed = spark.createDataFrame([(x["value"],) for x in odd if x["duplicate"] or x["phantom"]], "value string")
    step("final records of the duplicated and phantom values",
         lambda: offs.filter(has(FINAL)).join(F.broadcast(placed), "value").collect())
    read = spark.createDataFrame(unc, "k long, value string")
    step("live reads of the uncommitted records",
         lambda: c.filter(live).select(k.alias("k"), "value", "consumer", "hw", "poll_ts_ms")
         .join(F.broadcast(read), ["k", "value"]).collect())
    cpu = None if CPU0 is None or cpu_counts is None else round(cpu_counts - CPU0, 1)
    print(json.dumps({"counts": counts, "counts_s": round(t_counts, 2), "counts_cpu_s": cpu, "passes_s": passes,
                      "extras_s": extras, "total_s": round(time.monotonic() - T0, 2)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
