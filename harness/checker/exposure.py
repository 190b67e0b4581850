"""What each fault put at risk: the records a leader acknowledged alone that no read had yet shown
under their partition's high watermark when the fault fired, and how many of those the final log lacks.

"0 lost" reads the same after a run whose followers were milliseconds behind when the leader died
as after one that lost nothing of hundreds of records only the leader held. The exposure says
which: a verdict reads "0 lost of 412 exposed" or "nothing exposed".

A record is **exposed** to a fault when its leader acknowledged it alone (acks=1) before the
fault started and no read before the fault showed it under the high watermark: the last live read
of its partition at or before the fault's start (by any reader that reports the high watermark,
within ``FRESH_MS``) saw the high watermark at or below its offset. It was not known to be on every
in-sync replica. A record acknowledged with acks=all is on every in-sync replica when it is
acknowledged, so it is never exposed: the high watermark a reader reports can be older than its
read (a fetch response the client held before returning it, a new leader's high watermark catching
up), and judging acks=all records by it would count records Kafka had already replicated. For the
same reason an acks=1 record counted exposed may have reached the followers after the response
that reader saw was made: the count is what kchaos could not show safe. An exposed record is
**lost** when the final log does not hold it.

Partitions no reader reported a high watermark for (a client that cannot tell it: the run's
``not_judged``) expose nothing that can be seen; a fault with no fresh read of any partition is
reported as not measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.keys import KEY
from harness.checker.spark_api import F
from harness.history import RunDir, read_events
from harness.history.events import Fault

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from harness.checker.prepare import Inputs

FRESH_MS = 1000  # a read older than this before a fault says nothing of what the fault found
FAULT_SCHEMA = "`run` INT, `fault` INT, `start_ms` BIGINT"


def fault_starts(spark: SparkSession, runs: list[RunDir]) -> DataFrame | None:
    """(run, fault, start_ms) of every fault of every run, numbered in the order they started (as
    the verdict lists them); None when no run had one."""
    rows = []
    for i, r in enumerate(runs):
        faults = sorted((e for e in read_events(r.path) if isinstance(e, Fault)), key=lambda e: e.start_ms)
        rows += [(i, n, f.start_ms) for n, f in enumerate(faults)]
    return spark.createDataFrame(rows, FAULT_SCHEMA) if rows else None


def last_reads(live: DataFrame, starts: DataFrame) -> DataFrame:
    """Per (run, fault, topic, partition): the time and high watermark of the last live read of the
    partition at or before the fault's start, within FRESH_MS."""
    reads = (live.filter(F.col("hw").isNotNull()).select(*KEY, "poll_ts_ms", "hw").distinct())
    during = reads.join(F.broadcast(starts), on="run").filter(
        (F.col("poll_ts_ms") <= F.col("start_ms")) & (F.col("poll_ts_ms") >= F.col("start_ms") - FRESH_MS))
    last = F.max_by(F.struct("hw", "poll_ts_ms"), F.col("poll_ts_ms"))
    return (during.groupBy("run", "fault", "start_ms", "topic", "partition").agg(last.alias("at"))
            .select("run", "fault", "start_ms", "topic", "partition", F.col("at.poll_ts_ms").alias("read_ms"),
                    F.col("at.hw").alias("hw")))


def exposure(inputs: Inputs, starts: DataFrame) -> DataFrame:
    """Per (run, fault): ``exposed`` records and how many of them the final log lacks (``lost``);
    ``measured`` false where no partition had a fresh read before the fault."""
    reads = last_reads(inputs.live, starts)
    acked = inputs.produced.filter((F.col("status") == "ok") & (F.col("acks") == "1") & F.col("offset").isNotNull()
                                   & F.col("ack_ts_ms").isNotNull()).select(*KEY, "value", "offset", "ack_ts_ms")
    exposed = (acked.join(reads, on=KEY)
               .filter((F.col("ack_ts_ms") <= F.col("start_ms")) & (F.col("offset") >= F.col("hw")))
               .select("run", "fault", "topic", "partition", "value"))
    pk = inputs.pk
    held = inputs.vals.filter(F.col("first_offset").isNotNull()).select(*pk.cols, "value",
                                                                         F.lit(True).alias("held"))
    judged = pk.encode(exposed).join(held, on=[*pk.cols, "value"], how="left")
    counts = judged.groupBy("run", "fault").agg(F.count(F.lit(1)).alias("exposed"),
                                                F.sum(F.when(F.col("held").isNull(), 1).otherwise(0)).alias("lost"))
    measured = reads.select("run", "fault").distinct().withColumn("measured", F.lit(True))
    return (starts.select("run", "fault").join(measured, on=["run", "fault"], how="left")
            .join(counts, on=["run", "fault"], how="left")
            .select("run", "fault", F.coalesce("measured", F.lit(False)).alias("measured"),
                    F.coalesce("exposed", F.lit(0)).cast("long").alias("exposed"),
                    F.coalesce("lost", F.lit(0)).cast("long").alias("lost")))
