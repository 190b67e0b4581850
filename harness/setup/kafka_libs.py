"""A Kafka release's own jars on this machine: ``/opt/kafka/libs`` of ``kchaos/kafka:VERSION`` (the
release's jars as Maven Central serves them, and what its brokers run) copied out once into the
cache, for what runs Kafka's classes on the machine's Java 17 rather than in a container: its
verifiable clients (harness/clients/verifiable) and the operator's tools an admin operation runs
(harness/cluster/host_tools.py). A version's image is built first if this machine has none. Copied
beside and renamed, so nothing half-copied is ever used.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.setup.java import cache_dir
from harness.setup.tools import build_lock, run_tool

LIBS_IN_IMAGE = "/opt/kafka/libs"


class LibsCopyError(RuntimeError):
    """The image's jars could not be copied out: the step that failed and what it said."""


def _image_tag(version: str) -> str:
    from harness.setup.images import kafka_ref

    return kafka_ref(version).tag


def libs_dir(version: str) -> Path:
    """Where Kafka ``version``'s jars live once copied (named for its image, which names its recipe)."""
    return cache_dir() / "verifiable" / _image_tag(version).replace("/", "_").replace(":", "-") / "libs"


def copied(version: str) -> bool:
    return (libs_dir(version) / f"kafka-tools-{version}.jar").is_file() or \
        (libs_dir(version) / f"kafka_2.13-{version}.jar").is_file()


def ensure(version: str, log: Callable[[str], object] = print, error: type[Exception] = LibsCopyError) -> Path:
    """Copy Kafka ``version``'s jars out of its image unless they are; their directory. A failed
    step raises ``error`` naming it."""
    final = libs_dir(version)
    if copied(version):
        return final
    with build_lock(f"verifiable-{version}"):
        if not copied(version):
            _copy(version, final, log, error)
    return final


def _copy(version: str, final: Path, log: Callable[[str], object], error: type[Exception]) -> None:
    import docker

    from harness.setup.images import ensure as ensure_image

    ensure_image(docker.from_env(), [version], log=lambda m: log(m))
    log(f"copying Kafka {version}'s jars out of its image ({LIBS_IN_IMAGE})")
    final.parent.mkdir(parents=True, exist_ok=True)
    made = run_tool(["docker", "create", _image_tag(version)], f"docker create {_image_tag(version)}", error).strip()
    try:
        with tempfile.TemporaryDirectory(prefix=".libs-", dir=final.parent) as tmp:
            run_tool(["docker", "cp", f"{made}:{LIBS_IN_IMAGE}", str(Path(tmp) / "libs")],
                     f"docker cp the jars of Kafka {version}", error)
            shutil.rmtree(final, ignore_errors=True)
            (Path(tmp) / "libs").rename(final)
    finally:
        subprocess.run(["docker", "rm", "-f", made], capture_output=True)


def tool_libs(version: str) -> Path:
    """Kafka ``version``'s jars for its operator's tools, copied first if they are not (quietly: a
    fault is applying)."""
    return ensure(version, log=lambda m: None)
