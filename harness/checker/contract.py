"""Values the Parquet schema cannot express, checked as the data is read.

Each check is a flag bit that the prepared aggregations OR together (prepare.per_offset and
prepare.per_value), so a clean history pays no pass of its own; only a breach is counted, with a
pass over that file, for the message that names the file, the column and what is allowed.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from harness.history import ACKS, CONSUMED, PHASES, PRODUCED, STATUSES, HistoryError, RunDir

# Breaches take the flag bits above those each aggregation uses for itself.
BAD_SHIFT = {PRODUCED: 6, CONSUMED: 3}


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

    A run without a final read breaks the contract too: every count is measured against it.
    """
    for i, r in enumerate(runs):
        for name, checks in contract_checks().items():
            for j, (col, (cond, allowed)) in enumerate(checks.items()):
                if flags.get(i, {}).get(name, 0) & (1 << (BAD_SHIFT[name] + j)):
                    n = frames[name].filter((F.col("run") == i) & cond).count()
                    raise HistoryError(f"{r.path / name}: column '{col}' has {n} rows outside the contract "
                                       f"(allowed: {allowed})")
        if not final_rows.get(i):
            raise HistoryError(f"{r.path / CONSUMED}: no rows with phase 'final' (the full read after healing "
                               "that every count is measured against)")
