"""The check of one or many runs: prepare the shared frames, call every finding function, and bring
the counts and the first examples of each back in one action. Nothing here defines an anomaly;
anomalies.py does, one function each."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from harness.checker.anomaly import CLASSES
from harness.checker.exposure import exposure, fault_starts
from harness.checker.measures import ack_buckets, fold_usage, producer_usage
from harness.checker.prepare import holding, prepare
from harness.checker.reported import REPORTED_FINDINGS
from harness.checker.session import cores
from harness.history import SCHEMAS, RunDir

EXAMPLES = 10
CACHE_PLAIN_MAX = 1 << 30  # Parquet input up to which the cached aggregations stay uncompressed


@dataclass
class Findings:
    """One kind's findings over every run: counts per (run, attribution) and the first examples per run."""

    counts: dict[tuple[int, str], int] = field(default_factory=dict)
    examples: dict[int, list[dict]] = field(default_factory=dict)

    def count(self, run: int) -> int:
        return sum(n for (r, _), n in self.counts.items() if r == run)


@dataclass
class JobResult:
    findings: dict[str, Findings]  # every anomaly and every reported kind, by name
    final_rows: dict[int, int]
    buckets: dict[int, list[dict]]  # per run: per (topic, partition, second) ack stats
    span: dict[int, tuple[int | None, int | None]]  # per run: first and last send_ts_ms
    producers: dict[int, dict[str, dict[str, list[str]]]]  # per run: producer -> topics and acks it used
    exposure: dict[int, dict[int, dict]] = field(default_factory=dict)  # per run: fault -> exposure.exposure's row

    def of(self, kind: str) -> Findings:
        return self.findings.get(kind, Findings())


CODEGEN_MIN_BYTES = 16 << 20  # Parquet input below which a check interprets its expressions


def input_bytes(runs: list[RunDir]) -> int:
    return sum((r.path / n).stat().st_size for r in runs for n in SCHEMAS)


def configure(spark: SparkSession, runs: list[RunDir]) -> None:
    """Shuffle partitions for the input's size (about one per 32 MiB: tiny histories must not pay
    for empty tasks), the cache compressed only when plain rows would crowd the driver (they take
    about 1.7 times the Parquet input), and generated code only where it pays for its compiling:
    a check plans some forty stages, and on a run's few MiB Janino compiling them took longer than
    interpreting them (9.3 -> 7.3 s on the warm server, 10 -> 6.3 s embedded, a 67k-row run; equal
    at 1M records, 45 MB; benchmarks/README.md)."""
    size = input_bytes(runs)
    parts = max(1, min(cores(spark) * 4, size // (32 << 20) + 1))
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))
    spark.conf.set("spark.sql.inMemoryColumnarStorage.compressed", str(size > CACHE_PLAIN_MAX).lower())
    compiled = size >= CODEGEN_MIN_BYTES
    spark.conf.set("spark.sql.codegen.wholeStage", str(compiled).lower())
    spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK" if compiled else "NO_CODEGEN")


def collect_findings(found: list[DataFrame], n_examples: int) -> dict[str, Findings]:
    """Counts per attribution and the first ``n_examples`` of each kind and run, in one action.

    One pass over the findings, nothing cached: each row is numbered within its (kind, run) for the
    examples and within its (kind, run, attr) for the counts, both windows on one shuffle by (kind,
    run), and only a count's first row and the examples come back. Caching the union instead cost
    two analyses of the whole plan (to cache it and to release it), each longer than a small
    history's whole execution."""
    allf = reduce(lambda a, b: a.unionByName(b), found)
    by_run = Window.partitionBy("kind", "run")
    by_attr = Window.partitionBy("kind", "run", "attr")
    numbered = (allf.withColumn("_ex", F.row_number().over(by_run.orderBy("sort", "payload")))
                .withColumn("_at", F.row_number().over(by_attr.orderBy("sort", "payload")))
                .withColumn("_n", F.count(F.lit(1)).over(by_attr)))
    example = (F.col("_ex") <= n_examples) & (F.col("kind") != "acks0_missing")
    rows = (numbered.filter((F.col("_at") == 1) | example)
            .select("kind", "run", "attr", F.when(F.col("_at") == 1, F.col("_n")).alias("n"),
                    F.when(example, F.col("payload")).alias("payload"), "_ex"))
    out: dict[str, Findings] = {}
    for r in sorted(rows.collect(), key=lambda r: r["_ex"]):
        res = out.setdefault(r["kind"], Findings())
        if r["n"] is not None:
            res.counts[(r["run"], r["attr"])] = r["n"]
        if r["payload"] is not None:
            res.examples.setdefault(r["run"], []).append(json.loads(r["payload"]))
    return out


def _rows(df: DataFrame) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def analyse(spark: SparkSession, runs: list[RunDir], n_examples: int = EXAMPLES) -> JobResult:
    """Check ``runs`` in one Spark session; raises HistoryError on a contract breach. What it caches
    is released however it ends, for a caller that goes on using the session."""
    configure(spark, runs)
    with holding() as hold, ThreadPoolExecutor(2) as side:
        inputs = prepare(spark, runs, hold)
        # Small results beside the findings' action, on the cores it leaves idle.
        buckets_rows = side.submit(_rows, ack_buckets(inputs.produced))
        usage_rows = side.submit(_rows, producer_usage(inputs.produced))
        starts = fault_starts(spark, runs)
        exposure_rows = side.submit(_rows, exposure(inputs, starts)) if starts is not None else None
        counts = [c.count for c in CLASSES] + list(REPORTED_FINDINGS.values())
        found = [df for f in counts if (df := f(inputs)) is not None]
        findings = collect_findings(found, n_examples)
        buckets: dict[int, list[dict]] = {}
        for row in buckets_rows.result():
            buckets.setdefault(row.pop("run"), []).append(row)
        producers, span = fold_usage(usage_rows.result())
        exposed: dict[int, dict[int, dict]] = {}
        for row in exposure_rows.result() if exposure_rows is not None else []:
            exposed.setdefault(row.pop("run"), {})[row["fault"]] = row
    return JobResult(findings, inputs.final_rows, buckets, span, producers, exposed)
