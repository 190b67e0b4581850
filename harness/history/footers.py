"""What a run's Parquet files hold, from their footers where the footers can tell.

The checker needs every topic of every file before its first shuffle, and validation checks that
run.json lists every topic the history wrote to, each with enough partitions. Row-group statistics
name them without reading data when each row group holds one topic, as every history this harness
writes does; otherwise the topic column alone is read (dictionary-encoded, so a pass over it is
cheap).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq


def footer_stats(f: Path, column: str) -> tuple[set | None, Any]:
    """What the footer's row-group statistics say of ``column``, without reading data:
    (its distinct values, or None unless every row group holds one value or only nulls; its largest
    value, or None when a row group has no statistics)."""
    meta = pq.ParquetFile(f).metadata
    idx = meta.schema.to_arrow_schema().get_field_index(column)
    if idx < 0:
        return None, None
    values: set | None = set()
    top = None
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        st = rg.column(idx).statistics
        if st is None or st.null_count is None or (st.null_count < rg.num_rows and not st.has_min_max):
            return None, None
        if values is not None and st.null_count:
            values.add(None)
        if st.null_count == rg.num_rows:
            continue
        top = st.max if top is None else max(top, st.max)
        if values is not None and st.min == st.max:
            values.add(st.min)
        else:
            values = None
    return values, top


def topics_of(f: Path) -> set[str | None]:
    """Every topic in one file: from the footer when it can tell, else from the column."""
    names, _ = footer_stats(f, "topic")
    if names is not None and all(t is None or isinstance(t, str) for t in names):
        return names
    column = pq.read_table(f, columns=["topic"]).column("topic")
    return {t.as_py() for t in pc.unique(column)}




def max_partitions(f: Path) -> dict[str | None, int | None]:
    """Each topic of one file and the highest partition written to it (None: no partition), from the
    footer when it holds one topic, else from the topic and partition columns."""
    topics = topics_of(f)
    if len(topics) == 1:
        _, top = footer_stats(f, "partition")
        if top is not None or pq.ParquetFile(f).metadata.num_rows == 0:
            return {next(iter(topics)): top}
    table = pq.read_table(f, columns=["topic", "partition"])
    grouped = table.group_by("topic").aggregate([("partition", "max")])
    return dict(zip(grouped["topic"].to_pylist(), grouped["partition_max"].to_pylist(), strict=True))
