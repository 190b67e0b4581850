"""eos_duplicate: for each copier, distinct source values that are the ``source`` of two or more
distinct committed copies present in the final log."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import (
    copies,
    finding,
)
from harness.checker.prepare import Inputs
from harness.checker.prepare_txns_groups import committed
from harness.checker.reference import (
    Tables,
    copies_in_final,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
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


def reference(h: Tables) -> int:
    """Per copier, distinct sources of two or more distinct committed copies in the final log."""
    produced, consumed, txns, copiers = h.produced, h.consumed, h.txns, h.copiers
    n = 0
    for c in copiers:
        per_source: dict[str, set] = defaultdict(set)
        for r in copies_in_final(produced, consumed, txns, c, ("committed",)):
            per_source[r["source"]].add(r["value"])
        n += sum(1 for vs in per_source.values() if len(vs) >= 2)
    return n


def promise(x: Excuses) -> Promise:
    return Promise("eos_duplicate", x.either is None,
                   x.either or f"{SAFE}: a copy and its input offsets commit in one transaction")


CLASS = AnomalyClass.of(__name__, label="eos duplicate", contract="v2", owner="producer", html="eos dupli&shy;cate",
                        workload="copier")
