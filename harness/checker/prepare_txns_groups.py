"""The frames the v2 anomalies read (transactions, copiers, groups), built once per check.

A v1 history has none of v2's files or columns; its v2 frames are then None (the anomalies that
need them count 0) except the two every consumer gets: the poll marks (``poll_marks``, which
nonmonotonic_poll reads too) and the final log with each value's readability.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.checker.contract import raise_if_invalid_v2, share_breaches
from harness.checker.spark_api import F, Window
from harness.history import RunDir, read_events
from harness.history.events import Event, State

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# Schemas as Spark SQL DDL: building them needs no PySpark import.
READ_COMMITTED = "read_committed"
POLL_COLS = ["run", "consumer", "topic", "partition", "generation", "isolation", "seq", "offset", "value",
             "poll_ts_ms"]
SHARE_GROUP_SCHEMA = ("`run` INT, `group` STRING, `topic` STRING, `partition` INT, `start_offset` BIGINT, "
    "`end_offset` BIGINT, `limit` INT, `isolation` STRING")
LEADER_CHANGE_SCHEMA = "`run` INT, `topic` STRING, `partition` INT, `ts_ms` BIGINT, `before_ms` BIGINT"
COPIER_SCHEMA = "`run` INT, `producer` STRING, `group` STRING, `topic` STRING, `role` STRING"


@dataclass
class V2Inputs:
    consumed: DataFrame  # every consumed row, v2 columns included (null where absent)
    polls: DataFrame  # poll_marks: the live rows a poll finding starts from (cached)
    final: DataFrame  # the final log keyed by pk: (pk, offset, value, committed)
    outcomes: DataFrame | None  # (run, value, txn, outcome, commit_ts_ms, producer) of transactional sends
    txns: DataFrame | None
    offsets: DataFrame | None
    copiers: DataFrame | None  # (run, producer, group, topic, role "in" or "out"), from run.json
    deliveries: DataFrame | None = None  # deliveries.parquet: what share groups' members were given
    share_acks: DataFrame | None = None  # share_acks.parquet: what they acknowledged, and how it ended
    share_groups: DataFrame | None = None  # share_groups_frame: each share group's partitions, from run.json
    leader_changes: DataFrame | None = None  # leader_changes_frame: when a share group's partitions changed leader


def committed(outcome: str = "outcome") -> Column:
    """A committed value: outside any transaction (outcome null) or in a committed one."""
    return F.col(outcome).isNull() | (F.col(outcome) == "committed")


def readable(isolation: str = "isolation") -> Column:
    """Whether a reader of ``isolation`` may return the row's value (``committed`` column)."""
    return ~F.col(isolation).eqNullSafe(F.lit(READ_COMMITTED)) | F.col("committed")


