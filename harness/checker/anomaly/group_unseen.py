"""group_unseen: distinct (group, value) pairs: the value is in the final log at an offset below the
group's final committed offset for its partition (offsets.parquet, phase "final"), is readable by
the group's isolation, and no consumer of that group returned that value (matched by value)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.anomaly.share_unseen import SHARE
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import (
    final_decoded,
    finding,
    group_final_offsets,
)
from harness.checker.keys import KEY
from harness.checker.prepare import Inputs
from harness.checker.prepare_txns_groups import readable
from harness.checker.reference import (
    Tables,
    final_log,
    group_final,
    is_committed,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """group_unseen: distinct (group, value) pairs: the value is in the final log at an offset below the
    group's final committed offset for its partition (offsets.parquet, phase "final"), is readable by
    the group's isolation, and no consumer of that group returned that value (matched by value).

    A group's isolation is its consumers' (read_uncommitted when it returned nothing). The example
    is the record and the committed offset it lies below."""
    if i.v2.offsets is None:
        return None
    iso = (i.v2.consumed.filter(F.col("group").isNotNull()).groupBy("run", "group")
           .agg(F.max("isolation").alias("isolation")))
    below = (final_decoded(i).join(group_final_offsets(i), on=KEY, how="inner")
             .filter(F.col("offset") < F.col("committed_offset"))
             .join(iso, on=["run", "group"], how="left").filter(readable()))
    seen = i.v2.consumed.filter(F.col("group").isNotNull()).select("run", "group", "value").distinct()
    unseen = (below.join(seen, on=["run", "group", "value"], how="left_anti")
              .groupBy("run", "group", "value")
              .agg(F.min(F.struct("topic", "partition", "offset", "committed_offset")).alias("at")))
    return finding("group_unseen", unseen.select("run", "group", "value", "at.topic", "at.partition", "at.offset",
                                                 "at.committed_offset"), "group", "offset")


def reference(h: Tables) -> int:
    """Distinct (group, value) in the final log below the group's final committed offset, readable by
    the group's isolation, that no consumer of the group returned."""
    produced, consumed, txns, offsets = h.produced, h.consumed, h.txns, h.offsets
    found = set()
    for (g, t, p), committed_offset in group_final(offsets).items():
        rows = [r for r in consumed if r.get("group") == g]
        rc = any(r.get("isolation") == "read_committed" for r in rows)
        seen = {r["value"] for r in rows}
        for ft, fp, fo, fv in final_log(consumed):
            if (ft, fp) == (t, p) and fo < committed_offset and fv not in seen \
                    and (not rc or is_committed(fv, produced, txns)):
                found.add((g, fv))
    return len(found)


def promise(x: Excuses) -> Promise:
    return Promise("group_unseen", x.either is None,
                   x.either or f"{SAFE}: a group commits only what its members returned")


def group_promise(x: Excuses, commit: str) -> Promise:
    """By how the group commits: after processing (sync, async, or in a copier's transaction)
    Kafka's generation and member-epoch fencing keep a commit to what its member returned;
    auto-commit commits what poll returned whether or not it was processed. The topic's excuses for
    loss excuse unseen records too (a record can vanish below a commit)."""
    if commit == SHARE:
        return Promise("group_unseen", True, "a share group acknowledges records and commits no offsets: none to "
                       "judge")
    if moved := x.config.offsets_moved & {"latest", "delete"}:
        why = f"an operator reset the group's offsets by hand ({', '.join(sorted(moved))})"
        return Promise("group_unseen", False, why + ": records below the new position are never read by the group")
    if commit == "auto":
        return Promise("group_unseen", False, "auto-commit commits what poll returned, processed or not: a member "
                       "that dies between a poll and its processing loses those records for the group")
    return Promise("group_unseen", x.either is None, x.either or f"commit={commit} after processing: a group "
                   "commits only what its members returned, and a stale member's commit is refused")


CLASS = AnomalyClass.of(__name__, label="group unseen", contract="v2", owner="group", workload="groups")
