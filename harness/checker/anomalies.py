"""One function per anomaly class of the history contract, each returning that class's findings.

Each function's docstring is the contract's definition (docs: history-contract.md). A finding is
one row per counted instance in the common shape (``finding``): the kind, the run, who it is
attributed to (a producer, or a topic for what belongs to a partition), a sort key that orders the
examples, and the example itself as JSON. ``analysis`` wires these together; adding a class is a
function here, its entry in ANOMALY_FINDINGS, a promise (promises.py) and a test.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from harness.checker.keys import KEY
from harness.checker.prepare import (
    ABOVE_HW,
    ACKS0,
    IN_FINAL,
    IN_LIVE,
    Inputs,
    has,
    in_final,
    small,
    uncommitted,
)
from harness.checker.prepare_v2 import READ_COMMITTED, committed, readable

REGRESSION_COLS = ["topic", "partition", "seq", "offset", "value", "prev_offset", "prev_seq"]
SKIP_BUCKET = 4096  # offsets per bucket of the poll_skip range join (a gap spans one or two)


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


def at_or_above_hw() -> Column:
    """A live read returned at an offset at or above the hw recorded with it."""
    return F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))


def first_reads(i: Inputs, found: DataFrame, which: Column) -> DataFrame:
    """Per row of ``found`` (per_offset rows: the key and any flags), its earliest live read that
    ``which`` selects: who read it, under which hw, and when."""
    key = [*i.pk.cols, "offset", "value"]
    reads = (i.pk.encode(i.live.select(*KEY, "offset", "value", "hw", "poll_ts_ms", "consumer"))
             .join(small(found, i.uncommitted_rows), on=key, how="inner").filter(which))
    kept = [c for c in found.columns if c not in key]
    return (reads.groupBy(*key, *kept).agg(F.min(F.struct("poll_ts_ms", "hw", "consumer")).alias("read"))
            .select(*key, *kept, "read.consumer", "read.hw", "read.poll_ts_ms"))


def uncommitted_read(i: Inputs) -> DataFrame:
    """uncommitted_read: distinct (topic, partition, offset, value) returned in phase "live" that are
    not in the final log at that offset, or were returned at an offset >= the hw recorded with them.

    The example is the earliest offending read: any read of a record missing from the final log,
    otherwise a read at or above its hw (not some other, committed read of the same record)."""
    found = i.offs.filter(uncommitted()).select(*i.pk.cols, "offset", "value", "flags")
    first = first_reads(i, found, ~has(IN_FINAL) | at_or_above_hw()).select(
        "*", (~has(IN_FINAL)).cast("int").alias("not_in_final"), has(ABOVE_HW).cast("int").alias("at_or_above_hw"))
    return finding("uncommitted_read", i.pk.decode(first).select(
        "run", "topic", "partition", "offset", "value", "consumer", "hw", "poll_ts_ms", "not_in_final",
        "at_or_above_hw"), "topic", "poll_ts_ms")


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
    adjacent pairs whose later row has a lower or equal offset.

    The pairs are the poll marks flagged ``regressed`` (one window pass shared with poll_skip)."""
    return finding("nonmonotonic_poll", i.v2.polls.filter("regressed").select("run", "consumer", *REGRESSION_COLS),
                   "topic", "seq")


def phantom(i: Inputs) -> DataFrame:
    """phantom: distinct values in the final log that never appear in produced.parquet.

    The example is the value's lowest place in the final log."""
    ph = (i.odd_final.filter("is_phantom")
          .groupBy("run", "value")
          .agg(F.min(F.struct("offset", "topic", "partition")).alias("at"))
          .select("run", "value", "at.topic", "at.partition", "at.offset"))
    return finding("phantom", ph, "topic", "offset")


def aborted_read(i: Inputs) -> DataFrame | None:
    """aborted_read: distinct values whose outcome is "aborted" that appear in R (the rows of
    read_committed readers).

    The example is the value's transaction and its earliest read by a read_committed reader."""
    if i.v2.outcomes is None:
        return None
    aborted = i.v2.outcomes.filter(F.col("outcome") == "aborted").select("run", "value", "txn", "producer")
    reads = (read_committed_rows(i).join(aborted, on=["run", "value"], how="inner")
             .groupBy("run", "value", "txn", "producer")
             .agg(F.count(F.lit(1)).alias("reads"),
                  F.min(F.struct("poll_ts_ms", "consumer", "topic", "partition", "offset")).alias("r")))
    return finding("aborted_read", reads.select("run", "value", "txn", "producer", "r.topic", "r.partition", "r.offset",
                                                "r.consumer", "r.poll_ts_ms", "reads"), "topic", "poll_ts_ms")


