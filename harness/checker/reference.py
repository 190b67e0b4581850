"""What the anomaly classes' reference counts share: a small in-memory reading of the contract,
written to be obviously equal to the text of docs/history-contract.md, not fast. Each class's own
``reference`` (harness/checker/anomaly/) counts it over these; the tests compare the Spark checker
against them on the histories they build and on generated ones."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

Rows = list[dict]


@dataclass(frozen=True)
class Tables:
    """A history as rows: the contract's files, and run.json's copiers."""

    produced: Rows
    consumed: Rows
    replicas: Rows
    txns: Rows = ()  # type: ignore[assignment]
    offsets: Rows = ()  # type: ignore[assignment]
    copiers: list[dict] = field(default_factory=list)
    deliveries: Rows = ()  # type: ignore[assignment]
    share_acks: Rows = ()  # type: ignore[assignment]
    share_groups: list[dict] = field(default_factory=list)  # run.json's
    # topics an operator deleted and created again: topic -> (last deletion asked, new topic served or None)
    recreations: dict[str, tuple[int, int | None]] = field(default_factory=dict)


def share_partitions(share_groups: list[dict]) -> dict[tuple, tuple[int, int | None, int, str]]:
    """(group, topic, partition) -> (start offset, share-partition start offset after healing or
    None, delivery attempt limit, isolation), from run.json's share_groups."""
    out = {}
    for g in share_groups:
        ends = g.get("final_start_offsets") or {}
        for key, start in (g.get("start_offsets") or {}).items():
            topic, _, part = key.rpartition(":")
            out[(g["name"], topic, int(part))] = (start, ends.get(key), g.get("delivery_count_limit", 5),
                                                  g.get("isolation", "read_uncommitted"))
    return out


def redelivered_after(deliveries: Rows, share_acks: Rows, ack_type: str) -> int:
    """Distinct (group, value) pairs with an acknowledgement of ``ack_type`` whose outcome was "ok",
    and a delivery of that value to the group after it in time and acquired after the one it
    acknowledged: a delivery_count above that delivery's (the acknowledging member's last delivery
    of the value at or before the acknowledgement)."""
    found = set()
    for a in share_acks:
        if a["type"] != ack_type or a["outcome"] != "ok":
            continue
        own = [d for d in deliveries if (d["group"], d["member"], d["value"]) == (a["group"], a["member"], a["value"])
               and d["ts_ms"] <= a["ts_ms"]]
        if not own:
            continue
        acked = max(own, key=lambda d: (d["ts_ms"], d["delivery_count"] or 0))["delivery_count"] or 0
        if any(d["group"] == a["group"] and d["value"] == a["value"] and (d["delivery_count"] or 0) > acked
               and d["ts_ms"] > a["ts_ms"] for d in deliveries):
            found.add((a["group"], a["value"]))
    return len(found)


def final_log(consumed: Rows) -> set[tuple]:
    """The final log: (topic, partition, offset, value) read in phase "final"."""
    return {(r["topic"], r["partition"], r["offset"], r["value"]) for r in consumed if r["phase"] == "final"}


def outcomes(txns: Rows) -> dict[str, str]:
    """Each transaction's outcome."""
    return {t["txn"]: t["outcome"] for t in txns}


def is_committed(value: str, produced: Rows, txns: Rows) -> bool:
    """Txn null (or never produced: a phantom) or outcome "committed"."""
    out = outcomes(txns)
    txn = next((r.get("txn") for r in produced if r["value"] == value), None)
    return txn is None or out.get(txn) == "committed"


def regressions(groups: dict[tuple, list[tuple[int, int]]]) -> int:
    """Adjacent (seq, offset) pairs, in seq order within each group, whose later offset is lower or equal."""
    n = 0
    for rows in groups.values():
        rows.sort()
        n += sum(1 for a, b in itertools.pairwise(rows) if b[1] <= a[1])
    return n


def read_committed(consumed: Rows) -> Rows:
    """R: the rows of read_committed readers."""
    return [r for r in consumed if r.get("isolation") == "read_committed"]


def group_final(offsets: Rows) -> dict[tuple, int]:
    """Each group's committed offset read after healing, per (group, topic, partition)."""
    return {(r["group"], r["topic"], r["partition"]): r["offset"] for r in offsets if r["phase"] == "final"}


def copies_in_final(produced: Rows, consumed: Rows, txns: Rows, copier: dict, kept: tuple[str, ...]) -> Rows:
    """A copier's copies in the final log whose transaction's outcome is one of ``kept``."""
    in_final = {v for _, _, _, v in final_log(consumed)}
    out = outcomes(txns)
    return [r for r in produced if r["producer"] == copier["producer"] and r.get("source") is not None
            and r["value"] in in_final and out.get(r.get("txn")) in kept]

