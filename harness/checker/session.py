"""The Spark session a check runs in: embedded local[*] by default, any master URL otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from harness.setup import cds, java


def spark_session(master: str | None = None, jvm_options: str = "") -> SparkSession:
    """Embedded local[*] by default; a real cluster when a master URL is given.

    The driver runs on the bundled Java runtime (java) and uses the start-up cache when ``kchaos
    doctor --fix`` has built one (cds); ``jvm_options`` are added to the driver's, and replace the
    cache when given.
    """
    cores = os.cpu_count() or 2
    java.use()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only; also silences a start-up warning
    quiet = Path(__file__).with_name("log4j2-spark.properties")
    b = (
        SparkSession.builder.appName("kchaos-check")
        .master(master or "local[*]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(max(4, cores * 2)))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.enableVectorizedReader", "true")
        .config("spark.driver.memory", os.environ.get("KCHAOS_SPARK_DRIVER_MEMORY", "4g"))
        # The parallel collector: a batch job wants throughput, not G1's short pauses (about 10% here).
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={quiet} -XX:+UseParallelGC {jvm_options or cds.java_options()}")
    )
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
