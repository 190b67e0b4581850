"""Values the Parquet schema cannot express, checked as the data is read.

Each check is a flag bit that the prepared aggregations OR together (prepare.per_offset and
prepare.per_value), so a clean history pays no pass of its own; only a breach is counted, with a
pass over that file, for the message that names the file, the column and what is allowed.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from harness.checker.spark_api import F
from harness.history import (
    ACK_OUTCOMES,
    ACK_TYPES,
    ACKS,
    CONSUMED,
    DELIVERIES,
    ISOLATIONS,
    OFFSET_PHASES,
    OFFSETS,
    OUTCOMES,
    PHASES,
    PRODUCED,
    REPLICAS,
    SHARE_ACKS,
    STATUSES,
    TXNS,
    HistoryError,
    RunDir,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# Breaches take the flag bits above those each aggregation uses for itself.
BAD_SHIFT = {PRODUCED: 6, CONSUMED: 4}  # above each file's own flags (prepare.py)


def _bad_enum(c: str, values: tuple[str, ...]) -> Column:
    return F.col(c).isNull() | ~F.col(c).isin(*values)


def contract_checks() -> dict[str, dict[str, tuple[Column, str]]]:
    """Per file: column -> (the row breaks the contract, what is allowed)."""
    return {
        PRODUCED: {
            "status": (_bad_enum("status", STATUSES), ", ".join(STATUSES)),
            "acks": (_bad_enum("acks", ACKS), ", ".join(ACKS)),
            "value": (F.col("value").isNull(), "non-null string"),
            "seq": (F.col("seq").isNull(), "non-null integer"),
            "partition": (F.col("partition").isNull(), "non-null integer"),
        },
        CONSUMED: {
            "phase": (_bad_enum("phase", PHASES), ", ".join(PHASES)),
            "offset": (F.col("offset").isNull(), "non-null integer"),
            "value": (F.col("value").isNull(), "non-null string"),
            "seq": (F.col("seq").isNull(), "non-null integer"),
        },
    }


def bad_bits(name: str) -> list[tuple[Column, int]]:
    """One (condition, flag bit) per contract check of file ``name``."""
    return [(cond, 1 << (BAD_SHIFT[name] + i)) for i, (cond, _) in enumerate(contract_checks()[name].values())]


def raise_if_invalid(runs: list[RunDir], frames: dict[str, DataFrame], flags: dict[int, dict[str, int]],
                     final_rows: dict[int, int]) -> None:
    """Raise HistoryError for the first breach: ``flags`` holds each run's OR of row flags per file.

    A run without a final read breaks the contract too: every count is measured against it. A final
    read that found nothing is one only where the final log was empty: run.json says the final read
    ran (its ``final_read`` phase) and no replica holds a record (replicas.parquet has no row).
    """
    for i, r in enumerate(runs):
        for name, checks in contract_checks().items():
            for j, (col, (cond, allowed)) in enumerate(checks.items()):
                if flags.get(i, {}).get(name, 0) & (1 << (BAD_SHIFT[name] + j)):
                    n = frames[name].filter((F.col("run") == i) & cond).count()
                    raise HistoryError(f"{r.path / name}: column '{col}' has {n} rows outside the contract "
                                       f"(allowed: {allowed})")
        if not final_rows.get(i) and not final_log_empty(r):
            raise HistoryError(f"{r.path / CONSUMED}: no rows with phase 'final' (the full read after healing "
                               "that every count is measured against)")


def final_log_empty(r: RunDir) -> bool:
    """The final read ran and found nothing, and the replicas agree that there was nothing to find
    (every record acknowledged, if any, is then lost: a producer whose sends all went unanswered, or a
    topic created again that nothing was written to)."""
    return "final_read" in (r.run.get("phases") or {}) and r.rows.get(REPLICAS, 0) == 0


def _two_isolations(consumed: DataFrame, who: str) -> DataFrame:
    iso = F.coalesce(F.col("isolation"), F.lit("read_uncommitted"))
    return (consumed.filter(F.col(who).isNotNull() & (F.col("phase") == "live")).groupBy("run", who)
            .agg(F.countDistinct(iso).alias("n")).filter(F.col("n") > 1))


def v2_breaches(produced: DataFrame, consumed: DataFrame, txns: DataFrame | None, offsets: DataFrame | None,
                copiers: DataFrame | None) -> list[tuple[str, str, DataFrame]]:
    """(file, rule, rows breaking it) for each v2 rule the schema cannot express: enumerations, every
    txn in txns.parquet, one isolation level per consumer and per group, ``source`` only on a
    copier's sends."""
    bad_iso = F.col("isolation").isNotNull() & ~F.col("isolation").isin(*ISOLATIONS)
    out = [(CONSUMED, f"column 'isolation' outside the contract (allowed: {', '.join(ISOLATIONS)}, null)",
            consumed.filter(bad_iso))]
    if txns is not None:
        out.append((TXNS, f"column 'outcome' outside the contract (allowed: {', '.join(OUTCOMES)})",
                     txns.filter(_bad_enum("outcome", OUTCOMES))))
    if offsets is not None:
        out.append((OFFSETS, f"column 'phase' outside the contract (allowed: {', '.join(OFFSET_PHASES)})",
                    offsets.filter(_bad_enum("phase", OFFSET_PHASES))))
        out.append((OFFSETS, "a row of phase 'written' without its 'log_offset' (the coordinator's order)",
                    offsets.filter((F.col("phase") == "written") & F.col("log_offset").isNull())))
        out.append((OFFSETS, "two rows of phase 'final' for one (group, topic, partition) (the final read gives one)",
                    offsets.filter(F.col("phase") == "final").groupBy("run", "group", "topic", "partition")
                    .count().filter(F.col("count") > 1)))
    in_txn = produced.filter(F.col("txn").isNotNull()).select("run", "txn").distinct()
    orphans = in_txn if txns is None else in_txn.join(txns.select("run", "txn"), on=["run", "txn"], how="left_anti")
    out.append((PRODUCED, f"a non-null txn has no row in {TXNS} (every transaction needs one)", orphans))
    txn_or_none = F.coalesce(F.col("txn"), F.lit(""))
    out.append((PRODUCED, "a value is sent in two transactions, or in one and outside any (a value is unique)",
                produced.groupBy("run", "value").agg(F.countDistinct(txn_or_none).alias("n")).filter(F.col("n") > 1)))
    out.append((CONSUMED, "a consumer returned rows of two isolation levels (one consumer has one)",
                _two_isolations(consumed, "consumer")))
    out.append((CONSUMED, "a group's consumers returned rows of two isolation levels (one group has one)",
                _two_isolations(consumed, "group")))
    sourced = produced.filter(F.col("source").isNotNull()).select("run", "producer").distinct()
    if copiers is not None:
        sourced = sourced.join(copiers.select("run", "producer").distinct(), on=["run", "producer"], how="left_anti")
    out.append((PRODUCED, "column 'source' is set on a send whose producer is no copier's (run.json 'copiers')",
                sourced))
    return out


