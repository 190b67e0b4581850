"""share_over_delivered: distinct (group, value) pairs delivered to members of the share group more
times than its delivery attempt limit (run.json share_groups: delivery_count_limit), or with a
delivery whose delivery_count (as the client reported it) exceeds that limit.

KIP-932: each acquisition of a record counts a delivery attempt; a record released (or whose lock
runs out) after its last allowed attempt is archived instead of being made available again."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.anomaly.share_unseen import SHARE
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import finding
from harness.checker.prepare import Inputs
from harness.checker.reference import Tables, share_partitions
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def deliveries_with_limits(i: Inputs) -> DataFrame | None:
    """Every delivery to a share group's member, with its group's delivery attempt limit (``limit``)."""
    if i.v2.deliveries is None or i.v2.share_groups is None:
        return None
    limits = i.v2.share_groups.select("run", "group", "topic", "partition", "limit").distinct()
    return i.v2.deliveries.join(limits, on=["run", "group", "topic", "partition"], how="inner")


def count(i: Inputs) -> DataFrame | None:
    """share_over_delivered: distinct (group, value) pairs with more deliveries than the group's limit,
    or one whose reported delivery_count exceeds it.

    The example gives the number of deliveries, the highest delivery_count reported and the limit."""
    d = deliveries_with_limits(i)
    if d is None:
        return None
    per_value = (d.groupBy("run", "group", "value")
                 .agg(F.count(F.lit(1)).alias("deliveries"), F.max("delivery_count").alias("max_delivery_count"),
                      F.first("limit").alias("limit"), F.min("ts_ms").alias("first_ts_ms")))
    over = per_value.filter((F.col("deliveries") > F.col("limit"))
                            | (F.coalesce(F.col("max_delivery_count"), F.lit(0)) > F.col("limit")))
    return finding("share_over_delivered", over, "group", "first_ts_ms")


def reference(h: Tables) -> int:
    """Distinct (group, value) with more delivery rows than the limit, or a delivery_count above it."""
    limits = {(g, t, p): lim for (g, t, p), (_s, _e, lim, _iso) in share_partitions(h.share_groups).items()}
    times: Counter = Counter()
    over = set()
    for d in h.deliveries:
        limit = limits.get((d["group"], d["topic"], d["partition"]))
        if limit is None:
            continue
        key = (d["group"], d["value"])
        times[key] += 1
        if times[key] > limit or (d.get("delivery_count") or 0) > limit:
            over.add(key)
    return len(over)


def promise(x: Excuses) -> Promise:
    return Promise("share_over_delivered", x.part is None,
                   x.part or f"{SAFE}: no record is delivered beyond its attempt limit")


def group_promise(x: Excuses, commit: str) -> Promise:
    if commit != SHARE:
        return Promise("share_over_delivered", True, "a consumer group has no share deliveries: none to judge")
    return Promise("share_over_delivered", x.part is None, x.part or "KIP-932: a record is delivered at most "
                   "group.share.delivery.count.limit times, then archived")


CLASS = AnomalyClass.of(__name__, label="over-delivered", contract="v2", owner="group", html="over-de&shy;livered",
                        workload="share_groups")
