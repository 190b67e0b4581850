"""What a check reports beside the anomalies, each counted like one: indeterminate or failed writes
that landed, acks=0 writes that did not, what a group returned twice, the reads counted only by
uncommitted_read's hw rule whose records the final log holds (stale_hw_read), the lost writes
and the reads that retention deleted the records of (retention_deleted, retention_read), or an
operator with their topic (topic_deleted, topic_deleted_read), and the share deliveries a new
share-partition leader gave again as the same attempt (share_forgotten_delivery)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.share_over_delivered import deliveries_with_limits
from harness.checker.findings import Finder, at_or_above_hw, finding, first_reads, uncommitted_first_reads
from harness.checker.prepare import ABOVE_HW, ACKS0, IN_FINAL, IN_LIVE, IN_REPLICA, NEVER, Inputs, has, in_final
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def stale_hw_read(i: Inputs) -> DataFrame:
    """Not an anomaly on its own, reported: the uncommitted_read rows counted only by the hw rule,
    whose value is in the final log at the offset it was read at.

    Kafka's fetch response carries the high watermark the leader had *before* it read the records
    (``Partition.readRecords`` keeps ``initialHighWatermark``, then reads up to the high watermark of
    that moment), so a record committed while the leader read comes back at or above the hw it came
    with. Such a read is no evidence that a consumer saw uncommitted data, and the judge does not hold
    it against the promise; a read of a record missing from the final log still is."""
    found = i.offs.filter(has(IN_LIVE) & has(IN_FINAL) & has(ABOVE_HW)).select(*i.pk.cols, "offset", "value")
    return finding("stale_hw_read", i.pk.decode(first_reads(i, found, at_or_above_hw())).select(
        "run", "topic", "partition", "offset", "value", "consumer", "hw", "poll_ts_ms"), "topic", "poll_ts_ms")


def first_lost_acks(i: Inputs) -> DataFrame:
    """Each value ``lost`` counts, with its earliest acknowledgement: producer, topic, partition,
    ``ack_offset`` and ``ack_ts_ms``."""
    return (i.sends.filter(F.col("kind") == "lost").groupBy("run", "value")
            .agg(F.min(F.struct("ack_ts_ms", "producer", "topic", "partition", "offset")).alias("s"))
            .select("run", "value", "s.producer", "s.topic", "s.partition", F.col("s.offset").alias("ack_offset"),
                    "s.ack_ts_ms"))


def retention_deleted(i: Inputs) -> DataFrame | None:
    """Not an anomaly on its own, reported: the values ``lost`` counts whose acknowledged offset is
    below their partition's log start offset after the run, by topic.

    A partition's log start moves up only when whole segments are deleted: by time or size retention
    (kchaos never deletes records itself). A leader whose wall clock jumps past ``retention.ms`` finds
    every segment older than that and deletes it, by design; those records are gone from every
    replica, and the judge does not hold them against the durability promise. A lost value at or
    above the log start still is."""
    if i.log_starts is None:
        return None
    lost = first_lost_acks(i)
    below = (lost.join(F.broadcast(i.log_starts), on=["run", "topic", "partition"], how="inner")
             .filter(F.col("ack_offset") < F.col("log_start")))
    return finding("retention_deleted", below.select("run", "topic", "partition", "ack_offset", "log_start", "value",
                                                     "producer", "ack_ts_ms"), "topic", "ack_ts_ms")


def retention_read(i: Inputs) -> DataFrame | None:
    """Not an anomaly on its own, reported: the uncommitted_read rows whose offset is below their
    partition's log start offset after the run, by topic.

    The final read starts at the log start, so a record retention deleted is missing from the final
    log whether or not it was ever committed: a read of it is no evidence that a consumer saw
    uncommitted data, and the judge does not hold it against the promise. A read of a missing
    record at or above the log start still is."""
    if i.log_starts is None:
        return None
    reads = i.pk.decode(uncommitted_first_reads(i))
    below = (reads.join(F.broadcast(i.log_starts), on=["run", "topic", "partition"], how="inner")
             .filter(F.col("offset") < F.col("log_start")))
    return finding("retention_read", below.select("run", "topic", "partition", "offset", "log_start", "value",
                                                  "consumer", "poll_ts_ms"), "topic", "poll_ts_ms")


def topic_deleted(i: Inputs) -> DataFrame | None:
    """Not an anomaly on its own, reported: the values ``lost`` counts whose earliest acknowledgement
    came before their topic was last created again under its name (recreate_topic's events), by topic.

    Until the new topic serves, the only topic of that name is the one the operator deleted: what it
    acknowledged was deleted with it, and the judge does not hold that against the durability
    promise. A lost value acknowledged after the new topic served still is."""
    if i.recreations is None:
        return None
    lost = first_lost_acks(i)
    before = (lost.join(F.broadcast(i.recreations), on=["run", "topic"], how="inner")
              .filter(F.col("ack_ts_ms") < F.col("created_ms")))
    return finding("topic_deleted", before.select("run", "topic", "partition", "ack_offset", "value", "producer",
                                                  "ack_ts_ms", "deleted_ms"), "topic", "ack_ts_ms")


def topic_deleted_read(i: Inputs) -> DataFrame | None:
    """Not an anomaly on its own, reported: the uncommitted_read rows whose value was first sent
    before its topic was last created again under its name (recreate_topic's events).

    A record sent before the new topic served went to the topic the operator deleted: the final log,
    the new topic's, cannot hold it, so a read of it is no evidence that a consumer saw uncommitted
    data, and the judge does not hold it against the promise."""
    if i.recreations is None:
        return None
    reads = (i.pk.decode(uncommitted_first_reads(i))
             .join(F.broadcast(i.recreations), on=["run", "topic"], how="inner"))
    sent = i.produced.groupBy("run", "value").agg(F.min("send_ts_ms").alias("send_ts_ms"))
    before = (reads.join(sent, on=["run", "value"], how="inner")
              .filter(F.col("send_ts_ms") < F.col("created_ms")))
    return finding("topic_deleted_read", before.select("run", "topic", "partition", "offset", "value", "consumer",
                                                       "poll_ts_ms", "send_ts_ms"), "topic", "poll_ts_ms")


def topic_deleted_offset(i: Inputs) -> DataFrame | None:
    """Not an anomaly on its own, reported: the offsets divergence counts on a topic an operator
    deleted and created again (recreate_topic's events) where at most one value was seen by the new
    topic: held by a replica or the final read (both after healing), or read live and first sent at
    or after the new topic served.

    The new topic's offsets start again at 0, so a read of the deleted topic's record stands beside
    the new topic's record at the same offset; the judge does not hold that against the promise.
    Replicas that disagree with each other, or with a read of the new topic, still are."""
    if i.recreations is None:
        return None
    sent = i.produced.groupBy("run", "value").agg(F.min("send_ts_ms").alias("send_ts_ms"))
    seen = (i.pk.decode(i.offs.select(*i.pk.cols, "offset", "value", "flags"))
            .join(F.broadcast(i.recreations), on=["run", "topic"], how="inner")
            .join(sent, on=["run", "value"], how="left"))
    new = (has(IN_FINAL) | has(IN_REPLICA)
           | (has(IN_LIVE) & (F.coalesce(F.col("send_ts_ms"), F.lit(NEVER)) >= F.col("created_ms"))))
    offsets = (seen.groupBy("run", "topic", "partition", "offset")
               .agg(F.count(F.lit(1)).alias("values"), F.sum(new.cast("int")).alias("new_values"),
                    F.min("value").alias("v_min"), F.max("value").alias("v_max"))
               .filter((F.col("values") >= 2) & (F.col("new_values") <= 1)))
    return finding("topic_deleted_offset", offsets.select("run", "topic", "partition", "offset", "values", "v_min",
                                                          "v_max"), "topic", "offset")


def share_forgotten_delivery(i: Inputs) -> DataFrame | None:
    """Not an anomaly on its own, reported: the (group, value) pairs share_over_delivered counts for
    more deliveries than the limit whose delivery counts, as the brokers numbered them, stay within
    it: no count above the limit, no more distinct counts than the limit, and every count given more
    than once given again across a leader change of the value's partition (one the state samples
    place between its first and its last delivery under that count: the last sample showing the old
    leader came before the later delivery, the first showing the new one after the earlier).

    A share partition's leader raises a record's delivery count in memory when a member acquires it
    and writes it to the share coordinator only when the record is acknowledged, released or its
    lock runs out (SharePartition.acquire; writeShareGroupState). A new leader loads the state
    written before it, so a delivery in flight when the leadership moved is given again under the
    same count: KIP-932's share-partition state does not record Acquired, "in the unlikely event of
    a share-partition leader crash, memory of the in-flight delivery will be lost". The judge does
    not hold such pairs against the attempt limit; a count given twice without a leader change, or
    a delivery count above the limit, still is."""
    d = deliveries_with_limits(i)
    if d is None or i.v2.leader_changes is None:
        return None
    per_count = (d.groupBy("run", "group", "value", "topic", "partition", "delivery_count")
                 .agg(F.count(F.lit(1)).alias("n"), F.min("ts_ms").alias("first_ts"), F.max("ts_ms").alias("last_ts"),
                      F.first("limit").alias("limit")))
    repeated = per_count.filter((F.col("n") > 1) & F.col("delivery_count").isNotNull())
    changes = F.broadcast(i.v2.leader_changes.withColumnRenamed("ts_ms", "change_ts"))
    across = (repeated.join(changes, on=["run", "topic", "partition"], how="inner")
              .filter((F.col("change_ts") > F.col("first_ts")) & (F.col("before_ms") < F.col("last_ts")))
              .select("run", "group", "value", "delivery_count").distinct()
              .withColumn("across", F.lit(1)))
    per_value = (per_count.join(across, on=["run", "group", "value", "delivery_count"], how="left")
                 .groupBy("run", "group", "value")
                 .agg(F.sum("n").alias("deliveries"), F.count(F.lit(1)).alias("counts"),
                      F.max("delivery_count").alias("max_delivery_count"), F.first("limit").alias("limit"),
                      F.sum(F.when(F.col("delivery_count").isNull(), 1).otherwise(0)).alias("unnumbered"),
                      F.sum(F.when((F.col("n") > 1) & F.col("across").isNull(), 1).otherwise(0)).alias("unexplained"),
                      F.min("first_ts").alias("first_ts_ms")))
    limit = F.col("limit")
    forgotten = per_value.filter((F.col("deliveries") > limit) & (F.col("max_delivery_count") <= limit)
                                 & (F.col("counts") <= limit) & (F.col("unnumbered") + F.col("unexplained") == 0))
    return finding("share_forgotten_delivery", forgotten.drop("unnumbered", "unexplained"), "group", "first_ts_ms")


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


def group_redelivered(i: Inputs) -> DataFrame:
    """Not an anomaly, reported: distinct (group, value) pairs the group's members returned more than
    once, live: the price of at-least-once after a rebalance, a crash or a refused commit."""
    again = (i.v2.consumed.filter(F.col("group").isNotNull() & (F.col("phase") == "live"))
             .groupBy("run", "group", "value")
             .agg(F.count(F.lit(1)).alias("times"), F.sort_array(F.collect_set("consumer")).alias("consumers"),
                  F.min("poll_ts_ms").alias("first_ts_ms"))
             .filter(F.col("times") > 1))
    return finding("group_redelivered", again, "group", "first_ts_ms")


def acks0_missing(i: Inputs) -> DataFrame:
    """Not an anomaly, reported: distinct values sent with acks "0" absent from the final log."""
    missing = (i.vals.filter(has(ACKS0) & ~in_final()).select("run", "value").distinct()
               .withColumn("none", F.lit("")).withColumn("zero", F.lit(0)))
    return finding("acks0_missing", missing, "none", "zero")


REPORTED_FINDINGS: dict[str, Finder] = {
    "landed_info": landed_info,
    "landed_fail": landed_fail,
    "acks0_missing": acks0_missing,
    "stale_hw_read": stale_hw_read,
    "retention_deleted": retention_deleted,
    "retention_read": retention_read,
    "topic_deleted": topic_deleted,
    "topic_deleted_read": topic_deleted_read,
    "topic_deleted_offset": topic_deleted_offset,
    "group_redelivered": group_redelivered,
    "share_forgotten_delivery": share_forgotten_delivery,
}
