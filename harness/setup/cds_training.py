"""The training run that writes the driver's start-up cache (cds): a check of a tiny built-in
history in a JVM told to write the cache when it exits. Run as ``python -m harness.setup.cds_training OUT``
by cds.build, in a child process of its own."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness.setup import cds
from harness.setup import java as jre


def dump(out: Path) -> None:
    """Reconcile a tiny history in a driver JVM that writes the cache at ``out`` when it exits."""
    from pyspark import SparkContext

    from harness.checker.analysis import analyse
    from harness.checker.judge import build_verdict
    from harness.checker.session import spark_session
    from harness.history import (
        CONSUMED,
        CONSUMED_SCHEMA,
        PRODUCED,
        PRODUCED_SCHEMA,
        REPLICAS,
        REPLICAS_SCHEMA,
        RUN_JSON,
        validate,
        write_json_atomic,
        write_table,
    )

    with tempfile.TemporaryDirectory(prefix="kchaos-cds-") as d:
        run = Path(d)
        n, t0 = 100, 1_700_000_000_000
        write_table(run / PRODUCED, {
            "value": [f"p-{i}" for i in range(n)], "producer": ["p"] * n, "seq": list(range(n)),
            "topic": ["t"] * n, "partition": [i % 2 for i in range(n)], "acks": ["all"] * n,
            "status": ["ok"] * (n - 1) + ["info"], "offset": [i // 2 for i in range(n - 1)] + [None],
            "send_ts_ms": [t0 + i for i in range(n)], "ack_ts_ms": [t0 + i + 5 for i in range(n - 1)] + [None],
            "error": [None] * (n - 1) + ["_MSG_TIMED_OUT"],
        }, PRODUCED_SCHEMA)
        reads = [{"consumer": c, "seq": i, "topic": "t", "partition": i % 2, "offset": i // 2, "value": f"p-{i}",
                  "poll_ts_ms": t0 + i + 10, "hw": i // 2 + 1, "phase": ph}
                 for c, ph in (("c", "live"), ("final", "final")) for i in range(n)]
        write_table(run / CONSUMED, reads, CONSUMED_SCHEMA)
        write_table(run / REPLICAS, [{"broker": b, "topic": "t", "partition": r["partition"], "offset": r["offset"],
                                      "value": r["value"]} for b in (1, 2, 3) for r in reads[n:]], REPLICAS_SCHEMA)
        write_json_atomic(run / RUN_JSON, {"run_id": "cds", "topics": [{"name": "t", "replication_factor": 3}],
                                           "producers": [{"name": "p", "acks": "all", "topic": "t"}]})
        rd = validate(run)
        java = jre.binary()
        train = (f"-XX:AOTCacheOutput={out}" if java is not None and cds.aot(java)
                 else f"-XX:ArchiveClassesAtExit={out}")
        spark = spark_session(None, jvm_options=train)
        build_verdict(0, rd, analyse(spark, [rd]), 1000)
        spark.stop()
        proc = SparkContext._gateway.proc  # type: ignore[union-attr]
        proc.stdin.close()  # the gateway JVM exits when its stdin closes, and writes the cache then
        proc.wait(timeout=240)



if __name__ == "__main__":
    dump(Path(sys.argv[1]))
