"""precommitted_read: distinct values with outcome "committed" that appear in R with poll_ts_ms <
their transaction's commit_ts_ms."""

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
    read_committed,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """precommitted_read: distinct values with outcome "committed" that appear in R with poll_ts_ms <
    their transaction's commit_ts_ms.

    The example is the earliest such read, with how long before the commit call it came."""
    if i.v2.outcomes is None:
        return None
    done = i.v2.outcomes.filter(F.col("outcome") == "committed").select("run", "value", "txn", "producer",
                                                                         "commit_ts_ms")
    early = (read_committed_rows(i).join(done, on=["run", "value"], how="inner")
             .filter(F.col("poll_ts_ms") < F.col("commit_ts_ms"))
             .groupBy("run", "value", "txn", "producer", "commit_ts_ms")
             .agg(F.min(F.struct("poll_ts_ms", "consumer", "topic", "partition", "offset")).alias("r")))
    return finding("precommitted_read", early.select(
        "run", "value", "txn", "producer", "r.topic", "r.partition", "r.offset", "r.consumer", "r.poll_ts_ms",
        "commit_ts_ms", (F.col("commit_ts_ms") - F.col("r.poll_ts_ms")).alias("before_commit_ms")),
        "topic", "poll_ts_ms")


def reference(h: Tables) -> int:
    """Distinct committed values read in R before their transaction's commit_ts_ms."""
    produced, consumed, txns = h.produced, h.consumed, h.txns
    by_txn = {t["txn"]: t for t in txns}
    found = set()
    for r in read_committed(consumed):
        for s in produced:
            t = by_txn.get(s.get("txn")) if s["value"] == r["value"] else None
            if t and t["outcome"] == "committed" and t["commit_ts_ms"] is not None \
                    and r["poll_ts_ms"] < t["commit_ts_ms"]:
                found.add(r["value"])
    return len(found)


def promise(x: Excuses) -> Promise:
    return Promise("precommitted_read", x.part is None,
                   x.part or "the LSO passes a transaction only after its commit marker")


CLASS = AnomalyClass.of(__name__, label="precommit read", contract="v2", owner="partition",
                        html="precom&shy;mitted read", workload="transactions")
