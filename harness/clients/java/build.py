"""Apache Kafka's Java client driver (``harness/clients/java/src``), built per client version.

Maven Central is the only source of jars: ``mvn dependency:copy-dependencies`` resolves
kafka-clients of the version (with Jackson, which the driver reads its config with, and slf4j-simple,
which writes the client library's log to the process's stderr), ``javac`` compiles the driver
against exactly those jars, and the driver then lists the property names that version takes
(``config-names.json``: scenario validation reads them before any container starts). A build lives
in the cache directory under the version and a digest of the sources and jars named, so a change to
either builds anew; it is written beside and renamed, so nothing half-built is ever used.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from harness.clients.registry import BuildError
from harness.setup.java import cache_dir
from harness.setup.tools import build_lock, resolve_jars, run_tool

SRC = Path(__file__).resolve().parent / "src"
# Share groups' member (KIP-932): kafka-clients has KafkaShareConsumer from 4.1, so only those builds compile it.
SHARE_SRC = SRC.with_name("src_share")
SHARE_FROM = (4, 1)
# slf4j-api named at the top: kafka-clients asks for 1.7, which would find no 2.x provider.
LIBRARIES = ("com.fasterxml.jackson.core:jackson-databind:2.21.3", "org.slf4j:slf4j-api:2.0.17",
             "org.slf4j:slf4j-simple:2.0.17")
JAVA = "java"  # the system's Java 17 (Debian's, which Maven needs too); Kafka's 4.x clients need 11 or later


class DriverBuildError(BuildError):
    """The Java driver could not be built: the command that failed and the end of its output."""


def has_share_consumer(version: str) -> bool:
    return tuple(int(x) for x in version.split(".")[:2]) >= SHARE_FROM


def _sources(version: str) -> list[Path]:
    share = sorted(SHARE_SRC.rglob("*.java")) if has_share_consumer(version) else []
    return sorted(SRC.rglob("*.java")) + share


def _digest(version: str) -> str:
    h = hashlib.sha256(version.encode())
    for lib in LIBRARIES:
        h.update(lib.encode())
    for p in _sources(version):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:12]


def build_dir(version: str) -> Path:
    """Where the driver for kafka-clients ``version`` lives once built (it may not be yet)."""
    return cache_dir() / "java-driver" / f"{version}-{_digest(version)}"


def built(version: str) -> bool:
    return (build_dir(version) / "config-names.json").is_file()


def classpath(version: str) -> str:
    """The driver's class path for kafka-clients ``version``, built first if it is not yet."""
    d = build(version, log=lambda m: print(m, file=sys.stderr))
    return f"{d / 'classes'}:{d / 'lib' / '*'}"


def config_names(version: str) -> dict[str, set[str]]:
    """The property names kafka-clients ``version`` takes: {"producer": ..., "consumer": ...}."""
    doc = json.loads((build_dir(version) / "config-names.json").read_text())
    return {k: set(v) for k, v in doc.items()}


def _run(cmd: list[str], what: str) -> str:
    return run_tool(cmd, what, DriverBuildError)


def build(version: str, log=print) -> Path:
    """Build the driver for kafka-clients ``version`` unless it is built; its directory. Each version
    is built the first time a scenario uses it there (set-up builds none)."""
    final = build_dir(version)
    if built(version):
        return final
    with build_lock(f"java-driver-{version}"):
        if not built(version):  # another process may have built it while this one waited
            _build(version, final, log)
    return final


def _build(version: str, final: Path, log) -> None:
    log(f"building the Java client driver for kafka-clients {version} (Maven Central)")
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{final.name}-", dir=final.parent) as tmp:
        work = Path(tmp)
        # LIBRARIES first: where versions of slf4j-api meet, Maven takes the nearest, then the first named.
        resolve_jars([*LIBRARIES, f"org.apache.kafka:kafka-clients:{version}"], "java-driver", work, work / "lib",
                     f"mvn resolve kafka-clients {version}", DriverBuildError)
        _run(["javac", "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", f"{work / 'lib'}/*",
              "-d", str(work / "classes"), *map(str, _sources(version))], f"javac the Java driver for {version}")
        names = _run([JAVA, "-cp", f"{work / 'classes'}:{work / 'lib'}/*", "kchaos.Driver", "config-names"],
                     f"list kafka-clients {version}'s properties")
        (work / "config-names.json").write_text(names)
        shutil.rmtree(final, ignore_errors=True)
        (work / "pom.xml").unlink()
        work.rename(final)
        work.mkdir()  # for TemporaryDirectory's clean-up


def build_all(versions: list[str], log=print) -> None:
    for v in versions:
        build(v, log=log)
