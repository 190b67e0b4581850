"""nonmonotonic_send: for each (producer, topic, partition), taking its "ok" rows with acks other
than "0" and an offset, in seq order: adjacent pairs whose later send got a lower or equal offset."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import RENUMBERED, Excuses, Promise
from harness.checker.findings import (
    adjacent_regressions,
    finding,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
    regressions,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame:
    """nonmonotonic_send: for each (producer, topic, partition), taking its "ok" rows with acks other
    than "0" and an offset, in seq order: adjacent pairs whose later send got a lower or equal offset."""
    ok = i.produced.filter((F.col("status") == "ok") & (F.col("acks") != "0") & F.col("offset").isNotNull())
    return finding("nonmonotonic_send", adjacent_regressions(ok, "producer"), "producer", "seq")


def reference(h: Tables) -> int:
    """Per (producer, t, p), ok rows with acks != 0 and an offset, in seq order: later offset <= earlier."""
    produced = h.produced
    groups: dict[tuple, list] = defaultdict(list)
    for r in produced:
        if r["status"] == "ok" and r["acks"] != "0" and r["offset"] is not None:
            groups[(r["producer"], r["topic"], r["partition"])].append((r["seq"], r["offset"]))
    return regressions(groups)


def promise(x: Excuses) -> Promise:
    if not x.config.idempotence:
        return Promise("nonmonotonic_send", False, "not idempotent: retries with several requests in flight can "
                       "reorder")
    if x.config.topic_recreated:
        return Promise("nonmonotonic_send", False, RENUMBERED)
    if x.loss is not None:
        return Promise("nonmonotonic_send", False, f"a lost acknowledged write frees its offset for later sends "
                       f"({x.loss})")
    return Promise("nonmonotonic_send", True, "idempotent producer: sequence numbers keep order within a partition")


CLASS = AnomalyClass.of(__name__, label="send order", contract="v1", owner="producer", html="nonmono&shy;tonic send")
