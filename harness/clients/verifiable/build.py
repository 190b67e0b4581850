"""Kafka's own verifiable clients, taken from the Kafka image of their version: ``/opt/kafka/libs``
of ``kchaos/kafka:VERSION`` (the release's jars as Maven Central serves them, and what its brokers
run) copied out once into the cache, and ``java -cp LIBS/* org.apache.kafka.tools.VerifiableProducer``
(or ``VerifiableConsumer``) on the machine's Java 17, as ``bin/kafka-verifiable-producer.sh`` runs
it. A version's image is built first if this machine has none. Copied beside and renamed, so nothing
half-copied is ever used.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.clients.registry import BuildError
from harness.setup.java import cache_dir
from harness.setup.tools import build_lock, run_tool

TOOLS = {"producer": "org.apache.kafka.tools.VerifiableProducer",
         "consumer": "org.apache.kafka.tools.VerifiableConsumer"}
JAVA = "java"  # the machine's Java 17, as the Java driver's
LIBS_IN_IMAGE = "/opt/kafka/libs"


class ToolsCopyError(BuildError):
    """The image's jars could not be copied out: the step that failed and what it said."""


def _image_tag(version: str) -> str:
    from harness.setup.images import kafka_ref

    return kafka_ref(version).tag


def libs_dir(version: str) -> Path:
    """Where Kafka ``version``'s jars live once copied (named for its image, which names its recipe)."""
    return cache_dir() / "verifiable" / _image_tag(version).replace("/", "_").replace(":", "-") / "libs"


def built(version: str) -> bool:
    return (libs_dir(version) / f"kafka-tools-{version}.jar").is_file()


def build(version: str, log: Callable[[str], object] = print) -> Path:
    """Copy Kafka ``version``'s jars out of its image unless they are; their directory."""
    final = libs_dir(version)
    if built(version):
        return final
    with build_lock(f"verifiable-{version}"):
        if not built(version):
            _copy(version, final, log)
    return final


def _copy(version: str, final: Path, log: Callable[[str], object]) -> None:
    import docker

    from harness.setup.images import ensure

    ensure(docker.from_env(), [version], log=lambda m: log(m))
    log(f"copying Kafka {version}'s verifiable clients out of its image ({LIBS_IN_IMAGE})")
    final.parent.mkdir(parents=True, exist_ok=True)
    made = run_tool(["docker", "create", _image_tag(version)], f"docker create {_image_tag(version)}",
                    ToolsCopyError).strip()
    try:
        with tempfile.TemporaryDirectory(prefix=".libs-", dir=final.parent) as tmp:
            run_tool(["docker", "cp", f"{made}:{LIBS_IN_IMAGE}", str(Path(tmp) / "libs")],
                     f"docker cp the jars of Kafka {version}", ToolsCopyError)
            shutil.rmtree(final, ignore_errors=True)
            (Path(tmp) / "libs").rename(final)
    finally:
        subprocess.run(["docker", "rm", "-f", made], capture_output=True)


def build_all(versions: list[str], log: Callable[[str], object] = print) -> None:
    for v in versions:
        build(v, log=log)


def tool_command(version: str, role: str) -> list[str]:
    """Kafka ``version``'s verifiable ``role`` ("producer", "consumer"), its jars copied first if they
    are not yet; kchaos appends the tool's own flags."""
    libs = build(version, log=lambda m: None)
    return [JAVA, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{libs}/*", TOOLS[role]]
