"""One function per anomaly class of the history contract, each returning that class's findings.

Each function's docstring is the contract's definition (docs: history-contract.md). A finding is
one row per counted instance in the common shape (``finding``): the kind, the run, who it is
attributed to (a producer, or a topic for what belongs to a partition), a sort key that orders the
examples, and the example itself as JSON. ``analysis`` wires these together; adding a class is a
function here, its entry in ANOMALY_FINDINGS, a promise (promises.py) and a test.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from harness.checker.keys import KEY
from harness.checker.prepare import (
    ABOVE_HW,
    ACKS0,
    IN_FINAL,
    Inputs,
    has,
    in_final,
    small,
    uncommitted,
)

REGRESSION_COLS = ["topic", "partition", "seq", "offset", "value", "prev_offset", "prev_seq"]


def finding(kind: str, df: DataFrame, attr: str, sort: str) -> DataFrame:
    """Rows of ``df`` as findings of ``kind``: (kind, run, attr, sort, payload as JSON)."""
    payload = [c for c in df.columns if c != "run"]
    return df.select(
        F.lit(kind).alias("kind"), "run", F.col(attr).cast("string").alias("attr"),
        F.col(sort).cast("long").alias("sort"), F.to_json(F.struct(*payload)).alias("payload"),
    )


def adjacent_regressions(rows: DataFrame, who: str) -> DataFrame:
    """Per (run, ``who``, topic, partition), in seq order: each row whose offset is lower than or equal
    to the offset of the row before it, with that row's offset and seq."""
    w = Window.partitionBy("run", who, "topic", "partition").orderBy("seq")
    prev = (rows.select("run", who, "topic", "partition", "seq", "offset", "value")
            .withColumn("prev_offset", F.lag("offset").over(w)).withColumn("prev_seq", F.lag("seq").over(w)))
    return (prev.filter(F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset")))
            .select("run", who, *REGRESSION_COLS))


def lost(i: Inputs) -> DataFrame:
    """lost: distinct values with status "ok" and acks other than "0" that are absent from the final
    log (of the partition they were acknowledged in).

    The example is the value's earliest acknowledged send; the finding is its producer's."""
    first_ack = (i.sends.filter(F.col("kind") == "lost").groupBy("run", "value")
                 .agg(F.min(F.struct("ack_ts_ms", "producer", "topic", "partition", "offset", "acks")).alias("s")))
    return finding("lost", first_ack.select("run", "value", "s.producer", "s.topic", "s.partition",
                                            F.col("s.offset").alias("ack_offset"), "s.acks", "s.ack_ts_ms"),
                   "producer", "ack_ts_ms")


def divergence(i: Inputs) -> DataFrame:
    """divergence: distinct (topic, partition, offset) at which two or more different values were
    observed, over replicas.parquet and consumed.parquet (both phases) together.

    A window count over the per-offset rows, which are clustered by offset already: one sort, no
    shuffle. The example gives how many values and the least and greatest of them."""
    at = [*i.pk.cols, "offset"]
    values_here = F.count(F.lit(1)).over(Window.partitionBy(*at))
    div = (i.offs.select(*at, "value", values_here.alias("n")).filter(F.col("n") >= 2)
           .groupBy(*at)
           .agg(F.count(F.lit(1)).alias("values"), F.min("value").alias("v_min"), F.max("value").alias("v_max")))
    return finding("divergence", i.pk.decode(div), "topic", "offset")


def uncommitted_read(i: Inputs) -> DataFrame:
    """uncommitted_read: distinct (topic, partition, offset, value) returned in phase "live" that are
    not in the final log at that offset, or were returned at an offset >= the hw recorded with them.

    The example is the earliest offending read: any read of a record missing from the final log,
    otherwise a read at or above its hw (not some other, committed read of the same record)."""
    key = [*i.pk.cols, "offset", "value"]
    found = i.offs.filter(uncommitted()).select(*key, "flags")
    offending = ~has(IN_FINAL) | (F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw")))
    reads = (i.pk.encode(i.live.select(*KEY, "offset", "value", "hw", "poll_ts_ms", "consumer"))
             .join(small(found, i.uncommitted_rows), on=key, how="inner").filter(offending))
    first = (reads.groupBy(*key, "flags").agg(F.min(F.struct("poll_ts_ms", "hw", "consumer")).alias("read"))
             .select(*key, "read.consumer", "read.hw", "read.poll_ts_ms",
                     (~has(IN_FINAL)).cast("int").alias("not_in_final"),
                     has(ABOVE_HW).cast("int").alias("at_or_above_hw")))
    return finding("uncommitted_read", i.pk.decode(first).select(
        "run", "topic", "partition", "offset", "value", "consumer", "hw", "poll_ts_ms", "not_in_final",
        "at_or_above_hw"), "topic", "poll_ts_ms")


def duplicate(i: Inputs) -> DataFrame:
    """duplicate: distinct values present at two or more offsets of the final log.

    The example gives the number of copies and the first five places; the finding is the
    producer's that sent the value (the least name, if several did)."""
    senders = (i.sends.filter(F.col("kind") == "dup").groupBy("run", "value")
               .agg(F.min("producer").alias("producer")))
    dup = (i.odd_final.filter("is_dup")
           .groupBy("run", "value")
           .agg(F.count(F.lit(1)).alias("copies"),
                F.slice(F.sort_array(F.collect_list(F.struct("topic", "partition", "offset"))), 1, 5).alias("at"))
           .join(senders, on=["run", "value"], how="left")
           .fillna({"producer": "(unknown)"}))
    return finding("duplicate", dup, "producer", "copies")


def nonmonotonic_send(i: Inputs) -> DataFrame:
    """nonmonotonic_send: for each (producer, topic, partition), taking its "ok" rows with acks other
    than "0" and an offset, in seq order: adjacent pairs whose later send got a lower or equal offset."""
    ok = i.produced.filter((F.col("status") == "ok") & (F.col("acks") != "0") & F.col("offset").isNotNull())
    return finding("nonmonotonic_send", adjacent_regressions(ok, "producer"), "producer", "seq")


def nonmonotonic_poll(i: Inputs) -> DataFrame:
    """nonmonotonic_poll: for each (consumer, topic, partition), its "live" rows in seq order:
    adjacent pairs whose later row has a lower or equal offset."""
    return finding("nonmonotonic_poll", adjacent_regressions(i.live, "consumer"), "topic", "seq")


def phantom(i: Inputs) -> DataFrame:
    """phantom: distinct values in the final log that never appear in produced.parquet.

    The example is the value's lowest place in the final log."""
    ph = (i.odd_final.filter("is_phantom")
          .groupBy("run", "value")
          .agg(F.min(F.struct("offset", "topic", "partition")).alias("at"))
          .select("run", "value", "at.topic", "at.partition", "at.offset"))
    return finding("phantom", ph, "topic", "offset")


def _landed(i: Inputs, kind: str) -> DataFrame:
    landed = (i.sends.filter(F.col("kind") == kind).groupBy("run", "value")
              .agg(F.first("producer").alias("producer"), F.first("topic").alias("topic"),
                   F.first("partition").alias("partition"), F.min("first_offset").alias("offset"),
                   F.first("error").alias("error"), F.first("send_ts_ms").alias("send_ts_ms")))
    return finding(kind, landed, "producer", "send_ts_ms")


def landed_info(i: Inputs) -> DataFrame:
    """Not an anomaly, reported: distinct values with status "info" (indeterminate) that are in the
    final log of the partition they were sent to."""
    return _landed(i, "landed_info")


def landed_fail(i: Inputs) -> DataFrame:
    """Not an anomaly, reported: distinct values with status "fail" that are in the final log of the
    partition they were sent to (a client that called a written record a definite failure)."""
    return _landed(i, "landed_fail")


def acks0_missing(i: Inputs) -> DataFrame:
    """Not an anomaly, reported: distinct values sent with acks "0" absent from the final log."""
    missing = (i.vals.filter(has(ACKS0) & ~in_final()).select("run", "value").distinct()
               .withColumn("none", F.lit("")).withColumn("zero", F.lit(0)))
    return finding("acks0_missing", missing, "none", "zero")


Finder = Callable[[Inputs], DataFrame]
ANOMALY_FINDINGS: dict[str, Finder] = {
    "lost": lost,
    "divergence": divergence,
    "uncommitted_read": uncommitted_read,
    "duplicate": duplicate,
    "nonmonotonic_send": nonmonotonic_send,
    "nonmonotonic_poll": nonmonotonic_poll,
    "phantom": phantom,
}
REPORTED_FINDINGS: dict[str, Finder] = {
    "landed_info": landed_info,
    "landed_fail": landed_fail,
    "acks0_missing": acks0_missing,
}
