"""coordinator_regression: for each (group, topic, partition), "written" rows of offsets.parquet
ordered by log_offset: adjacent pairs whose later offset is lower."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.checker.anomaly import offset_regression
from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import finding
from harness.checker.prepare import Inputs
from harness.checker.reference import Tables
from harness.checker.spark_api import F, Window

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NAME = "coordinator_regression"


def count(i: Inputs) -> DataFrame | None:
    """coordinator_regression: for each (group, topic, partition), "written" rows of offsets.parquet
    ordered by log_offset: adjacent pairs whose later offset is lower.

    The written rows are the coordinator's own record, read from ``__consumer_offsets`` after
    healing: every commit it wrote, in the order it wrote them, whether or not the member learnt
    that it took effect. A member whose commit failed with its connection but was written, and
    was then written again behind a newer one, moves the group's committed offset back without
    any acknowledged commit doing so: ``offset_regression``, which reads the acknowledged ones,
    cannot see it. The example is the commit that regressed and the one written before it."""
    if i.v2.offsets is None:
        return None
    w = Window.partitionBy("run", "group", "topic", "partition").orderBy("log_offset")
    written = (i.v2.offsets.filter(F.col("phase") == "written")
               .select("run", "group", "topic", "partition", "offset", "log_offset", "ts_ms",
                       F.lag("offset").over(w).alias("prev_offset"),
                       F.lag("log_offset").over(w).alias("prev_log_offset")))
    return finding(NAME, written.filter(F.col("offset") < F.col("prev_offset")), "group", "ts_ms")


def reference(h: Tables) -> int:
    """Per (group, t, p), written commits ordered by log_offset: adjacent pairs whose later offset is lower."""
    groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for r in h.offsets:
        if r["phase"] == "written":
            groups[(r["group"], r["topic"], r["partition"])].append((r["log_offset"], r["offset"]))
    return sum(sum(1 for a, b in itertools.pairwise(sorted(rows)) if b[1] < a[1]) for rows in groups.values())


def promise(x: Excuses) -> Promise:
    return replace(offset_regression.promise(x), anomaly=NAME)


def group_promise(x: Excuses, commit: str) -> Promise:
    """The promise ``offset_regression`` states, of the coordinator's record of the same commits:
    what the group has committed is what its coordinator wrote last."""
    return replace(offset_regression.group_promise(x, commit), anomaly=NAME)


CLASS = AnomalyClass.of(__name__, label="written back", contract="v2", owner="group",
                        html="coordinator regres&shy;sion", workload="groups")
