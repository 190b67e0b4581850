"""old_topic_read: distinct values in the final log of a topic an operator deleted and created again
under its name (recreate_topic) whose earliest acknowledgement came before that deletion was asked:
a record of the deleted topic served by the new one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import finding
from harness.checker.prepare import IN_FINAL, Inputs, has
from harness.checker.reference import Tables, final_log
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """old_topic_read: distinct values in the final log of a topic an operator deleted and created
    again under its name (recreate_topic) whose earliest acknowledgement came before that deletion
    was asked: a record of the deleted topic served by the new one.

    Before the deletion the old topic was the only one of that name, so what it acknowledged was
    written there; the final log is read after healing, from the new topic. The example is the
    value's lowest place in the final log, with its acknowledgement and the deletion."""
    if i.recreations is None:
        return None
    final = (i.pk.decode(i.offs.filter(has(IN_FINAL)).select(*i.pk.cols, "offset", "value"))
             .join(F.broadcast(i.recreations), on=["run", "topic"], how="inner"))
    acked = (i.produced.filter((F.col("status") == "ok") & F.col("ack_ts_ms").isNotNull())
             .groupBy("run", "value").agg(F.min(F.struct("ack_ts_ms", "producer")).alias("a")))
    old = (final.join(acked, on=["run", "value"], how="inner")
           .filter(F.col("a.ack_ts_ms") < F.col("deleted_ms"))
           .groupBy("run", "value")
           .agg(F.min(F.struct("topic", "partition", "offset", "a.ack_ts_ms", "deleted_ms")).alias("at"))
           .select("run", "value", "at.topic", "at.partition", "at.offset", "at.ack_ts_ms", "at.deleted_ms"))
    return finding("old_topic_read", old, "topic", "offset")


def reference(h: Tables) -> int:
    """Distinct final-log values of a recreated topic whose earliest ok acknowledgement precedes its
    last deletion."""
    first_ack: dict[str, int] = {}
    for r in h.produced:
        if r["status"] == "ok" and r.get("ack_ts_ms") is not None:
            first_ack[r["value"]] = min(first_ack.get(r["value"], r["ack_ts_ms"]), r["ack_ts_ms"])
    return len({v for t, _, _, v in final_log(h.consumed)
                if t in h.recreations and v in first_ack and first_ack[v] < h.recreations[t][0]})


def promise(x: Excuses) -> Promise:
    return Promise("old_topic_read", True, "a topic created again under a deleted topic's name is a new topic: it "
                   "starts empty, and every replica of the old one is deleted (KAFKA-14616, KIP-516's topic ids)")


CLASS = AnomalyClass.of(__name__, label="old topic", contract="v1", owner="partition", html="old topic read")
