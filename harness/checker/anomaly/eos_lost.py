"""eos_lost: for each copier, distinct committed values present in the final log of its input
topics at offsets below its group's final committed offset for their partition, that are the
``source`` of no copy present in the final log whose outcome is "committed" or "unknown"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import (
    copies,
    final_decoded,
    finding,
    group_final_offsets,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
    copies_in_final,
    final_log,
    group_final,
    is_committed,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """eos_lost: for each copier, distinct committed values present in the final log of its input
    topics at offsets below its group's final committed offset for their partition, that are the
    ``source`` of no copy present in the final log whose outcome is "committed" or "unknown".

    The example is the input record and the committed offset it lies below; the finding is the
    copier's."""
    if i.v2.copiers is None or i.v2.outcomes is None or i.v2.offsets is None:
        return None
    inputs = i.v2.copiers.filter(F.col("role") == "in").select("run", "producer", "group", "topic")
    consumed_by_group = (final_decoded(i).filter("committed").join(inputs, on=["run", "topic"], how="inner")
                         .join(group_final_offsets(i), on=["run", "group", "topic", "partition"], how="inner")
                         .filter(F.col("offset") < F.col("committed_offset")))
    landed = (copies(i).filter(F.col("final_at").isNotNull() & F.col("outcome").isin("committed", "unknown"))
              .select("run", "producer", F.col("source").alias("value")).distinct())
    lost_ = (consumed_by_group.join(landed, on=["run", "producer", "value"], how="left_anti")
             .groupBy("run", "producer", "value")
             .agg(F.min(F.struct("topic", "partition", "offset", "committed_offset", "group")).alias("at")))
    return finding("eos_lost", lost_.select("run", "producer", "value", "at.group", "at.topic", "at.partition",
                                            "at.offset", "at.committed_offset"), "producer", "offset")


def reference(h: Tables) -> int:
    """Per copier, distinct committed input values in the final log below its group's final committed
    offset that are the source of no committed or unknown copy in the final log."""
    produced, consumed, txns, offsets, copiers = h.produced, h.consumed, h.txns, h.offsets, h.copiers
    final_offsets = group_final(offsets)
    n = 0
    for c in copiers:
        copied = {r["source"] for r in copies_in_final(produced, consumed, txns, c, ("committed", "unknown"))}
        missing = {fv for ft, fp, fo, fv in final_log(consumed)
                   if ft in c["input_topics"] and (c["group"], ft, fp) in final_offsets
                   and fo < final_offsets[(c["group"], ft, fp)] and is_committed(fv, produced, txns)
                   and fv not in copied}
        n += len(missing)
    return n


def promise(x: Excuses) -> Promise:
    return Promise("eos_lost", x.either is None,
                   x.either or f"{SAFE}: a copy and its input offsets commit in one transaction")


CLASS = AnomalyClass.of(__name__, label="eos lost", contract="v2", owner="producer", workload="copier")
