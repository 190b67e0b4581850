"""Every anomaly class of the history contract, one module each (its definition, Spark count,
reference count, promise and labels: ``record.AnomalyClass``). A new class is one module here and
its line in CLASSES; the checker, the judge, the promise table, the terminal and the report read
this registry.

CLASSES is in reading order (the replication anomalies, then transactions, groups, copies and share
groups); no
code depends on that order: what differs between classes is in their records.
"""

from __future__ import annotations

from harness.checker.anomaly import (
    aborted_read,
    coordinator_regression,
    divergence,
    duplicate,
    eos_duplicate,
    eos_lost,
    group_unseen,
    lost,
    nonmonotonic_poll,
    nonmonotonic_send,
    offset_regression,
    old_topic_read,
    phantom,
    poll_skip,
    precommitted_read,
    share_accepted_redelivered,
    share_over_delivered,
    share_rejected_redelivered,
    share_unseen,
    torn_txn,
    uncommitted_read,
)
from harness.checker.anomaly.record import AnomalyClass, Workload
from harness.checker.reference import Tables
from harness.history import RunConfig

CLASSES: tuple[AnomalyClass, ...] = tuple(m.CLASS for m in (
    lost, divergence, uncommitted_read, duplicate, nonmonotonic_send, nonmonotonic_poll, phantom, old_topic_read,
    aborted_read, torn_txn, precommitted_read, poll_skip, group_unseen, offset_regression, coordinator_regression,
    eos_duplicate, eos_lost,
    share_unseen, share_accepted_redelivered, share_rejected_redelivered, share_over_delivered,
))
BY_NAME: dict[str, AnomalyClass] = {c.name: c for c in CLASSES}
ANOMALIES: tuple[str, ...] = tuple(BY_NAME)
V1_ANOMALIES: tuple[str, ...] = tuple(c.name for c in CLASSES if c.contract == "v1")
V2_ANOMALIES: tuple[str, ...] = tuple(c.name for c in CLASSES if c.contract == "v2")
# Judged against the producer that wrote the value (a copier's: its producer), the group, or else
# the partition's topic.
PRODUCER_ANOMALIES: tuple[str, ...] = tuple(c.name for c in CLASSES if c.owner == "producer")
GROUP_ANOMALIES: tuple[str, ...] = tuple(c.name for c in CLASSES if c.owner == "group")

__all__ = ["ANOMALIES", "BY_NAME", "CLASSES", "GROUP_ANOMALIES", "PRODUCER_ANOMALIES", "V1_ANOMALIES",
           "V2_ANOMALIES", "AnomalyClass", "reference_counts", "showable", "workloads_of"]


def reference_counts(t: Tables) -> dict[str, int]:
    """Every class's reference count of one history."""
    return {c.name: c.reference(t) for c in CLASSES}


def workloads_of(run: RunConfig) -> frozenset[Workload]:
    """The parts of ``run``'s workload (run.json) that can show an anomaly class (``AnomalyClass.workload``)."""
    parts: set[Workload] = {"records"}
    if run.copiers:
        parts |= {"copier", "transactions"}
    if any(p.transactional for p in run.producers):
        parts.add("transactions")
    if run.groups:
        parts.add("groups")
    if run.share_groups:
        parts.add("share_groups")
    return frozenset(parts)


def showable(run: RunConfig, counts: dict[str, int]) -> tuple[str, ...]:
    """The classes ``run`` could show (its workload's), and any it counted, in CLASSES' order: what a
    table of this run needs as columns; the others are zero by construction."""
    parts = workloads_of(run)
    return tuple(c.name for c in CLASSES if c.workload in parts or counts.get(c.name))
