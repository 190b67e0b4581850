"""A small in-memory implementation of the contract's seven definitions.

It is written to be obviously equal to the text of history-contract.md, not fast:
the property-based tests compare the Spark checker against it on generated histories.
"""

from __future__ import annotations

import itertools
from collections import defaultdict


def count_anomalies(produced: list[dict], consumed: list[dict], replicas: list[dict]) -> dict[str, int]:
    final = {(r["topic"], r["partition"], r["offset"], r["value"]) for r in consumed if r["phase"] == "final"}
    final_values = {(t, p, v) for t, p, _, v in final}

    # lost: distinct values, status ok, acks != 0, absent from the final log (of their partition)
    lost = {
        r["value"] for r in produced
        if r["status"] == "ok" and r["acks"] != "0" and (r["topic"], r["partition"], r["value"]) not in final_values
    }

    # divergence: distinct (t, p, o) with two or more different values over replicas and consumed
    seen: dict[tuple, set] = defaultdict(set)
    for r in [*replicas, *consumed]:
        seen[(r["topic"], r["partition"], r["offset"])].add(r["value"])
    divergence = {k for k, vs in seen.items() if len(vs) >= 2}

    # uncommitted_read: distinct (t, p, o, v) read live, not in the final log at that offset,
    # or read at an offset >= the hw recorded with it
    uncommitted = set()
    for r in consumed:
        if r["phase"] != "live":
            continue
        key = (r["topic"], r["partition"], r["offset"], r["value"])
        if key not in final or (r["hw"] is not None and r["offset"] >= r["hw"]):
            uncommitted.add(key)

    # duplicate: distinct values at two or more offsets of the final log
    offsets_of: dict[str, set] = defaultdict(set)
    for t, p, o, v in final:
        offsets_of[v].add((t, p, o))
    duplicate = {v for v, os_ in offsets_of.items() if len(os_) >= 2}

    # nonmonotonic_send: per (producer, t, p), ok rows with acks != 0 and an offset, in seq order
    sends: dict[tuple, list] = defaultdict(list)
    for r in produced:
        if r["status"] == "ok" and r["acks"] != "0" and r["offset"] is not None:
            sends[(r["producer"], r["topic"], r["partition"])].append((r["seq"], r["offset"]))
    nonmono_send = 0
    for rows in sends.values():
        rows.sort()
        nonmono_send += sum(1 for a, b in itertools.pairwise(rows) if b[1] <= a[1])

    # nonmonotonic_poll: per (consumer, t, p), live rows in seq order
    polls: dict[tuple, list] = defaultdict(list)
    for r in consumed:
        if r["phase"] == "live":
            polls[(r["consumer"], r["topic"], r["partition"])].append((r["seq"], r["offset"]))
    nonmono_poll = 0
    for rows in polls.values():
        rows.sort()
        nonmono_poll += sum(1 for a, b in itertools.pairwise(rows) if b[1] <= a[1])

    # phantom: distinct values in the final log never produced
    produced_values = {r["value"] for r in produced}
    phantom = {v for _, _, _, v in final if v not in produced_values}

    return {
        "lost": len(lost),
        "divergence": len(divergence),
        "uncommitted_read": len(uncommitted),
        "duplicate": len(duplicate),
        "nonmonotonic_send": nonmono_send,
        "nonmonotonic_poll": nonmono_poll,
        "phantom": len(phantom),
    }
