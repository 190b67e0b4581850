"""A small in-memory implementation of the contract's definitions (v1 and v2), one function each.

It is written to be obviously equal to the text of history-contract.md, not fast: the tests
compare the Spark checker against it on the histories they build and on generated ones.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

Rows = list[dict]


def _final(consumed: Rows) -> set[tuple]:
    """The final log: (topic, partition, offset, value) read in phase "final"."""
    return {(r["topic"], r["partition"], r["offset"], r["value"]) for r in consumed if r["phase"] == "final"}


def _outcome(txns: Rows) -> dict[str, str]:
    return {t["txn"]: t["outcome"] for t in txns}


def _is_committed(value: str, produced: Rows, txns: Rows) -> bool:
    """Txn null (or never produced: a phantom) or outcome "committed"."""
    out = _outcome(txns)
    txn = next((r.get("txn") for r in produced if r["value"] == value), None)
    return txn is None or out.get(txn) == "committed"


def lost(produced: Rows, consumed: Rows, txns: Rows = ()) -> int:
    """Distinct committed values, status ok, acks != 0, absent from the final log (of their partition)."""
    final_values = {(t, p, v) for t, p, _, v in _final(consumed)}
    out = _outcome(txns)
    return len({r["value"] for r in produced if r["status"] == "ok" and r["acks"] != "0"
                and (r.get("txn") is None or out.get(r["txn"]) == "committed")
                and (r["topic"], r["partition"], r["value"]) not in final_values})


def divergence(consumed: Rows, replicas: Rows) -> int:
    """Distinct (t, p, o) with two or more different values over replicas and consumed (both phases)."""
    seen: dict[tuple, set] = defaultdict(set)
    for r in [*replicas, *consumed]:
        seen[(r["topic"], r["partition"], r["offset"])].add(r["value"])
    return sum(1 for vs in seen.values() if len(vs) >= 2)


def uncommitted_read(consumed: Rows) -> int:
    """Distinct (t, p, o, v) read live, not in the final log at that offset, or read at an offset >= its hw."""
    final = _final(consumed)
    found = set()
    for r in consumed:
        key = (r["topic"], r["partition"], r["offset"], r["value"])
        if r["phase"] == "live" and (key not in final or (r["hw"] is not None and r["offset"] >= r["hw"])):
            found.add(key)
    return len(found)


def duplicate(consumed: Rows) -> int:
    """Distinct values at two or more offsets of the final log."""
    places: dict[str, set] = defaultdict(set)
    for t, p, o, v in _final(consumed):
        places[v].add((t, p, o))
    return sum(1 for ps in places.values() if len(ps) >= 2)


def _regressions(groups: dict[tuple, list[tuple[int, int]]]) -> int:
    """Adjacent (seq, offset) pairs, in seq order within each group, whose later offset is lower or equal."""
    n = 0
    for rows in groups.values():
        rows.sort()
        n += sum(1 for a, b in itertools.pairwise(rows) if b[1] <= a[1])
    return n


def nonmonotonic_send(produced: Rows) -> int:
    """Per (producer, t, p), ok rows with acks != 0 and an offset, in seq order: later offset <= earlier."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in produced:
        if r["status"] == "ok" and r["acks"] != "0" and r["offset"] is not None:
            groups[(r["producer"], r["topic"], r["partition"])].append((r["seq"], r["offset"]))
    return _regressions(groups)


def nonmonotonic_poll(consumed: Rows) -> int:
    """Per (consumer, t, p), live rows in seq order: later offset <= earlier."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in consumed:
        if r["phase"] == "live":
            groups[(r["consumer"], r["topic"], r["partition"])].append((r["seq"], r["offset"]))
    return _regressions(groups)


def phantom(produced: Rows, consumed: Rows) -> int:
    """Distinct values in the final log never produced."""
    produced_values = {r["value"] for r in produced}
    return len({v for _, _, _, v in _final(consumed) if v not in produced_values})


def _read_committed(consumed: Rows) -> Rows:
    """R: the rows of read_committed readers."""
    return [r for r in consumed if r.get("isolation") == "read_committed"]


def aborted_read(produced: Rows, consumed: Rows, txns: Rows) -> int:
    """Distinct values whose outcome is "aborted" that appear in R."""
    out = _outcome(txns)
    aborted = {r["value"] for r in produced if r.get("txn") is not None and out.get(r["txn"]) == "aborted"}
    return len({r["value"] for r in _read_committed(consumed)} & aborted)


def torn_txn(produced: Rows, consumed: Rows, txns: Rows) -> int:
    """Distinct committed transactions with at least one value in the final log and one absent from it."""
    in_final = {v for _, _, _, v in _final(consumed)}
    n = 0
    for t in txns:
        if t["outcome"] != "committed":
            continue
        values = [r["value"] for r in produced if r.get("txn") == t["txn"]]
        if any(v in in_final for v in values) and any(v not in in_final for v in values):
            n += 1
    return n


def precommitted_read(produced: Rows, consumed: Rows, txns: Rows) -> int:
    """Distinct committed values read in R before their transaction's commit_ts_ms."""
    by_txn = {t["txn"]: t for t in txns}
    found = set()
    for r in _read_committed(consumed):
        for s in produced:
            t = by_txn.get(s.get("txn")) if s["value"] == r["value"] else None
            if t and t["outcome"] == "committed" and t["commit_ts_ms"] is not None \
                    and r["poll_ts_ms"] < t["commit_ts_ms"]:
                found.add(r["value"])
    return len(found)


