"""share_rejected_redelivered: distinct (group, value) pairs: a member of the share group
acknowledged the value as rejected with outcome "ok" (share_acks.parquet), and the value was
delivered to a member of the group (deliveries.parquet) after the acknowledgement's ts_ms with a
delivery_count above that of the delivery the acknowledgement was for (the acknowledging member's
last delivery of the value at or before the acknowledgement).

KIP-932: a rejected record is archived, unprocessable: it is not acquired again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.anomaly.share_unseen import SHARE
from harness.checker.excuses import SAFE, Excuses, Promise
from harness.checker.findings import delivered_after_ack, finding
from harness.checker.prepare import Inputs
from harness.checker.reference import Tables, redelivered_after

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def count(i: Inputs) -> DataFrame | None:
    """share_rejected_redelivered: distinct (group, value) pairs acquired again (a higher delivery
    count) after a reject acknowledgement of the value succeeded.

    The example is the acknowledgement and the first delivery after it."""
    found = delivered_after_ack(i, "reject")
    return None if found is None else finding("share_rejected_redelivered", found, "group", "ack_ts_ms")


def reference(h: Tables) -> int:
    """Distinct (group, value): a reject acknowledged "ok", a delivery with a higher count after it."""
    return redelivered_after(h.deliveries, h.share_acks, "reject")


def promise(x: Excuses) -> Promise:
    return Promise("share_rejected_redelivered", x.part is None,
                   x.part or f"{SAFE}: a rejected record is not delivered again")


def group_promise(x: Excuses, commit: str) -> Promise:
    if commit != SHARE:
        return Promise("share_rejected_redelivered", True, "a consumer group has no share deliveries: none to judge")
    return Promise("share_rejected_redelivered", x.part is None, x.part or "KIP-932: a record whose rejection "
                   "was acknowledged is archived and is not delivered again")


CLASS = AnomalyClass.of(__name__, label="rejected again", contract="v2", owner="group",
                        html="rejected re&shy;delivered", workload="share_groups")
