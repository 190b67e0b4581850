"""What the verdict reports beside the anomalies, from produced.parquet: per-second acknowledgement
buckets (for unavailability windows), and what each producer used and when it sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.keys import KEY
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

BUCKET_MS = 1000  # unavailability is exact for thresholds of at least one bucket


def ack_buckets(produced: DataFrame) -> DataFrame:
    """Per (run, topic, partition, second): the first and last acknowledgement and how many."""
    return (produced.filter((F.col("status") == "ok") & F.col("ack_ts_ms").isNotNull())
            .withColumn("sec", F.floor(F.col("ack_ts_ms") / BUCKET_MS))
            .groupBy(*KEY, "sec")
            .agg(F.min("ack_ts_ms").alias("first_ack"), F.max("ack_ts_ms").alias("last_ack"),
                 F.count(F.lit(1)).alias("acks")))


def producer_usage(produced: DataFrame) -> DataFrame:
    """Per (run, producer, topic, acks): the first and last send."""
    return (produced.groupBy("run", "producer", "topic", "acks")
            .agg(F.min("send_ts_ms").alias("lo"), F.max("send_ts_ms").alias("hi")))


def fold_usage(rows: list[dict]) -> tuple[dict[int, dict[str, dict[str, list]]], dict[int, tuple[int, int]]]:
    """producer_usage's rows as (run -> producer -> the topics and acks it used, run -> send span)."""
    producers: dict[int, dict[str, dict[str, list]]] = {}
    span: dict[int, tuple[int, int]] = {}
    for r in rows:
        used = producers.setdefault(r["run"], {}).setdefault(r["producer"], {"topics": [], "acks": []})
        for k, v in (("topics", r["topic"]), ("acks", r["acks"])):
            if v not in used[k]:
                used[k].append(v)
        lo, hi = span.get(r["run"], (r["lo"], r["hi"]))
        span[r["run"]] = (min(lo, r["lo"]), max(hi, r["hi"]))
    return producers, span
