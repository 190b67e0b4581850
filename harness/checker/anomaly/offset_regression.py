"""offset_regression: for each (group, topic, partition), "live" rows of offsets.parquet ordered by
(ts_ms, offset): adjacent pairs whose later offset is lower, unless the coordinator's log shows it
wrote the two commits in the forward order."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.anomaly.share_unseen import SHARE
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import finding
from harness.checker.prepare import Inputs
from harness.checker.reference import Tables
from harness.checker.spark_api import F, Window

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# The columns that name one group's commits to one partition in one run.
GROUP_PARTITION = ["run", "group", "topic", "partition"]


def count(i: Inputs) -> DataFrame | None:
    """offset_regression: for each (group, topic, partition), "live" rows of offsets.parquet ordered by
    (ts_ms, offset): adjacent pairs whose later offset is lower, unless the coordinator's log shows it
    wrote the two commits in the forward order.

    The live rows are the commits members were told took effect, in the order they were told. That
    order is the client's, not the coordinator's: a synchronous commit in the revocation callback
    returns before the callbacks of the asynchronous commits sent ahead of it, which the coordinator
    wrote first. So where the coordinator's log was read (the "written" rows), a pair whose lower
    offset the coordinator wrote only before it first wrote the higher one is not a regression: the
    group's committed offset went forward. A pair the log does not hold both of (a commit lost with
    the coordinator's own log, or a group whose log could not be read) keeps the acknowledged order.
    The example is the commit that regressed and the one before it."""
    if i.v2.offsets is None:
        return None
    w = Window.partitionBy(*GROUP_PARTITION).orderBy("ts_ms", "offset")
    commits = (i.v2.offsets.filter(F.col("phase") == "live")
               .select(*GROUP_PARTITION, "offset", "ts_ms",
                       F.lag("offset").over(w).alias("prev_offset"), F.lag("ts_ms").over(w).alias("prev_ts_ms")))
    backwards = commits.filter(F.col("offset") < F.col("prev_offset"))
    written = (i.v2.offsets.filter(F.col("phase") == "written").groupBy(*GROUP_PARTITION, "offset")
               .agg(F.min("log_offset").alias("first_written"), F.max("log_offset").alias("last_written")))
    lower = written.select(*GROUP_PARTITION, "offset", F.col("last_written").alias("lower_last_written"))
    higher = written.select(*GROUP_PARTITION, F.col("offset").alias("prev_offset"),
                            F.col("first_written").alias("higher_first_written"))
    judged = (backwards.join(lower, [*GROUP_PARTITION, "offset"], "left")
              .join(higher, [*GROUP_PARTITION, "prev_offset"], "left"))
    forward_in_log = F.col("lower_last_written") < F.col("higher_first_written")
    kept = judged.filter(~F.coalesce(forward_in_log, F.lit(False))).drop("lower_last_written", "higher_first_written")
    return finding("offset_regression", kept, "group", "ts_ms")


def reference(h: Tables) -> int:
    """Per (group, t, p), live commits ordered by (ts_ms, offset): adjacent pairs whose later offset is
    lower, less those whose lower offset was written (phase "written", by log_offset) only before the
    higher offset's first write."""
    acked: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    writes: dict[tuple, list[int]] = defaultdict(list)
    for r in h.offsets:
        where = (r["group"], r["topic"], r["partition"])
        if r["phase"] == "live":
            acked[where].append((r["ts_ms"], r["offset"]))
        elif r["phase"] == "written":
            writes[(*where, r["offset"])].append(r["log_offset"])

    def written_forward(where: tuple, higher: int, lower: int) -> bool:
        lows, highs = writes.get((*where, lower)), writes.get((*where, higher))
        return bool(lows and highs) and max(lows) < min(highs)

    return sum(1 for where, rows in acked.items() for a, b in itertools.pairwise(sorted(rows))
               if b[1] < a[1] and not written_forward(where, a[1], b[1]))


def promise(x: Excuses) -> Promise:
    return Promise("offset_regression", x.order is None, x.order or "a group's committed offsets only move forward")


def group_promise(x: Excuses, commit: str) -> Promise:
    """Promised whatever the commit mode: a member's commits reach the coordinator in the order it
    made them (Kafka's consumer contract: commitAsync's commits "are guaranteed to be sent in the
    same order as the invocations"; a sync commit waits for its answer; auto-commit sends the latest
    position). The coordinator does not keep offsets in order itself: it refuses a commit of a stale
    generation or member epoch and writes every other one as it arrives (ClassicGroup and
    ConsumerGroup's validateOffsetCommit check the member, not the offset), so within one generation
    the client's order is the only order there is."""
    if commit == SHARE:
        return Promise("offset_regression", True, "a share group acknowledges records and commits no offsets: none to "
                       "judge")
    if moved := x.config.offsets_moved & {"earliest", "delete"}:
        why = f"an operator reset the group's offsets by hand ({', '.join(sorted(moved))})"
        return Promise("offset_regression", False, why + ": Kafka moved its committed offsets back as asked")
    return Promise("offset_regression", x.order is None, x.order or f"commit={commit}: a member's commits reach the "
                   "coordinator in the order it made them (Kafka's consumer contract), and the coordinator writes "
                   "each commit of the current generation as it arrives, so offsets only move forward")


CLASS = AnomalyClass.of(__name__, label="offset back", contract="v2", owner="group", html="offset regres&shy;sion",
                        workload="groups")
