"""Running the build tools set-up uses (go, mvn, javac, java), and resolving jars from
Maven Central: shared by the images' builds (images.py) and the Java driver's (java_driver.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


def run_tool(cmd: list[str], what: str, error: type[Exception], cwd: Path | None = None,
             env: dict | None = None) -> str:
    """Run ``cmd``; its stdout. A missing tool or a failure raises ``error`` with the command and the
    end of its output."""
    if shutil.which(cmd[0]) is None and not Path(cmd[0]).exists():
        raise error(f"{what}: `{cmd[0]}` is not installed (run `kchaos doctor --fix`)")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise error(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def resolve_jars(artifacts: list[str], name: str, work: Path, into: Path, what: str, error: type[Exception]) -> None:
    """Copy ``artifacts`` (``group:artifact:version``, nearest first where versions of a dependency
    meet) and their runtime dependencies from Maven Central into ``into``, through a pom in ``work``.
    One resolve at a time on the machine: Maven 3.8's local repository has no locks of its own, and
    two versions' images built side by side share most of their dependencies."""
    deps = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
                   for g, a, v in (x.split(":") for x in artifacts))
    (work / "pom.xml").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>kchaos</groupId><artifactId>{name}</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n")
    with build_lock("maven-resolve"):
        run_tool(["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
                  f"-DoutputDirectory={into}"], what, error, cwd=work, env=_machine_java())


def _machine_java() -> dict[str, str]:
    """This process's environment for Maven, without the JAVA_HOME a check in it may have set for
    the Spark driver (harness/setup/java.py's bundled runtime): that runtime's trust store does not
    hold what the machine's does, and Maven then cannot reach Maven Central (PKIX path building
    failed). Maven runs on the machine's own Java, as set-up does."""
    from harness.setup.java import java_home

    env = dict(os.environ)
    ours = java_home()
    if ours is not None and env.get("JAVA_HOME") == str(ours):
        del env["JAVA_HOME"]
    return env


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    """Hold the machine-wide lock ``name`` while building: two processes that first need the same
    image or driver at once (two test workers, a matrix started beside a run) build it once; the
    second waits and then finds it built."""
    from harness.setup.java import cache_dir

    path = cache_dir() / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
