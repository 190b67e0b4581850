"""Reconciler benchmark: `kchaos check` (PySpark, start-up included) against DuckDB computing the same
seven counts on the same files, at 1M and 10M records. Prints both times, the ratio, and the growth.

A history of N records: N produced rows over 12 partitions, N live reads, N final reads, 3N replica
rows, with 50 of each of the seven anomalies planted so that no count is zero. DuckDB's counts must equal
the checker's, so this doubles as a cross-check of the definitions.

With --spark-sql it also times Spark itself running DuckDB's query (the same SQL, in a fresh
driver, start-up included; its counts must match too): the engine's own speed on the plain
definitions, beside the checker's. About 90 s at 10M records on 2 cores, so not by default.

Usage: python benchmarks/checker.py [--sizes 1000000 10000000] [--dir /tmp/kchaos-bench] [--spark-sql]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.history import CONSUMED_SCHEMA, PRODUCED_SCHEMA, REPLICAS_SCHEMA

PARTS = 12
T0 = 1_700_000_000_000


def _strings(prefix: str, ids: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pa.array(ids).cast(pa.string()), "")


def generate(n: int, d: Path) -> None:
    """Write a history with n records; a handful of each anomaly is planted at known places."""
    d.mkdir(parents=True, exist_ok=True)
    ids = np.arange(n, dtype=np.int64)
    part = (ids % PARTS).astype(np.int32)
    offset = ids // PARTS
    send_ts = T0 + ids // 20  # 20 sends per ms
    values = _strings("v", ids)
    k = 50  # planted per anomaly
    status = np.full(n, "ok", dtype=object)
    status[n // 3: n // 3 + k] = "info"
    producer = _strings("p", ids % 4)
    # nonmonotonic_send and _poll: k pairs of adjacent records of one (producer or consumer, partition),
    # ids a and a + 12, handed over in swapped order (their seqs exchanged, offsets kept)
    pairs = np.arange(k) * 48
    send_seq, poll_seq = ids // 4, ids.copy()
    for seq, a in ((send_seq, 1000 + pairs), (poll_seq, 2000 + pairs)):
        seq[a], seq[a + PARTS] = seq[a + PARTS], seq[a].copy()
    produced = pa.table({
        "value": values, "producer": producer, "seq": pa.array(send_seq), "topic": pa.array(["t"] * n),
        "partition": pa.array(part), "acks": pa.array(["all"] * n), "status": pa.array(status.tolist()),
        "offset": pa.array(offset), "send_ts_ms": pa.array(send_ts), "ack_ts_ms": pa.array(send_ts + 3),
        "error": pa.nulls(n, pa.string()),
    }, schema=PRODUCED_SCHEMA)
    pq.write_table(produced, d / "produced.parquet")

    # final log: everything except k lost records; k phantoms appended at the end of partition 0,
    # and k records of partition 1 appended again at its end (duplicates)
    keep = np.ones(n, dtype=bool)
    keep[n // 2: n // 2 + k] = False
    f_ids = ids[keep]
    dup_ids = 1 + np.arange(k) * PARTS
    end = offset.max() + 1 + np.arange(k)
    m = len(f_ids) + 2 * k
    fin = pa.table({
        "consumer": pa.array(["final"] * m),
        "seq": pa.array(np.arange(m)),
        "topic": pa.array(["t"] * m),
        "partition": pa.array(np.concatenate([part[keep], np.zeros(k, np.int32), np.ones(k, np.int32)])),
        "offset": pa.array(np.concatenate([offset[keep], end, end])),
        "value": pa.concat_arrays([values.filter(pa.array(keep)), _strings("ghost", np.arange(k)),
                                   values.take(pa.array(dup_ids))]),
        "poll_ts_ms": pa.array(np.full(m, T0 + n)),
        "hw": pa.array(np.concatenate([offset[keep], end, end]) + 1),
        "phase": pa.array(["final"] * m),
    }, schema=CONSUMED_SCHEMA)
    # live reads: every record once, with k read at/above the hw they came with
    hw = offset + 1
    hw[n // 4: n // 4 + k] = offset[n // 4: n // 4 + k]
    live = pa.table({
        "consumer": _strings("c", part % 2), "seq": pa.array(poll_seq), "topic": pa.array(["t"] * n),
        "partition": pa.array(part), "offset": pa.array(offset), "value": values,
        "poll_ts_ms": pa.array(send_ts + 10), "hw": pa.array(hw), "phase": pa.array(["live"] * n),
    }, schema=CONSUMED_SCHEMA)
    pq.write_table(pa.concat_tables([live, fin]), d / "consumed.parquet")

    # replicas: three copies of the final log; broker 3 diverges at k offsets
    reps = []
    for b in (1, 2, 3):
        vals = fin["value"]
        if b == 3:
            v = vals.to_numpy(zero_copy_only=False).astype(object)
            v[10: 10 + k] = [f"other{i}" for i in range(k)]
            vals = pa.array(v.tolist())
        reps.append(pa.table({"broker": pa.array(np.full(fin.num_rows, b, np.int32)), "topic": fin["topic"],
                              "partition": fin["partition"], "offset": fin["offset"], "value": vals},
                             schema=REPLICAS_SCHEMA))
    pq.write_table(pa.concat_tables(reps), d / "replicas.parquet")
    (d / "run.json").write_text(json.dumps({
        "run_id": f"bench-{n}", "topics": [{"name": "t", "replication_factor": 3,
                                            "config": {"min.insync.replicas": "2"}}],
        "producers": [{"name": f"p{i}", "acks": "all", "idempotence": True, "topic": "t"} for i in range(4)],
    }))


DUCK_SQL = """
WITH p AS (SELECT * FROM read_parquet('{d}/produced.parquet')),
     c AS (SELECT * FROM read_parquet('{d}/consumed.parquet')),
     r AS (SELECT * FROM read_parquet('{d}/replicas.parquet')),
     fin AS (SELECT DISTINCT topic, partition, "offset", value FROM c WHERE phase = 'final'),
     finv AS (SELECT DISTINCT topic, partition, value FROM fin),
     obs AS (SELECT topic, partition, "offset", value FROM r UNION ALL
             SELECT topic, partition, "offset", value FROM c),
     nms AS (SELECT "offset" <= lag("offset") OVER (PARTITION BY producer, topic, partition ORDER BY seq) AS bad
             FROM p WHERE status = 'ok' AND acks <> '0' AND "offset" IS NOT NULL),
     nmp AS (SELECT "offset" <= lag("offset") OVER (PARTITION BY consumer, topic, partition ORDER BY seq) AS bad
             FROM c WHERE phase = 'live')
