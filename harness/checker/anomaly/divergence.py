"""divergence: distinct (topic, partition, offset) at which two or more different values were
observed, over replicas.parquet and consumed.parquet (both phases) together."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
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


def count(i: Inputs) -> DataFrame:
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


def reference(h: Tables) -> int:
    """Distinct (t, p, o) with two or more different values over replicas and consumed (both phases)."""
    consumed, replicas = h.consumed, h.replicas
    seen: dict[tuple, set] = defaultdict(set)
    for r in [*replicas, *consumed]:
        seen[(r["topic"], r["partition"], r["offset"])].add(r["value"])
    return sum(1 for vs in seen.values() if len(vs) >= 2)


def promise(x: Excuses) -> Promise:
    return Promise("divergence", x.part is None, x.part or "unclean off and leader epochs on")


CLASS = AnomalyClass.of(__name__, label="divergence", contract="v1", owner="partition", html="diverg&shy;ence")
