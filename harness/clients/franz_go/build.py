"""franz-go's driver program (``src/``), built per franz-go version from the Go module proxy
(harness/clients/go_program.py does the building)."""

from __future__ import annotations

from pathlib import Path

from harness.clients.go_program import DriverBuildError, GoProgram

# KIP-848 groups through kgo.ServerSideBalancer (franz-go 1.22 and later; an earlier release does not build)
PROGRAM = GoProgram("franz-go", "github.com/twmb/franz-go", Path(__file__).resolve().parent / "src",
                    default_version="1.22.3", protocols=("classic", "consumer"))
DEFAULT_VERSION = PROGRAM.default_version
__all__ = ["DEFAULT_VERSION", "PROGRAM", "DriverBuildError", "build", "build_all", "built", "program"]

built = PROGRAM.built
build = PROGRAM.build
build_all = PROGRAM.build_all
program = PROGRAM.path