def poll_marks(live: DataFrame, by_generation: bool) -> DataFrame:
    """The live rows where a poll finding starts, from one pass of windows in seq order:

    - ``regressed``: read at an offset lower than or equal to the consumer's row before it in that
      partition (prev_offset, prev_seq): nonmonotonic_poll;
    - ``gap``: the next row of the same (consumer, partition, generation) is at an offset above the
      highest read so far there (high) plus one (next_offset, next_seq): where poll_skip looks.

    Without generations both windows are one (same partitioning and order), so v1 pays one sort.
    """
    part = ["run", "consumer", "topic", "partition"]
    w = Window.partitionBy(*part).orderBy("seq")
    wg = Window.partitionBy(*part, "generation").orderBy("seq") if by_generation else w
    rows = (live.select(*POLL_COLS)
            .withColumn("prev_offset", F.lag("offset").over(w)).withColumn("prev_seq", F.lag("seq").over(w))
            .withColumn("high", F.max("offset").over(wg.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
            .withColumn("next_offset", F.lead("offset").over(wg)).withColumn("next_seq", F.lead("seq").over(wg)))
    regressed = F.col("prev_offset").isNotNull() & (F.col("offset") <= F.col("prev_offset"))
    gap = F.col("next_offset").isNotNull() & (F.col("next_offset") > F.col("high") + 1)
    return rows.filter(regressed | gap).withColumn("regressed", regressed).withColumn("gap", gap)


def copiers_frame(spark: SparkSession, runs: list[RunDir]) -> DataFrame | None:
    """run.json's copiers as rows: one per (run, copier, topic it reads or writes)."""
    rows = [(i, c.producer, c.group, t, role)
            for i, r in enumerate(runs) for c in r.config.copiers
            for role, topics in (("in", c.input_topics), ("out", c.output_topics)) for t in topics]
    return spark.createDataFrame(rows, COPIER_SCHEMA) if rows else None


def share_groups_frame(spark: SparkSession, runs: list[RunDir]) -> DataFrame | None:
    """run.json's share groups as rows: one per (run, group, topic, partition) it read, with the
    offset it started from, its share-partition start offset after healing (``end_offset``: every
    offset below it is archived, null when it was not read), its delivery attempt limit and its
    isolation level (docs/share-groups.md)."""
    rows = []
    for i, r in enumerate(runs):
        for g in r.config.share_groups:
            for key, start in g.start_offsets.items():
                topic, _, part = key.rpartition(":")
                rows.append((i, g.name, topic, int(part), start, g.final_start_offsets.get(key),
                             g.delivery_count_limit, g.isolation))
    return spark.createDataFrame(rows, SHARE_GROUP_SCHEMA) if rows else None


def leader_changes(events: list[Event]) -> list[tuple[int, int, int]]:
    """(partition, ts_ms, before_ms) of each state sample showing a partition's live leader other
    than the last one seen (a leaderless sample is skipped): the leadership moved after before_ms,
    the last sample that showed the old leader, and by ts_ms. Samples can be seconds apart while the
    brokers do not answer, so the change is known only to lie in that span."""
    last: dict[int, tuple[int, int]] = {}  # partition -> (leader, ts_ms of the last sample showing it)
    out = []
    for e in events:
        if not isinstance(e, State) or not e.partitions:
            continue
        for p in e.partitions:
            part, leader = p.partition, p.leader
            if leader < 0:
                continue
            if part in last and last[part][0] != leader:
                out.append((part, e.ts_ms, last[part][1]))
            last[part] = (leader, e.ts_ms)
    return out


def leader_changes_frame(spark: SparkSession, runs: list[RunDir]) -> DataFrame | None:
    """For the runs with share groups: each leader change of the sampled topic's partitions (the state
    samples of events.jsonl describe run.json's first topic). A share partition's state lives in its
    leader's memory, so a change is when a share group's in-flight deliveries can be forgotten."""
    rows = []
    for i, r in enumerate(runs):
        topics = r.config.topics or []
        if r.config.share_groups and topics:
            rows += [(i, topics[0].name, part, ts, before)
                     for part, ts, before in leader_changes(read_events(r.path))]
    return spark.createDataFrame(rows, LEADER_CHANGE_SCHEMA) if rows else None


def transactional_sends(produced: DataFrame, txns: DataFrame | None) -> DataFrame | None:
    """Each value sent in a transaction, with its outcome and commit time (one row per value)."""
    if txns is None:
        return None
    t = txns.select("run", "txn", "outcome", "commit_ts_ms")
    return (produced.filter(F.col("txn").isNotNull()).select("run", "value", "txn", "producer")
            .join(t, on=["run", "txn"], how="inner")
            .dropDuplicates(["run", "value"]))


def final_log(offs_final: DataFrame, outcomes: DataFrame | None) -> DataFrame:
    """The final log keyed by partition key, with whether each value is committed."""
    if outcomes is None:
        return offs_final.withColumn("committed", F.lit(True))
    o = outcomes.select("run", "value", "outcome")
    return offs_final.join(o, on=["run", "value"], how="left").withColumn("committed", committed()).drop("outcome")


def prepare_txns_groups(spark: SparkSession, runs: list[RunDir], produced: DataFrame, consumed: DataFrame,
               txns: DataFrame | None, offsets: DataFrame | None, offs_final: DataFrame,
               deliveries: DataFrame | None = None, share_acks: DataFrame | None = None) -> V2Inputs:
    """The v2 frames; raises HistoryError when a v2 file breaks the contract's rules. ``offs_final``
    is the final log keyed by partition key (pk, offset, value)."""
    copiers = copiers_frame(spark, runs)
    shares = share_groups_frame(spark, runs)
    if any(r.v2 for r in runs):
        raise_if_invalid_v2(runs, produced, consumed, txns, offsets, copiers,
                            share_breaches(deliveries, share_acks, shares))
    by_generation = any(r.has_column("consumed.parquet", "generation") for r in runs)
    polls = poll_marks(consumed.filter(F.col("phase") == "live"), by_generation)
    outcomes = transactional_sends(produced, txns)
    return V2Inputs(consumed, polls, final_log(offs_final, outcomes), outcomes, txns, offsets, copiers,
                    deliveries, share_acks, shares, leader_changes_frame(spark, runs) if shares is not None else None)
