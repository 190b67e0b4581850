"""aborted_read: distinct values whose outcome is "aborted" that appear in R (the rows of
read_committed readers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import (
    finding,
    read_committed_rows,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
    outcomes,
    read_committed,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """aborted_read: distinct values whose outcome is "aborted" that appear in R (the rows of
    read_committed readers).

    The example is the value's transaction and its earliest read by a read_committed reader."""
    if i.v2.outcomes is None:
        return None
    aborted = i.v2.outcomes.filter(F.col("outcome") == "aborted").select("run", "value", "txn", "producer")
    reads = (read_committed_rows(i).join(aborted, on=["run", "value"], how="inner")
             .groupBy("run", "value", "txn", "producer")
             .agg(F.count(F.lit(1)).alias("reads"),
                  F.min(F.struct("poll_ts_ms", "consumer", "topic", "partition", "offset")).alias("r")))
    return finding("aborted_read", reads.select("run", "value", "txn", "producer", "r.topic", "r.partition", "r.offset",
                                                "r.consumer", "r.poll_ts_ms", "reads"), "topic", "poll_ts_ms")


def reference(h: Tables) -> int:
    """Distinct values whose outcome is "aborted" that appear in R."""
    produced, consumed, txns = h.produced, h.consumed, h.txns
    out = outcomes(txns)
    aborted = {r["value"] for r in produced if r.get("txn") is not None and out.get(r["txn"]) == "aborted"}
    return len({r["value"] for r in read_committed(consumed)} & aborted)


def promise(x: Excuses) -> Promise:
    return Promise("aborted_read", x.part is None,
                   x.part or "read_committed readers stop at the LSO and drop aborted transactions")


CLASS = AnomalyClass.of(__name__, label="aborted read", contract="v2", owner="partition", workload="transactions")
