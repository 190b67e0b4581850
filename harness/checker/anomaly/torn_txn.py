"""torn_txn: distinct transactions with outcome "committed" such that at least one of their
produced rows' values is in the final log and at least one is absent from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import (
    finding,
    present_values,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
    final_log,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """torn_txn: distinct transactions with outcome "committed" such that at least one of their
    produced rows' values is in the final log and at least one is absent from it.

    A transaction is its txn (unique in the run), whichever producer sent each of its rows; it is
    attributed to the producer txns.parquet gives it. The example gives the transaction's size, how
    many of its records the final log holds, and the first five that it lacks."""
    if i.v2.outcomes is None or i.v2.txns is None:
        return None
    done = i.v2.outcomes.filter(F.col("outcome") == "committed").select("run", "txn", "value", "commit_ts_ms")
    here = (done.join(present_values(i), on=["run", "value"], how="left")
            .join(i.v2.txns.select("run", "txn", "producer"), on=["run", "txn"], how="inner"))
    per_txn = (here.groupBy("run", "txn", "producer", "commit_ts_ms")
               .agg(F.count(F.lit(1)).alias("records"), F.count("final_at").alias("in_final"),
                    F.slice(F.sort_array(F.collect_list(F.when(F.col("final_at").isNull(), F.col("value")))), 1, 5)
                    .alias("missing")))
    torn = per_txn.filter((F.col("in_final") >= 1) & (F.col("in_final") < F.col("records")))
    return finding("torn_txn", torn, "producer", "commit_ts_ms")


def reference(h: Tables) -> int:
    """Distinct committed transactions with at least one value in the final log and one absent from it."""
    produced, consumed, txns = h.produced, h.consumed, h.txns
    in_final = {v for _, _, _, v in final_log(consumed)}
    n = 0
    for t in txns:
        if t["outcome"] != "committed":
            continue
        values = [r["value"] for r in produced if r.get("txn") == t["txn"]]
        if any(v in in_final for v in values) and any(v not in in_final for v in values):
            n += 1
    return n


def promise(x: Excuses) -> Promise:
    return Promise("torn_txn", x.either is None,
                   x.either or f"{SAFE}: the markers commit every partition of a transaction together")


CLASS = AnomalyClass.of(__name__, label="torn txn", contract="v2", owner="producer", workload="transactions")
