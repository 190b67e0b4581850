"""nonmonotonic_poll: for each (consumer, topic, partition), its "live" rows in seq order:
adjacent pairs whose later row has a lower or equal offset."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import (
    REGRESSION_COLS,
    finding,
)
from harness.checker.prepare import Inputs
from harness.checker.reference import (
    Tables,
    regressions,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame:
    """nonmonotonic_poll: for each (consumer, topic, partition), its "live" rows in seq order:
    adjacent pairs whose later row has a lower or equal offset.

    The pairs are the poll marks flagged ``regressed`` (one window pass shared with poll_skip)."""
    return finding("nonmonotonic_poll", i.v2.polls.filter("regressed").select("run", "consumer", *REGRESSION_COLS),
                   "topic", "seq")


def reference(h: Tables) -> int:
    """Per (consumer, t, p), live rows in seq order: later offset <= earlier."""
    consumed = h.consumed
    groups: dict[tuple, list] = defaultdict(list)
    for r in consumed:
        if r["phase"] == "live":
            groups[(r["consumer"], r["topic"], r["partition"])].append((r["seq"], r["offset"]))
    return regressions(groups)


def promise(x: Excuses) -> Promise:
    return Promise("nonmonotonic_poll", x.order is None,
                   x.order or "a consumer's position moves back only if committed data vanished")


CLASS = AnomalyClass.of(__name__, label="poll order", contract="v1", owner="partition", html="nonmono&shy;tonic poll")
