"""A Spark standalone cluster on this machine, from the pyspark install: one master and one worker,
on loopback only. ``kchaos check --spark-master spark://...`` checks on it as on any Spark cluster;
the tests use it to show that a distributed check gives the same verdicts as ``local[*]``."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.setup import java
from harness.waiting import until

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    java.use()  # the runtime the driver uses, for the master, the worker and its executors
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_NO_DAEMONIZE": "1"}


def _start(log: Path, cls: str, *args: str) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), cls, *args], env=_env(),
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _says(log: Path, text: str, proc: subprocess.Popen) -> bool:
    if proc.poll() is not None:
        raise RuntimeError(f"{log.name}: the process exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
    return log.exists() and text in log.read_text(errors="replace")


@contextmanager
def standalone_cluster(work: Path, cores: int = 2, memory: str = "2g", timeout_s: float = 90) -> Iterator[str]:
    """A master and a worker, up until the block ends; yields the master's URL (spark://127.0.0.1:PORT).
    Their logs and the worker's scratch space are in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(_start(work / "master.log", MASTER, "--host", "127.0.0.1", "--port", str(port),
                            "--webui-port", str(free_port())))
        until(lambda: _says(work / "master.log", "I have been elected leader", procs[0]), timeout_s,
              "the Spark master did not start", 0.5)
        procs.append(_start(work / "worker.log", WORKER, "--host", "127.0.0.1", "--cores", str(cores),
                            "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(work / "work"),
                            url))
        until(lambda: _says(work / "worker.log", "Successfully registered with master", procs[1]), timeout_s,
              "the Spark worker did not register", 0.5)
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
