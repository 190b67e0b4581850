"""franz-go's driver program (``src/``), built per franz-go version from the Go module proxy: the
sources copied to a scratch module, franz-go required at the version, ``go build``. A build lives in
the cache directory under the version and a digest of the sources, written beside and renamed, so
nothing half-built is ever used."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from harness.clients.registry import BuildError
from harness.setup.java import cache_dir
from harness.setup.tools import build_lock, run_tool

SRC = Path(__file__).resolve().parent / "src"
MODULE = "github.com/twmb/franz-go"
DEFAULT_VERSION = "1.22.3"  # the newest release the module proxy serves here
PROGRAM = "kchaos-franz-go"


class DriverBuildError(BuildError):
    """franz-go's driver could not be built: the command that failed and the end of its output."""


def _digest(version: str) -> str:
    h = hashlib.sha256(version.encode())
    for p in sorted(SRC.glob("*")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:12]


def build_dir(version: str) -> Path:
    return cache_dir() / "go-driver" / f"franz-go-{version}-{_digest(version)}"


def built(version: str) -> bool:
    return (build_dir(version) / PROGRAM).is_file()


def program(version: str) -> Path:
    """The driver program for franz-go ``version``, built first if it is not yet."""
    return build(version, log=lambda m: None) / PROGRAM


def build(version: str, log=print) -> Path:
    """Build the driver for franz-go ``version`` unless it is built; its directory."""
    final = build_dir(version)
    if built(version):
        return final
    with build_lock(f"franz-go-driver-{version}"):
        if not built(version):
            _build(version, final, log)
    return final


def _build(version: str, final: Path, log) -> None:
    log(f"building the franz-go client driver for franz-go {version} (the Go module proxy)")
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{final.name}-", dir=final.parent) as tmp:
        work = Path(tmp) / "src"
        shutil.copytree(SRC, work)
        env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        run_tool(["go", "mod", "edit", f"-require={MODULE}@v{version}"], f"require franz-go {version}",
                 DriverBuildError, cwd=work, env=env)
        run_tool(["go", "mod", "tidy"], f"resolve franz-go {version}", DriverBuildError, cwd=work, env=env)
        out = Path(tmp) / "out"
        out.mkdir()
        run_tool(["go", "build", "-o", str(out / PROGRAM), "."], f"go build the franz-go driver for {version}",
                 DriverBuildError, cwd=work, env=env)
        shutil.rmtree(final, ignore_errors=True)
        out.rename(final)


def build_all(versions: list[str], log=print) -> None:
    for v in versions:
        build(v, log=log)
