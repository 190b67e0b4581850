"""Kafka's own command-line tools run on this machine, as an operator runs them from a workstation:
the cluster's Kafka release's jars (copied out of its image by set-up's kafka_libs, which the cluster's
ClusterImages.tool_libs names) on the machine's Java 17, against
the brokers' client listeners (through their proxies, as any client). An admin operation the
Admin API of confluent-kafka lacks (a partition reassignment, a group's offsets reset) goes
through these rather than a protocol request written here.

Which class a release keeps a tool under is kafka_tools.TOOLS' record, resolved against the jars'
entries; a tool that runs and fails raises kafka_tools.ToolError naming it and what it said.
"""

from __future__ import annotations

import functools
import subprocess
import zipfile
from pathlib import Path

from harness.cluster.kafka_tools import TOOLS, ToolError, ToolMissing

JAVA = "java"
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
HOST = "this machine"  # where the tool ran, as ToolError names the node
NO_ANSWER = -1  # ToolError's code for a tool that had not ended by its timeout


@functools.lru_cache(maxsize=32)
def tool_class(libs: Path, tool: str) -> str:
    """The first of ``tool``'s classes that one of Kafka's own jars in ``libs`` holds; ToolMissing when none."""
    wanted = {c.replace(".", "/") + ".class": c for c in TOOLS[tool].classes}
    found: set[str] = set()
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            found |= wanted.keys() & set(z.namelist())
    for entry, cls in wanted.items():
        if entry in found:
            return cls
    raise ToolMissing(tool, HOST, f"no class of {tool} ({', '.join(TOOLS[tool].classes)}) in {libs}")


def java_command(libs: Path, main_class: str) -> list[str]:
    """The machine's Java running ``main_class`` on the Kafka jars in ``libs``, as bin/kafka-run-class.sh
    does, sized for a tool or a client process beside a cluster (a small heap, C1 only)."""
    return [JAVA, *JVM_OPTIONS, "-cp", f"{libs}/*", main_class]


def run(libs: Path, tool: str, args: list[str], timeout_s: float = 60.0) -> str:
    """``tool`` of the Kafka release whose jars are in ``libs``, with ``args``, on this machine: what
    it printed (stdout, then stderr), or ToolError."""
    cmd = [*java_command(libs, tool_class(libs, tool)), *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        said = f"{_text(e.stdout)}{_text(e.stderr)}"
        raise ToolError(tool, HOST, NO_ANSWER, f"no answer in {timeout_s:g} s: {said}") from e
    out = done.stdout + "\n" + done.stderr  # a tool's last line often has no newline of its own
    if done.returncode != 0:
        raise ToolError(tool, HOST, done.returncode, out)
    return out


def _text(out: str | bytes | None) -> str:
    """What a timed-out process printed (TimeoutExpired holds bytes even when the run asked for text)."""
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
