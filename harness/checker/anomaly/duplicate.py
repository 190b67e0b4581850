"""duplicate: distinct values present at two or more offsets of the final log."""

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
    final_log,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame:
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


def reference(h: Tables) -> int:
    """Distinct values at two or more offsets of the final log."""
    consumed = h.consumed
    places: dict[str, set] = defaultdict(set)
    for t, p, o, v in final_log(consumed):
        places[v].add((t, p, o))
    return sum(1 for ps in places.values() if len(ps) >= 2)


def promise(x: Excuses) -> Promise:
    """Idempotence rules duplicates out wherever Kafka keeps what it acknowledged; a lost write is
    not a duplicate, but replicas that disagree can hold a value twice."""
    if not x.config.idempotence:
        return Promise("duplicate", False, "not idempotent: a retried send can be written twice")
    if x.loss is not None:
        return Promise("duplicate", x.part is None, x.part or "idempotent producer: the broker drops retried batches")
    return Promise("duplicate", True, "idempotent producer: the broker drops retried batches")


CLASS = AnomalyClass.of(__name__, label="duplicate", contract="v1", owner="producer", html="dupli&shy;cate")