def torn_txn(i: Inputs) -> DataFrame | None:
    """torn_txn: distinct transactions with outcome "committed" such that at least one of their
    produced rows' values is in the final log and at least one is absent from it.

    The example gives the transaction's size, how many of its records the final log holds, and the
    first five that it lacks."""
    if i.v2.outcomes is None:
        return None
    done = i.v2.outcomes.filter(F.col("outcome") == "committed").select("run", "txn", "producer", "value",
                                                                         "commit_ts_ms")
    here = done.join(present_values(i), on=["run", "value"], how="left")
    per_txn = (here.groupBy("run", "txn", "producer", "commit_ts_ms")
               .agg(F.count(F.lit(1)).alias("records"), F.count("final_at").alias("in_final"),
                    F.slice(F.sort_array(F.collect_list(F.when(F.col("final_at").isNull(), F.col("value")))), 1, 5)
                    .alias("missing")))
    torn = per_txn.filter((F.col("in_final") >= 1) & (F.col("in_final") < F.col("records")))
    return finding("torn_txn", torn, "producer", "commit_ts_ms")


def precommitted_read(i: Inputs) -> DataFrame | None:
    """precommitted_read: distinct values with outcome "committed" that appear in R with poll_ts_ms <
    their transaction's commit_ts_ms.

    The example is the earliest such read, with how long before the commit call it came."""
    if i.v2.outcomes is None:
        return None
    done = i.v2.outcomes.filter(F.col("outcome") == "committed").select("run", "value", "txn", "producer",
                                                                         "commit_ts_ms")
    early = (read_committed_rows(i).join(done, on=["run", "value"], how="inner")
             .filter(F.col("poll_ts_ms") < F.col("commit_ts_ms"))
             .groupBy("run", "value", "txn", "producer", "commit_ts_ms")
             .agg(F.min(F.struct("poll_ts_ms", "consumer", "topic", "partition", "offset")).alias("r")))
    return finding("precommitted_read", early.select(
        "run", "value", "txn", "producer", "r.topic", "r.partition", "r.offset", "r.consumer", "r.poll_ts_ms",
        "commit_ts_ms", (F.col("commit_ts_ms") - F.col("r.poll_ts_ms")).alias("before_commit_ms")),
        "topic", "poll_ts_ms")


def poll_skip(i: Inputs) -> DataFrame:
    """poll_skip: for each (consumer, topic, partition, generation), the consumer's "live" rows in seq
    order; let m be the highest offset among its rows up to and including row i. A pair (row i, row
    i+1) counts when row i+1's offset o is above m and the final log of that partition holds a value
    readable by this consumer at an offset strictly between m and o. (Generation null is one group.)

    The gaps (o > m + 1) come from the poll marks; the final log is joined to them by partition and
    offset bucket, so the join stays an equality join however many gaps there are. The example gives
    the consumer, generation, m and o, how many readable records lie between, and the first of them."""
    gaps = (i.v2.polls.filter("gap")
            .select("run", "consumer", "topic", "partition", "generation", "isolation", "seq", "next_seq",
                    "poll_ts_ms", F.col("high").alias("m"), F.col("next_offset").alias("o"))
            .withColumn("bucket", F.explode(F.sequence(F.floor((F.col("m") + 1) / SKIP_BUCKET),
                                                       F.floor((F.col("o") - 1) / SKIP_BUCKET)))))
    fin = i.v2.final.withColumn("bucket", F.floor(F.col("offset") / SKIP_BUCKET))
    hits = (fin.join(i.pk.encode(gaps), on=[*i.pk.cols, "bucket"], how="inner")
            .filter((F.col("offset") > F.col("m")) & (F.col("offset") < F.col("o")) & readable()))
    pair = [*i.pk.cols, "consumer", "generation", "isolation", "seq", "next_seq", "poll_ts_ms", "m", "o"]
    skips = hits.groupBy(*pair).agg(F.count(F.lit(1)).alias("skipped"),
                                    F.min(F.struct("offset", "value")).alias("first"))
    return finding("poll_skip", i.pk.decode(skips.select(*pair, "skipped", F.col("first.offset").alias("first_skipped"),
                                                         F.col("first.value").alias("first_skipped_value"))),
                   "topic", "poll_ts_ms")


def group_unseen(i: Inputs) -> DataFrame | None:
    """group_unseen: distinct (group, value) pairs: the value is in the final log at an offset below the
    group's final committed offset for its partition (offsets.parquet, phase "final"), is readable by
    the group's isolation, and no consumer of that group returned that value (matched by value).

    A group's isolation is its consumers' (read_uncommitted when it returned nothing). The example
    is the record and the committed offset it lies below."""
    if i.v2.offsets is None:
        return None
    iso = (i.v2.consumed.filter(F.col("group").isNotNull()).groupBy("run", "group")
           .agg(F.max("isolation").alias("isolation")))
    below = (final_decoded(i).join(group_final_offsets(i), on=KEY, how="inner")
             .filter(F.col("offset") < F.col("committed_offset"))
             .join(iso, on=["run", "group"], how="left").filter(readable()))
    seen = i.v2.consumed.filter(F.col("group").isNotNull()).select("run", "group", "value").distinct()
    unseen = (below.join(seen, on=["run", "group", "value"], how="left_anti")
              .groupBy("run", "group", "value")
              .agg(F.min(F.struct("topic", "partition", "offset", "committed_offset")).alias("at")))
    return finding("group_unseen", unseen.select("run", "group", "value", "at.topic", "at.partition", "at.offset",
                                                 "at.committed_offset"), "group", "offset")


