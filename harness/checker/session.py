"""The Spark session a check runs in: the warm local Spark Connect server by default (warm.py),
embedded ``local[*]``, any Spark Connect endpoint (``sc://HOST:PORT``) or any master URL."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

from pyspark.sql import SparkSession

from harness.checker.spark_conf import driver_conf
from harness.setup import java

EMBEDDED = "local[*]"
DEFAULT_MASTER: str | None = None  # None: the warm server; a test process may set it for itself alone
CONNECT_MARK = "SPARK_CONNECT_MODE_ENABLED"


def chosen_master(master: str | None) -> str | None:
    """The engine a check asked for, else KCHAOS_SPARK_MASTER, else DEFAULT_MASTER (None: warm)."""
    return master or os.environ.get("KCHAOS_SPARK_MASTER") or DEFAULT_MASTER


class SparkUnreachable(RuntimeError):
    """A Spark endpoint that nothing answers at; the message says what was tried and what to do."""


CONNECT_WAIT_S = 3.0


def _answers(url: str) -> None:
    """Something listens at a Spark Connect URL (``sc://HOST:PORT/;...``), else SparkUnreachable
    within CONNECT_WAIT_S: a Connect client retries a closed port for minutes without a word."""
    hostport = url.removeprefix("sc://").split("/")[0].split(";")[0]
    host, _, port = hostport.rpartition(":")
    if not host:
        host, port = hostport, "15002"  # Spark Connect's default port
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_WAIT_S).close()
    except (OSError, ValueError) as e:
        raise SparkUnreachable(
            f"--spark-master {url}: nothing answers at {host}:{port} within {CONNECT_WAIT_S:g} s "
            f"({getattr(e, 'strerror', None) or e}); start a Spark Connect server there, or leave out "
            "--spark-master to check on the warm local server") from e


def _connect(url: str):
    """A Connect session at ``url`` that answered a tiny job, else SparkUnreachable: within
    CONNECT_WAIT_S when nothing listens, within the warm server's probe time when something
    listens but does not answer."""
    from harness.checker import warm

    _answers(url)
    spark = warm.connect(url, warm.PROBE_S)
    if spark is None:
        why = warm.PROBE_ERRORS[-1][:300] if warm.PROBE_ERRORS else "no answer"
        raise SparkUnreachable(
            f"--spark-master {url}: accepts connections but ran no Spark job within {warm.PROBE_S:g} s ({why}); "
            "check that a Spark Connect server (not another service) listens there, or leave out "
            "--spark-master to check on the warm local server")
    return spark


def spark_session(master: str | None = None, jvm_options: str = ""):
    """The warm server when ``master`` is None (or KCHAOS_SPARK_MASTER names one), a Connect
    session for ``sc://`` URLs, else a classic driver on that master (``local[*]``: embedded)."""
    master = chosen_master(master)
    if master is None:
        from harness.checker import warm

        return warm.session()
    if master.startswith("sc://"):
        return _connect(master)
    # PySpark marks a process that opened a Connect session (its functions then build Connect
    # columns); an embedded driver after that needs the mark gone.
    os.environ.pop(CONNECT_MARK, None)
    java.use()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only; also silences a start-up warning
    b = SparkSession.builder.appName("kchaos-check").master(master)
    for k, v in driver_conf(jvm_options).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def checking(master: str | None = None) -> Iterator:
    """A session for one check. On the warm server the check holds it (its idle watcher waits)
    and its Connect session is released afterwards; an embedded driver stays up for the process."""
    master = chosen_master(master)
    if master is not None:
        yield spark_session(master)
        return
    from harness.checker import warm

    with warm.held():
        spark = warm.session()
        try:
            yield spark
        finally:
            with contextlib.suppress(Exception):
                spark.stop()


def cores(spark) -> int:
    """How many tasks the engine runs at once: its default parallelism where Spark exposes it
    (classic), else the local cores of a ``local`` master, else spark.default.parallelism."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    master = spark.conf.get("spark.master", "")
    if master.startswith("local[") and master[6:-1].isdigit():
        return int(master[6:-1])
    if master.startswith("local"):
        return os.cpu_count() or 2
    return int(spark.conf.get("spark.default.parallelism", str(os.cpu_count() or 2)))


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")
