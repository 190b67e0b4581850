"""share_accepted_redelivered: distinct (group, value) pairs: a member of the share group
acknowledged the value as accepted with outcome "ok" (share_acks.parquet), and the value was
delivered to a member of the group (deliveries.parquet) after the acknowledgement's ts_ms with a
delivery_count above that of the delivery the acknowledgement was for (the acknowledging member's
last delivery of the value at or before the acknowledgement).

KIP-932: an acknowledgement that succeeded moves the record to Acknowledged, a final state: it is
not acquired again, so no later delivery has a higher delivery count. A member whose acquisition
lock had run out gets an error while another member holds the record; once the record is archived
(below the share-partition start offset) a late acknowledgement is accepted silently (Kafka's
SharePartitionTest, testAcknowledgeBatchPostLsoMovement). Either way an "ok" leaves the record in a
final state. A delivery counts only if it came after the acknowledgement both in time and in the
broker's order of acquisitions (its count): a member frozen with a fetch response in hand returns,
after it wakes, records acquired before it froze; and a late "ok" for a record archived meanwhile
follows deliveries to others that it did not precede."""

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
    """share_accepted_redelivered: distinct (group, value) pairs acquired again (a higher delivery
    count) after an accept acknowledgement of the value succeeded.

    The example is the acknowledgement and the first delivery after it."""
    found = delivered_after_ack(i, "accept")
    return None if found is None else finding("share_accepted_redelivered", found, "group", "ack_ts_ms")


def reference(h: Tables) -> int:
    """Distinct (group, value): an accept acknowledged "ok", a delivery with a higher count after it."""
    return redelivered_after(h.deliveries, h.share_acks, "accept")


def promise(x: Excuses) -> Promise:
    return Promise("share_accepted_redelivered", x.part is None,
                   x.part or f"{SAFE}: an accepted record is not delivered again")


def group_promise(x: Excuses, commit: str) -> Promise:
    """An acknowledged record's state is written by the share coordinator (its __share_group_state
    topic: RF 3, min.insync 2) before the acknowledgement succeeds: only the partition's own
    disagreements excuse a redelivery."""
    if commit != SHARE:
        return Promise("share_accepted_redelivered", True, "a consumer group has no share deliveries: none to judge")
    return Promise("share_accepted_redelivered", x.part is None, x.part or "KIP-932: a record whose acceptance "
                   "was acknowledged is in a final state and is not delivered again")


CLASS = AnomalyClass.of(__name__, label="accepted again", contract="v2", owner="group",
                        html="accepted re&shy;delivered", workload="share_groups")
