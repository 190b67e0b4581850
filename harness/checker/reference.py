"""A small in-memory implementation of the contract's seven definitions, one function each.

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


def lost(produced: Rows, consumed: Rows) -> int:
    """Distinct values, status ok, acks != 0, absent from the final log (of their partition)."""
    final_values = {(t, p, v) for t, p, _, v in _final(consumed)}
    return len({r["value"] for r in produced if r["status"] == "ok" and r["acks"] != "0"
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


def count_anomalies(produced: Rows, consumed: Rows, replicas: Rows) -> dict[str, int]:
    return {
        "lost": lost(produced, consumed),
        "divergence": divergence(consumed, replicas),
        "uncommitted_read": uncommitted_read(consumed),
        "duplicate": duplicate(consumed),
        "nonmonotonic_send": nonmonotonic_send(produced),
        "nonmonotonic_poll": nonmonotonic_poll(consumed),
        "phantom": phantom(produced, consumed),
    }
