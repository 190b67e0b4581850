"""sarama's driver program (``src/``), built per sarama version from the Go module proxy
(harness/clients/go_program.py does the building)."""

from __future__ import annotations

from pathlib import Path

from harness.clients.go_program import DriverBuildError, GoProgram

PROGRAM = GoProgram("sarama", "github.com/IBM/sarama", Path(__file__).resolve().parent / "src",
                    default_version="1.61.1",
                    lacks=(("delivery.timeout.ms", "sarama has no delivery timeout: a record is retried `retries` "
                            "times (Producer.Retry.Max) with 100 ms between tries (allowed: the producer's "
                            "retries)"),))
DEFAULT_VERSION = PROGRAM.default_version
__all__ = ["DEFAULT_VERSION", "PROGRAM", "DriverBuildError", "build", "build_all", "built", "program"]

built = PROGRAM.built
build = PROGRAM.build
build_all = PROGRAM.build_all
program = PROGRAM.path
