"""uncommitted_read: distinct (topic, partition, offset, value) returned in phase "live" that are
not in the final log at that offset, or were returned at an offset >= the hw recorded with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import finding, uncommitted_first_reads
from harness.checker.prepare import ABOVE_HW, IN_FINAL, Inputs, has
from harness.checker.reference import (
    Tables,
    final_log,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame:
    """uncommitted_read: distinct (topic, partition, offset, value) returned in phase "live" that are
    not in the final log at that offset, or were returned at an offset >= the hw recorded with them.

    The example is the earliest offending read: any read of a record missing from the final log,
    otherwise a read at or above its hw (not some other, committed read of the same record)."""
    first = uncommitted_first_reads(i).select(
        "*", (~has(IN_FINAL)).cast("int").alias("not_in_final"), has(ABOVE_HW).cast("int").alias("at_or_above_hw"))
    return finding("uncommitted_read", i.pk.decode(first).select(
        "run", "topic", "partition", "offset", "value", "consumer", "hw", "poll_ts_ms", "not_in_final",
        "at_or_above_hw"), "topic", "poll_ts_ms")


def reference(h: Tables) -> int:
    """Distinct (t, p, o, v) read live, not in the final log at that offset, or read at an offset >= its hw."""
    consumed = h.consumed
    final = final_log(consumed)
    found = set()
    for r in consumed:
        key = (r["topic"], r["partition"], r["offset"], r["value"])
        if r["phase"] == "live" and (key not in final or (r["hw"] is not None and r["offset"] >= r["hw"])):
            found.add(key)
    return len(found)


def promise(x: Excuses) -> Promise:
    return Promise("uncommitted_read", x.part is None,
                   x.part or "consumers only see records below the HW, which every ISR member has")


CLASS = AnomalyClass.of(__name__, label="uncommitted", contract="v1", owner="partition", html="uncommit&shy;ted read")