SELECT
 (SELECT count(DISTINCT p.value) FROM p ANTI JOIN finv USING (topic, partition, value)
   WHERE p.status = 'ok' AND p.acks <> '0') AS lost,
 (SELECT count(*) FROM (SELECT 1 FROM obs GROUP BY topic, partition, "offset"
    HAVING min(value) <> max(value))) AS divergence,
 (SELECT count(*) FROM (SELECT DISTINCT l.topic, l.partition, l."offset", l.value FROM c l
    LEFT JOIN (SELECT *, true AS in_final FROM fin) f USING (topic, partition, "offset", value)
    WHERE l.phase = 'live' AND (f.in_final IS NULL OR (l.hw IS NOT NULL AND l."offset" >= l.hw)))) AS uncommitted_read,
 (SELECT count(*) FROM (SELECT value FROM fin GROUP BY value HAVING count(*) >= 2)) AS duplicate,
 (SELECT count(*) FROM nms WHERE bad) AS nonmonotonic_send,
 (SELECT count(*) FROM nmp WHERE bad) AS nonmonotonic_poll,
 (SELECT count(DISTINCT value) FROM fin ANTI JOIN (SELECT DISTINCT value FROM p) USING (value)) AS phantom
"""


def duck_counts(d: Path) -> tuple[dict, float]:
    t0 = time.monotonic()
    con = duckdb.connect()
    row = con.execute(DUCK_SQL.format(d=d)).fetchone()
    names = [x[0] for x in con.description]
    con.close()
    return dict(zip(names, row, strict=True)), time.monotonic() - t0


def spark_sql_query(d: Path) -> str:
    """DUCK_SQL in Spark's dialect, over views p0, c0, r0 of the three files."""
    q = DUCK_SQL
    for name in ("produced", "consumed", "replicas"):
        q = q.replace(f"read_parquet('{{d}}/{name}.parquet')", f"{name[0]}0")
    return q.replace('"offset"', "`offset`").replace("ANTI JOIN", "LEFT ANTI JOIN")


