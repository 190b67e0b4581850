"""lost: distinct values with status "ok" and acks other than "0" that are absent from the final
log (of the partition they were acknowledged in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import (
    finding,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
    final_log,
    outcomes,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame:
    """lost: distinct values with status "ok" and acks other than "0" that are absent from the final
    log (of the partition they were acknowledged in).

    The example is the value's earliest acknowledged send; the finding is its producer's."""
    first_ack = (i.sends.filter(F.col("kind") == "lost").groupBy("run", "value")
                 .agg(F.min(F.struct("ack_ts_ms", "producer", "topic", "partition", "offset", "acks")).alias("s")))
    return finding("lost", first_ack.select("run", "value", "s.producer", "s.topic", "s.partition",
                                            F.col("s.offset").alias("ack_offset"), "s.acks", "s.ack_ts_ms"),
                   "producer", "ack_ts_ms")


def reference(h: Tables) -> int:
    """Distinct committed values, status ok, acks != 0, absent from the final log (of their partition)."""
    produced, consumed, txns = h.produced, h.consumed, h.txns
    final_values = {(t, p, v) for t, p, _, v in final_log(consumed)}
    out = outcomes(txns)
    return len({r["value"] for r in produced if r["status"] == "ok" and r["acks"] != "0"
                and (r.get("txn") is None or out.get(r["txn"]) == "committed")
                and (r["topic"], r["partition"], r["value"]) not in final_values})


def promise(x: Excuses) -> Promise:
    return Promise("lost", x.loss is None, x.loss or SAFE)


CLASS = AnomalyClass.of(__name__, label="lost", contract="v1", owner="producer")