def offset_regression(i: Inputs) -> DataFrame | None:
    """offset_regression: for each (group, topic, partition), "live" rows of offsets.parquet ordered by
    (ts_ms, offset): adjacent pairs whose later offset is lower.

    The example is the commit that regressed and the one before it."""
    if i.v2.offsets is None:
        return None
    w = Window.partitionBy("run", "group", "topic", "partition").orderBy("ts_ms", "offset")
    commits = (i.v2.offsets.filter(F.col("phase") == "live")
               .select("run", "group", "topic", "partition", "offset", "ts_ms",
                       F.lag("offset").over(w).alias("prev_offset"), F.lag("ts_ms").over(w).alias("prev_ts_ms")))
    return finding("offset_regression", commits.filter(F.col("offset") < F.col("prev_offset")), "group", "ts_ms")


def copies(i: Inputs) -> DataFrame:
    """Every copier's sends: (run, producer, value, source, outcome, final_at: null when absent)."""
    copier = i.v2.copiers.select("run", "producer").distinct()
    sent = (i.produced.filter(F.col("source").isNotNull()).select("run", "producer", "value", "source")
            .join(copier, on=["run", "producer"], how="inner"))
    outcome = i.v2.outcomes.select("run", "value", "outcome")
    return (sent.join(outcome, on=["run", "value"], how="left")
            .join(present_values(i), on=["run", "value"], how="left"))


def eos_duplicate(i: Inputs) -> DataFrame | None:
    """eos_duplicate: for each copier, distinct source values that are the ``source`` of two or more
    distinct committed copies present in the final log.

    The example names the source and up to five of its copies; the finding is the copier's."""
    if i.v2.copiers is None or i.v2.outcomes is None:
        return None
    kept = copies(i).filter(committed() & F.col("final_at").isNotNull())
    dup = (kept.groupBy("run", "producer", "source")
           .agg(F.countDistinct("value").alias("copies"),
                F.slice(F.sort_array(F.collect_set("value")), 1, 5).alias("copy_values"))
           .filter(F.col("copies") >= 2))
    return finding("eos_duplicate", dup, "producer", "copies")


def eos_lost(i: Inputs) -> DataFrame | None:
    """eos_lost: for each copier, distinct committed values present in the final log of its input
    topics at offsets below its group's final committed offset for their partition, that are the
    ``source`` of no copy present in the final log whose outcome is "committed" or "unknown".

    The example is the input record and the committed offset it lies below; the finding is the
    copier's."""
    if i.v2.copiers is None or i.v2.outcomes is None or i.v2.offsets is None:
        return None
    inputs = i.v2.copiers.filter(F.col("role") == "in").select("run", "producer", "group", "topic")
    consumed_by_group = (final_decoded(i).filter("committed").join(inputs, on=["run", "topic"], how="inner")
                         .join(group_final_offsets(i), on=["run", "group", "topic", "partition"], how="inner")
                         .filter(F.col("offset") < F.col("committed_offset")))
    landed = (copies(i).filter(F.col("final_at").isNotNull() & F.col("outcome").isin("committed", "unknown"))
              .select("run", "producer", F.col("source").alias("value")).distinct())
    lost_ = (consumed_by_group.join(landed, on=["run", "producer", "value"], how="left_anti")
             .groupBy("run", "producer", "value")
             .agg(F.min(F.struct("topic", "partition", "offset", "committed_offset", "group")).alias("at")))
    return finding("eos_lost", lost_.select("run", "producer", "value", "at.group", "at.topic", "at.partition",
                                            "at.offset", "at.committed_offset"), "producer", "offset")


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


Finder = Callable[[Inputs], DataFrame | None]  # None: the run has no data this class needs (count 0)
ANOMALY_FINDINGS: dict[str, Finder] = {
    "lost": lost,
    "divergence": divergence,
    "uncommitted_read": uncommitted_read,
    "duplicate": duplicate,
    "nonmonotonic_send": nonmonotonic_send,
    "nonmonotonic_poll": nonmonotonic_poll,
    "phantom": phantom,
    "aborted_read": aborted_read,
    "torn_txn": torn_txn,
    "precommitted_read": precommitted_read,
    "poll_skip": poll_skip,
    "group_unseen": group_unseen,
    "offset_regression": offset_regression,
    "eos_duplicate": eos_duplicate,
    "eos_lost": eos_lost,
}
REPORTED_FINDINGS: dict[str, Finder] = {
    "landed_info": landed_info,
    "landed_fail": landed_fail,
    "acks0_missing": acks0_missing,
    "stale_hw_read": stale_hw_read,
    "group_redelivered": group_redelivered,
}