def spark_sql_child(d: Path) -> None:
    """Run in a child process (a fresh driver JVM, as `kchaos check` has): print the counts as JSON."""
    from harness.checker.session import spark_session

    spark = spark_session()
    for name in ("produced", "consumed", "replicas"):
        spark.read.parquet(str(d / f"{name}.parquet")).createOrReplaceTempView(f"{name[0]}0")
    print(json.dumps(spark.sql(spark_sql_query(d)).collect()[0].asDict()))


def child_json(what: str, *args: str) -> tuple[dict, float]:
    """A Python child process (a fresh driver JVM, as `kchaos check` has): the JSON its last line
    prints, and its wall time, start-up included."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    dt = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), dt


def spark_sql_counts(d: Path) -> tuple[dict, float]:
    return child_json("Spark SQL", __file__, "--spark-sql-child", str(d))


def kchaos_check(d: Path) -> tuple[dict, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", "check", str(d)], capture_output=True, text=True)
    dt = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kchaos check failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads((d / "verdict.json").read_text())["anomalies"], dt


def require_equal(engine: str, counts: dict, duck: dict) -> None:
    """Every engine's counts of the seven v1 classes DuckDB computes must equal DuckDB's: a fast
    wrong answer is no figure. (The v2 classes are checked against the reference in the tests.)"""
    if {a: counts[a] for a in duck} != duck:
        raise SystemExit(f"counts differ!\n {engine}: {counts}\n duckdb: {duck}")


def setting() -> str:
    """What the figures depend on besides the code, printed with them: both engines' versions and
    the machine (a new DuckDB or CPU moves the ratio as much as a change to the checker)."""
    import os
    import platform

    import pyspark

    from harness.setup import java

    jv = java.binary()
    info = Path("/proc/cpuinfo")
    models = [ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines()
              if ln.startswith("model name")] if info.exists() else []
    cpu = models[0] if models else platform.processor() or "?"
    return (f"duckdb {duckdb.__version__}, pyspark {pyspark.__version__}, driver java "
            f"{java.feature_version(jv) if jv else '?'}, {os.cpu_count()} cores ({cpu})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kchaos-bench"))
    ap.add_argument("--spark-sql", action="store_true", help="also time Spark running DuckDB's query")
    ap.add_argument("--spark-sql-child", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.spark_sql_child:
        spark_sql_child(a.spark_sql_child)
        return
    print(setting())
    results = {}
    for n in a.sizes:
        d = a.dir / f"n{n}"
        if not (d / "run.json").exists():
            t0 = time.monotonic()
            generate(n, d)
            print(f"generated {n:,} records in {time.monotonic() - t0:.1f} s at {d}")
        spark_counts, t_spark = kchaos_check(d)
        duck, t_duck = duck_counts(d)
        require_equal("kchaos", spark_counts, duck)
        results[n] = (t_spark, t_duck)
        print(f"{n:>12,} records: kchaos check {t_spark:6.1f} s   duckdb {t_duck:6.1f} s   "
              f"ratio {t_spark / t_duck:5.2f}   counts equal: {spark_counts}")
        if a.spark_sql:
            sql_counts, t_sql = spark_sql_counts(d)
            require_equal("spark sql", sql_counts, duck)
            print(f"{'':>22}Spark running DuckDB's query {t_sql:6.1f} s   ratio to duckdb "
                  f"{t_sql / t_duck:5.2f}   (kchaos check / it: {t_spark / t_sql:4.2f})")
    if len(results) >= 2:
        (n1, (s1, d1)), (n2, (s2, d2)) = sorted(results.items())[0], sorted(results.items())[-1]
        print(f"growth {n1:,} -> {n2:,} ({n2 / n1:.0f}x records): kchaos {s2 / s1:.1f}x, duckdb {d2 / d1:.1f}x")


if __name__ == "__main__":
    main()