def share_breaches(deliveries: DataFrame | None, share_acks: DataFrame | None,
                   share_groups: DataFrame | None) -> list[tuple[str, str, DataFrame]]:
    """(file, rule, rows breaking it) of the share-group files: the acknowledgement enumerations, and
    every group they name declared in run.json's share_groups (its limit and offsets are read there)."""
    out = []
    if share_acks is not None:
        out.append((SHARE_ACKS, f"column 'type' outside the contract (allowed: {', '.join(ACK_TYPES)})",
                    share_acks.filter(_bad_enum("type", ACK_TYPES))))
        out.append((SHARE_ACKS, f"column 'outcome' outside the contract (allowed: {', '.join(ACK_OUTCOMES)})",
                    share_acks.filter(_bad_enum("outcome", ACK_OUTCOMES))))
    for name, frame in ((DELIVERIES, deliveries), (SHARE_ACKS, share_acks)):
        if frame is None:
            continue
        named = frame.select("run", "group").distinct()
        if share_groups is not None:
            named = named.join(share_groups.select("run", "group").distinct(), on=["run", "group"], how="left_anti")
        out.append((name, "a group is not in run.json's share_groups (its delivery limit and offsets are read there)",
                    named))
    return out


def raise_if_invalid_v2(runs: list[RunDir], produced: DataFrame, consumed: DataFrame, txns: DataFrame | None,
                        offsets: DataFrame | None, copiers: DataFrame | None,
                        shares: list[tuple[str, str, DataFrame]] = ()) -> None:
    """Raise HistoryError naming the file and the rule of the first v2 breach (in v2_breaches' order,
    then ``shares``: share_breaches), all rules checked in one Spark job."""
    rules = [*v2_breaches(produced, consumed, txns, offsets, copiers), *shares]
    found = reduce(lambda a, b: a.unionByName(b), [df.select("run", F.lit(k).alias("rule")) for k, (_, _, df)
                                           in enumerate(rules)])
    hits = found.groupBy("rule").agg(F.min("run").alias("run")).collect()
    if hits:
        first = min(hits, key=lambda r: r["rule"])
        name, rule, _ = rules[first["rule"]]
        raise HistoryError(f"{runs[first['run']].path / name}: {rule}")
