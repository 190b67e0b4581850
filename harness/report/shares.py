"""The report's share-group tables: per share group, what each member was given and how its
acknowledgements ended, and per partition where the group started and where it ended against the
final log (docs/share-groups.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from harness.checker.verdict import Verdict
from harness.history import CONSUMED, DELIVERIES, SHARE_ACKS, RunConfig


def share_group_tables(d: Path, verdict: Verdict, run: RunConfig) -> list[dict]:
    """Per share group: its verdict row, its members (deliveries, redeliveries, acknowledgements by
    type and outcome) and its partitions (start offset, start offset after healing, log end)."""
    d = Path(d)
    groups = {g.name: g for g in run.share_groups}
    rows = [g for g in verdict.by_group if g.group in groups]
    if not rows or not (d / DELIVERIES).exists():
        return []
    deliveries = pq.read_table(d / DELIVERIES, columns=["group", "member", "delivery_count"]).to_pylist()
    acks = pq.read_table(d / SHARE_ACKS, columns=["group", "member", "type", "outcome"]).to_pylist() \
        if (d / SHARE_ACKS).exists() else []
    final_end: dict[str, int] = {}
    for r in pq.read_table(d / CONSUMED, columns=["phase", "topic", "partition", "offset"]).to_pylist():
        if r["phase"] == "final":
            key = f"{r['topic']}:{r['partition']}"
            final_end[key] = max(final_end.get(key, 0), r["offset"] + 1)
    out = []
    for g in rows:
        spec = groups[g.group]
        given = Counter(r["member"] for r in deliveries if r["group"] == g.group)
        again = Counter(r["member"] for r in deliveries if r["group"] == g.group and (r["delivery_count"] or 1) > 1)
        acked = Counter((r["member"], r["type"], r["outcome"]) for r in acks if r["group"] == g.group)
        crashed = crashes(d / "members" / g.group)
        members = [{"member": m, "given": given[m], "again": again[m], "crashed": crashed.get(m, 0),
                    "acks": ", ".join(f"{t} {o} {n}" for (mm, t, o), n in sorted(acked.items()) if mm == m)}
                   for m in sorted(given)]
        starts, ends = spec.start_offsets, spec.final_start_offsets
        parts = [{"partition": k, "start": starts.get(k), "end": ends.get(k), "log_end": final_end.get(k)}
                 for k in sorted(set(starts) | set(ends))]
        out.append({"verdict": g, "spec": spec, "members": members, "partitions": parts})
    return out


def crashes(members_dir: Path) -> Counter:
    """Per member process: whether it died on a poison record (its ``crash`` line; 0 or 1)."""
    out: Counter = Counter()
    for path in members_dir.glob("*.jsonl"):
        out[path.stem] = int('"t":"crash"' in path.read_text(errors="replace"))
    return out


__all__ = ["share_group_tables"]