def poll_skip(produced: Rows, consumed: Rows, txns: Rows) -> int:
    """Per (consumer, t, p, generation), live rows in seq order, m the highest offset up to row i: pairs
    (i, i+1) whose offset o > m with a value readable by the consumer in the final log strictly between."""
    final = _final(consumed)
    groups: dict[tuple, list] = defaultdict(list)
    for r in consumed:
        if r["phase"] == "live":
            groups[(r["consumer"], r["topic"], r["partition"], r.get("generation"))].append(r)
    n = 0
    for (_, t, p, _), rows in groups.items():
        rows.sort(key=lambda r: r["seq"])
        for i in range(len(rows) - 1):
            m = max(r["offset"] for r in rows[: i + 1])
            o = rows[i + 1]["offset"]
            rc = rows[i].get("isolation") == "read_committed"
            if o > m and any(ft == t and fp == p and m < fo < o and (not rc or _is_committed(fv, produced, txns))
                             for ft, fp, fo, fv in final):
                n += 1
    return n


def _group_final(offsets: Rows) -> dict[tuple, int]:
    return {(r["group"], r["topic"], r["partition"]): r["offset"] for r in offsets if r["phase"] == "final"}


def group_unseen(produced: Rows, consumed: Rows, txns: Rows, offsets: Rows) -> int:
    """Distinct (group, value) in the final log below the group's final committed offset, readable by
    the group's isolation, that no consumer of the group returned."""
    found = set()
    for (g, t, p), committed_offset in _group_final(offsets).items():
        rows = [r for r in consumed if r.get("group") == g]
        rc = any(r.get("isolation") == "read_committed" for r in rows)
        seen = {r["value"] for r in rows}
        for ft, fp, fo, fv in _final(consumed):
            if (ft, fp) == (t, p) and fo < committed_offset and fv not in seen \
                    and (not rc or _is_committed(fv, produced, txns)):
                found.add((g, fv))
    return len(found)


def offset_regression(offsets: Rows) -> int:
    """Per (group, t, p), live commits ordered by (ts_ms, offset): adjacent pairs whose later offset is lower."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in offsets:
        if r["phase"] == "live":
            groups[(r["group"], r["topic"], r["partition"])].append((r["ts_ms"], r["offset"]))
    return sum(sum(1 for a, b in itertools.pairwise(sorted(rows)) if b[1] < a[1]) for rows in groups.values())


def _copies_in_final(produced: Rows, consumed: Rows, txns: Rows, copier: dict, outcomes: tuple[str, ...]) -> Rows:
    in_final = {v for _, _, _, v in _final(consumed)}
    out = _outcome(txns)
    return [r for r in produced if r["producer"] == copier["producer"] and r.get("source") is not None
            and r["value"] in in_final and out.get(r.get("txn")) in outcomes]


def eos_duplicate(produced: Rows, consumed: Rows, txns: Rows, copiers: list[dict]) -> int:
    """Per copier, distinct sources of two or more distinct committed copies in the final log."""
    n = 0
    for c in copiers:
        per_source: dict[str, set] = defaultdict(set)
        for r in _copies_in_final(produced, consumed, txns, c, ("committed",)):
            per_source[r["source"]].add(r["value"])
        n += sum(1 for vs in per_source.values() if len(vs) >= 2)
    return n


def eos_lost(produced: Rows, consumed: Rows, txns: Rows, offsets: Rows, copiers: list[dict]) -> int:
    """Per copier, distinct committed input values in the final log below its group's final committed
    offset that are the source of no committed or unknown copy in the final log."""
    final_offsets = _group_final(offsets)
    n = 0
    for c in copiers:
        copied = {r["source"] for r in _copies_in_final(produced, consumed, txns, c, ("committed", "unknown"))}
        missing = {fv for ft, fp, fo, fv in _final(consumed)
                   if ft in c["input_topics"] and (c["group"], ft, fp) in final_offsets
                   and fo < final_offsets[(c["group"], ft, fp)] and _is_committed(fv, produced, txns)
                   and fv not in copied}
        n += len(missing)
    return n


def count_anomalies(produced: Rows, consumed: Rows, replicas: Rows, txns: Rows = (), offsets: Rows = (),
                    copiers: list[dict] | None = None) -> dict[str, int]:
    copiers = copiers or []
    return {
        "lost": lost(produced, consumed, txns),
        "divergence": divergence(consumed, replicas),
        "uncommitted_read": uncommitted_read(consumed),
        "duplicate": duplicate(consumed),
        "nonmonotonic_send": nonmonotonic_send(produced),
        "nonmonotonic_poll": nonmonotonic_poll(consumed),
        "phantom": phantom(produced, consumed),
        "aborted_read": aborted_read(produced, consumed, txns),
        "torn_txn": torn_txn(produced, consumed, txns),
        "precommitted_read": precommitted_read(produced, consumed, txns),
        "poll_skip": poll_skip(produced, consumed, txns),
        "group_unseen": group_unseen(produced, consumed, txns, offsets),
        "offset_regression": offset_regression(offsets),
        "eos_duplicate": eos_duplicate(produced, consumed, txns, copiers),
        "eos_lost": eos_lost(produced, consumed, txns, offsets, copiers),
    }
