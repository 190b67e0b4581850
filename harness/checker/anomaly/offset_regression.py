"""offset_regression: for each (group, topic, partition), "live" rows of offsets.parquet ordered by
(ts_ms, offset): adjacent pairs whose later offset is lower."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.anomaly.share_unseen import SHARE
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import (
    finding,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
)
from harness.checker.spark_api import F, Window

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
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


def reference(h: Tables) -> int:
    """Per (group, t, p), live commits ordered by (ts_ms, offset): adjacent pairs whose later offset is lower."""
    offsets = h.offsets
    groups: dict[tuple, list] = defaultdict(list)
    for r in offsets:
        if r["phase"] == "live":
            groups[(r["group"], r["topic"], r["partition"])].append((r["ts_ms"], r["offset"]))
    return sum(sum(1 for a, b in itertools.pairwise(sorted(rows)) if b[1] < a[1]) for rows in groups.values())


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
