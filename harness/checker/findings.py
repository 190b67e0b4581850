"""What the anomaly classes' Spark counts share: the common shape of a finding, and the frames
several classes read (the final log with each value's place, read_committed reads, each group's
final offsets, every copier's copies)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.checker.keys import KEY
from harness.checker.prepare import IN_FINAL, Inputs, has, in_final, small, uncommitted
from harness.checker.prepare_txns_groups import READ_COMMITTED
from harness.checker.spark_api import F, Window

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

REGRESSION_COLS = ["topic", "partition", "seq", "offset", "value", "prev_offset", "prev_seq"]
Finder = Callable[[Inputs], "DataFrame | None"]  # None: the run has no data this class needs (count 0)


def finding(kind: str, df: DataFrame, attr: str, sort: str) -> DataFrame:
    """Rows of ``df`` as findings of ``kind``: (kind, run, attr, sort, payload as JSON of every
    column but run). The payload is the star less run, so building a finding asks the server
    nothing (a column list would cost a round trip each)."""
    return df.select(
        F.lit(kind).alias("kind"), "run", F.col(attr).cast("string").alias("attr"),
        F.col(sort).cast("long").alias("sort"), F.to_json(F.struct("*").dropFields("run")).alias("payload"),
    )


def adjacent_regressions(rows: DataFrame, who: str) -> DataFrame:
    """Per (run, ``who``, topic, partition), in seq order: each row whose offset is lower than or equal
    to the offset of the row before it, with that row's offset and seq."""
    w = Window.partitionBy("run", who, "topic", "partition").orderBy("seq")
    prev = (rows.select("run", who, "topic", "partition", "seq", "offset", "value")
            .withColumn("prev_offset", F.lag("offset").over(w)).withColumn("prev_seq", F.lag("seq").over(w)))
    return (prev.filter(F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset")))
            .select("run", who, *REGRESSION_COLS))


def read_committed_rows(i: Inputs) -> DataFrame:
    """R: the consumed rows of read_committed readers."""
    return (i.v2.consumed.filter(F.col("isolation") == READ_COMMITTED)
            .select("run", "value", "consumer", "topic", "partition", "offset", "poll_ts_ms"))


def present_values(i: Inputs) -> DataFrame:
    """(run, value, final_at) of every value in the final log: its lowest place there."""
    return (i.pk.decode(i.vals.filter(in_final()).select(*i.pk.cols, "value", "first_offset"))
            .groupBy("run", "value").agg(F.min(F.struct("first_offset", "topic", "partition")).alias("final_at")))


def final_decoded(i: Inputs) -> DataFrame:
    """The final log as (run, topic, partition, offset, value, committed)."""
    return i.pk.decode(i.v2.final)


def group_final_offsets(i: Inputs) -> DataFrame:
    """Each group's committed offset read after healing: (run, group, topic, partition, committed_offset)."""
    return (i.v2.offsets.filter(F.col("phase") == "final")
            .select("run", "group", "topic", "partition", F.col("offset").alias("committed_offset")))


def at_or_above_hw() -> Column:
    """A live read returned at an offset at or above the hw recorded with it."""
    return F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))


def first_reads(i: Inputs, found: DataFrame, which: Column, kept: tuple[str, ...] = ()) -> DataFrame:
    """Per row of ``found`` (per_offset rows: the key, then the columns ``kept`` names), its earliest
    live read that ``which`` selects: who read it, under which hw, and when."""
    key = [*i.pk.cols, "offset", "value"]
    reads = (i.pk.encode(i.live.select(*KEY, "offset", "value", "hw", "poll_ts_ms", "consumer"))
             .join(small(found, i.uncommitted_rows), on=key, how="inner").filter(which))
    return (reads.groupBy(*key, *kept).agg(F.min(F.struct("poll_ts_ms", "hw", "consumer")).alias("read"))
            .select(*key, *kept, "read.consumer", "read.hw", "read.poll_ts_ms"))


def uncommitted_first_reads(i: Inputs) -> DataFrame:
    """uncommitted_read's rows (per_offset rows of live reads missing from the final log at their
    offset, or read at or above their hw), each with its earliest offending read: any read of a
    record missing from the final log, otherwise a read at or above its hw. The anomaly and the
    findings that excuse some of its rows (stale_hw_read aside) count these same rows."""
    found = i.offs.filter(uncommitted()).select(*i.pk.cols, "offset", "value", "flags")
    return first_reads(i, found, ~has(IN_FINAL) | at_or_above_hw(), kept=("flags",))


def copies(i: Inputs) -> DataFrame:
    """Every copier's sends: (run, producer, value, source, outcome, final_at: null when absent)."""
    copier = i.v2.copiers.select("run", "producer").distinct()
    sent = (i.produced.filter(F.col("source").isNotNull()).select("run", "producer", "value", "source")
            .join(copier, on=["run", "producer"], how="inner"))
    outcome = i.v2.outcomes.select("run", "value", "outcome")
    return (sent.join(outcome, on=["run", "value"], how="left")
            .join(present_values(i), on=["run", "value"], how="left"))


def delivered_after_ack(i: Inputs, ack_type: str) -> DataFrame | None:
    """(run, group, value, ack_member, ack_ts_ms, acked_count, member, ts_ms, delivery_count, topic,
    partition, offset): for each (group, value) acknowledged as ``ack_type`` with outcome "ok" and
    delivered again after an acknowledgement both in time and in count (a delivery_count above the
    acknowledging member's last delivery of the value at or before it), the earliest such pair;
    None without share acknowledgements or deliveries. Time alone misleads (a member frozen with a
    fetch response in hand returns records acquired long before), and so does the count alone (a
    late "ok" for a record archived meanwhile follows deliveries to others it did not precede)."""
    if i.v2.share_acks is None or i.v2.deliveries is None:
        return None
    d = i.v2.deliveries.select("run", "group", "member", "value", F.col("ts_ms").alias("d_ts"),
                               F.coalesce("delivery_count", F.lit(0)).alias("d_count"))
    acked = (i.v2.share_acks.filter((F.col("type") == ack_type) & (F.col("outcome") == "ok"))
             .select("run", "group", "member", "value", F.col("ts_ms").alias("ack_ts_ms"))
             .join(d, on=["run", "group", "member", "value"], how="inner")
             .filter(F.col("d_ts") <= F.col("ack_ts_ms"))
             .groupBy("run", "group", "member", "value", "ack_ts_ms")
             .agg(F.max(F.struct("d_ts", "d_count")).alias("last"))
             .select("run", "group", "value", "ack_ts_ms", F.col("member").alias("ack_member"),
                     F.col("last.d_count").alias("acked_count")))
    later = (i.v2.deliveries.join(acked, on=["run", "group", "value"], how="inner")
             .filter((F.coalesce("delivery_count", F.lit(0)) > F.col("acked_count"))
                     & (F.col("ts_ms") > F.col("ack_ts_ms")))
             .groupBy("run", "group", "value")
             .agg(F.min(F.struct("ack_ts_ms", "ack_member", "acked_count", "ts_ms", "member", "delivery_count",
                                 "topic", "partition", "offset")).alias("d")))
    return later.select("run", "group", "value", "d.ack_member", "d.ack_ts_ms", "d.acked_count", "d.member",
                        "d.ts_ms", "d.delivery_count", "d.topic", "d.partition", "d.offset")
