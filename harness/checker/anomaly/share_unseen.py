"""share_unseen: distinct (group, value) pairs: the value is in the final log of a partition the
share group reads, at an offset at or above the offset the group started from there and below the
group's share-partition start offset read after healing (run.json share_groups: start_offsets,
final_start_offsets; every offset below it is archived), is readable by the group's isolation, and
no member of the group was delivered it (deliveries.parquet, matched by value).

KIP-932: a record below the share-partition start offset is archived, which it reaches only by
being acknowledged (accepted or rejected), by running out of delivery attempts, or by the start
offset moving past it (retention, a reset). A record in the final log that the group never had
yet archived was skipped: the queue lost it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import final_decoded, finding
from harness.checker.keys import KEY
from harness.checker.prepare import Inputs
from harness.checker.prepare_txns_groups import readable
from harness.checker.reference import Tables, final_log, is_committed, share_partitions
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SHARE = "share"  # a share group's commit mode in run.json's groups: it acknowledges, it commits no offsets


def count(i: Inputs) -> DataFrame | None:
    """share_unseen: distinct (group, value) pairs in the final log between the group's start offset
    and its share-partition start offset after healing, readable by its isolation, that no member of
    the group was delivered.

    The example is the record and the share-partition start offset it lies below."""
    if i.v2.share_groups is None:
        return None
    archived = (final_decoded(i).join(i.v2.share_groups.filter(F.col("end_offset").isNotNull()), on=KEY,
                                      how="inner")
                .filter((F.col("offset") >= F.col("start_offset")) & (F.col("offset") < F.col("end_offset")))
                .filter(readable()))
    if i.v2.deliveries is not None:
        seen = i.v2.deliveries.select("run", "group", "value").distinct()
        archived = archived.join(seen, on=["run", "group", "value"], how="left_anti")
    unseen = (archived.groupBy("run", "group", "value")
              .agg(F.min(F.struct("topic", "partition", "offset", "end_offset")).alias("at")))
    return finding("share_unseen", unseen.select("run", "group", "value", "at.topic", "at.partition", "at.offset",
                                                 F.col("at.end_offset").alias("share_start_offset")), "group",
                   "offset")


def reference(h: Tables) -> int:
    """Distinct (group, value) in the final log in [start offset, share-partition start offset after
    healing) of a partition the group reads, readable by its isolation, never delivered to the group."""
    found = set()
    for (g, t, p), (start, end, _limit, isolation) in share_partitions(h.share_groups).items():
        if end is None:
            continue
        seen = {d["value"] for d in h.deliveries if d["group"] == g}
        for ft, fp, fo, fv in final_log(h.consumed):
            if (ft, fp) == (t, p) and start <= fo < end and fv not in seen and (
                    isolation != "read_committed" or is_committed(fv, h.produced, h.txns)):
                found.add((g, fv))
    return len(found)


def promise(x: Excuses) -> Promise:
    return Promise("share_unseen", x.part is None, x.part or f"{SAFE}: a share group is given every record "
                   "before it archives it")


def group_promise(x: Excuses, commit: str) -> Promise:
    """KIP-932: every record from where the group starts is delivered before it is archived (at least
    once); only the partition's own disagreements (an unclean election, leader epochs off) excuse it."""
    if commit != SHARE:
        return Promise("share_unseen", True, "a consumer group has no share deliveries: none to judge")
    return Promise("share_unseen", x.part is None, x.part or "KIP-932: a share group is given every record from "
                   "where it starts before the record is archived (acknowledged, rejected or out of attempts)")


CLASS = AnomalyClass.of(__name__, label="share unseen", contract="v2", owner="group", html="share un&shy;seen",
                        workload="share_groups")
