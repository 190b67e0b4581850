"""Clock faults: one node's wall clock moved while the machine's stays true.

A container shares the host kernel's clock, so setting the time inside one moves every process on
the machine. Instead each node of a cluster with skewable clocks runs its JVM with Debian's
libfaketime preloaded (docker/kafka/kchaos-entrypoint.sh): the library answers the process's
wall-clock calls (``clock_gettime(CLOCK_REALTIME)``, ``gettimeofday``, ``time``) with the real time
plus the offset written in ``CLOCK_FILE``, and leaves the monotonic clock alone
(``FAKETIME_DONT_FAKE_MONOTONIC``), as a step of the wall clock by NTP or an operator would: what
Kafka times with ``System.nanoTime`` runs on, what it times with ``System.currentTimeMillis``
(record timestamps, retention, many of its timeouts) jumps. The library is the thread-safe build
(``libfaketimeMT``): with the plain one, threads of one JVM raced on its shared buffers and in 2 of
4 runs a skew never took effect (it had parsed a torn read of the file, and a file that reads the
same again is not parsed again). It reads the file at the first call of each new second
(``FAKETIME_CACHE_DURATION=0``), so a jump lands within about a second of the write; reading it on
every call (``FAKETIME_NO_CACHE``) costs 54 us a ``currentTimeMillis``, which a broker cannot
afford. Its monotonic "fix" is off (``FAKETIME_FORCE_MONOTONIC_FIX=0``): with it the JVM's timed
waits, which wait on the monotonic clock, return at once (a 300 ms ``Object.wait`` took 0 ms) and
every thread that waits spins.
"""

from __future__ import annotations

from harness.cluster.archive import one_file_tar

CLOCK_DIR = "/etc/kchaos"
CLOCK_FILE = "clock-offset"  # libfaketime's FAKETIME_TIMESTAMP_FILE: "+0", "+3600", "-60", ...
CLOCK_ENV = "KCHAOS_FAKETIME"  # set on every node of a cluster with skewable clocks


def offset_text(offset_s: float) -> str:
    """The offset as libfaketime reads it: signed seconds."""
    return f"{offset_s:+g}"


class ClockFaults:
    """The cluster's clock faults (a mixin of KafkaCluster, like NodeFaults)."""

    def skew_clock(self, n: int, offset_s: float) -> None:
        """Node n's wall clock runs ``offset_s`` seconds off the true time from now (0: true again).
        The file is written whether the node runs or not: a node started later reads it at once."""
        if not self.settings.skewable_clocks:  # type: ignore[attr-defined]
            raise ValueError("this cluster's clocks cannot be skewed (it was started without skewable_clocks)")
        body = (offset_text(offset_s) + "\n").encode()
        self._node(n).put_archive(CLOCK_DIR, one_file_tar(CLOCK_FILE, body))  # type: ignore[attr-defined]
