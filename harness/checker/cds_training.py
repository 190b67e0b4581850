"""The training run that writes the driver's start-up cache (cds): a check of a tiny built-in
history in a JVM told to write the cache when it exits. Run as ``python -m harness.checker.cds_training OUT``
by cds.build, in a child process of its own."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness import history as h
from harness.setup import cds
from harness.setup import java as jre


def write_history(run: Path, n: int = 100, t0: int = 1_700_000_000_000) -> None:
    """A tiny contract-valid run directory: n sends over two partitions, read live and finally, on three replicas."""
    h.write_table(run / h.PRODUCED, {
        "value": [f"p-{i}" for i in range(n)], "producer": ["p"] * n, "seq": list(range(n)),
        "topic": ["t"] * n, "partition": [i % 2 for i in range(n)], "acks": ["all"] * n,
        "status": ["ok"] * (n - 1) + ["info"], "offset": [i // 2 for i in range(n - 1)] + [None],
        "send_ts_ms": [t0 + i for i in range(n)], "ack_ts_ms": [t0 + i + 5 for i in range(n - 1)] + [None],
        "error": [None] * (n - 1) + ["_MSG_TIMED_OUT"],
    }, h.PRODUCED_SCHEMA)
    reads = [{"consumer": c, "seq": i, "topic": "t", "partition": i % 2, "offset": i // 2, "value": f"p-{i}",
              "poll_ts_ms": t0 + i + 10, "hw": i // 2 + 1, "phase": ph}
             for c, ph in (("c", "live"), ("final", "final")) for i in range(n)]
    h.write_table(run / h.CONSUMED, reads, h.CONSUMED_SCHEMA)
    h.write_table(run / h.REPLICAS, [{"broker": b, "topic": "t", "partition": r["partition"], "offset": r["offset"],
                                      "value": r["value"]} for b in (1, 2, 3) for r in reads[n:]], h.REPLICAS_SCHEMA)
    h.write_json_atomic(run / h.RUN_JSON, {"run_id": "cds", "topics": [{"name": "t", "replication_factor": 3}],
                                           "producers": [{"name": "p", "acks": "all", "topic": "t"}]})


def dump(out: Path) -> None:
    """Check a tiny history in a driver JVM that writes the cache at ``out`` when it exits."""
    from pyspark import SparkContext

    from harness.checker import check_runs
    from harness.checker.session import EMBEDDED, spark_session

    java = jre.binary()
    train = f"-XX:AOTCacheOutput={out}" if java is not None and cds.aot(java) else f"-XX:ArchiveClassesAtExit={out}"
    with tempfile.TemporaryDirectory(prefix="kchaos-cds-") as d:
        write_history(Path(d))
        spark = spark_session(EMBEDDED, jvm_options=train)  # the session check_runs then uses
        check_runs([Path(d)], master=EMBEDDED, write_verdicts=False)
        spark.stop()
    proc = SparkContext._gateway.proc  # type: ignore[union-attr]
    proc.stdin.close()  # the gateway JVM exits when its stdin closes, and writes the cache then
    proc.wait(timeout=240)


if __name__ == "__main__":
    dump(Path(sys.argv[1]))
