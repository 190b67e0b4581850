"""phantom: distinct values in the final log that never appear in produced.parquet."""

from __future__ import annotations

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
    """phantom: distinct values in the final log that never appear in produced.parquet.

    The example is the value's lowest place in the final log."""
    ph = (i.odd_final.filter("is_phantom")
          .groupBy("run", "value")
          .agg(F.min(F.struct("offset", "topic", "partition")).alias("at"))
          .select("run", "value", "at.topic", "at.partition", "at.offset"))
    return finding("phantom", ph, "topic", "offset")


def reference(h: Tables) -> int:
    """Distinct values in the final log never produced."""
    produced, consumed = h.produced, h.consumed
    produced_values = {r["value"] for r in produced}
    return len({v for _, _, _, v in final_log(consumed) if v not in produced_values})


def promise(x: Excuses) -> Promise:
    return Promise("phantom", True, "no configuration may invent a record")


CLASS = AnomalyClass.of(__name__, label="phantom", contract="v1", owner="partition")
