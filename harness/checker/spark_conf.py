"""The Spark driver's settings, shared by an embedded driver (session.py) and the warm server
(warm.py), so the two run every check alike."""

from __future__ import annotations

import os
from pathlib import Path

from harness.setup import cds


def driver_conf(jvm_options: str = "") -> dict[str, str]:
    """The driver's settings, the same for an embedded driver and the warm server.

    The driver runs on the bundled Java runtime (java) and uses the start-up cache when ``kchaos
    doctor --fix`` has built one (cds); ``jvm_options`` are added to the driver's, and replace the
    cache when given."""
    cores = os.cpu_count() or 2
    quiet = Path(__file__).with_name("log4j2-spark.properties")
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(4, cores * 2)),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.enableVectorizedReader": "true",
        "spark.driver.memory": os.environ.get("KCHAOS_SPARK_DRIVER_MEMORY", "4g"),
        # The parallel collector: a batch job wants throughput, not G1's short pauses (about 10% here).
        "spark.driver.extraJavaOptions":
            f"-Dlog4j2.configurationFile={quiet} -XX:+UseParallelGC {jvm_options or cds.java_options()}",
    }
