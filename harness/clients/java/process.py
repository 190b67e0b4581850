"""The process protocol of docs/drivers.md, the Java driver's side: one JVM per client running
``src/kchaos/Driver.java`` in a role, a config file in, commands on stdin, JSON lines on stdout,
the history in a file, the library's log on stderr (written to the run's ``logs/clients.log``
through the ``kchaos.java`` logger). Every Java client (driver.py, transactions.py) is a
``JavaProcess``, the process protocol's ``ClientProcess`` (clients/process.py) started as a JVM;
``classify`` (java_errors.py) reads a send's outcome from its callback's exception.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from harness.clients.java import build as java_driver
from harness.clients.process import ClientProcess, DriverProcessError
from harness.cluster.clocks import offset_text

# libfaketime (Debian's faketime package), thread-safe build, as the brokers' JVMs load it
# (docker/kafka/kchaos-entrypoint.sh, harness/cluster/clocks.py says why each setting).
FAKETIME_LIB = "/usr/lib/*/faketime/libfaketimeMT.so.1"
def faketime_env(clock_file: Path) -> dict[str, str]:
    """The environment that starts a JVM on a wall clock kchaos moves by rewriting ``clock_file``
    (true time to begin with)."""
    libs = sorted(glob.glob(FAKETIME_LIB))
    if not libs:
        raise DriverProcessError(f"no libfaketime here ({FAKETIME_LIB}): client_clock_skew on a Java client needs "
                                 "Debian's faketime package (scripts/setup.sh installs it)")
    clock_file.write_text(offset_text(0) + "\n")
    return {"LD_PRELOAD": libs[0], "FAKETIME_TIMESTAMP_FILE": str(clock_file), "FAKETIME_CACHE_DURATION": "0",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


class JavaProcess(ClientProcess):
    """A Java client: a JVM of kafka-clients at ``version`` running ``src/kchaos/Driver.java`` in its role."""

    library = "Java"

    def command_line(self) -> list[str]:
        return java_command(self.version, self.role)

    def environment(self, skewable_clock: bool) -> dict[str, str] | None:
        """A JVM on a wall clock kchaos moves (libfaketime), where its clock must be skewable."""
        return None if self.clock_file is None else {**os.environ, **faketime_env(self.clock_file)}


def java_command(version: str, role: str) -> list[str]:
    """The command of a driver process of ``role``, its config file's path to be appended. A producer
    and a recording consumer run with the JVM's full JIT, as kafka-producer-perf-test and
    kafka-consumer-perf-test do (their speed is measured against those tools'); group members and
    the other roles, which wait on the network and commit, start faster on C1 alone."""
    jit = [] if role in ("producer", "consumer") else ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    return [java_driver.JAVA, "-Xmx384m", *jit, "-cp", java_driver.classpath(version), "kchaos.Driver", role]


