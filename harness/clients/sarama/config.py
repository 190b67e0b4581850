"""What a scenario may ask of the sarama driver, checked before any container starts: the version
(one the Go module proxy serves, built the first time a scenario names it) and each table's
``config``, which takes Kafka's own property names where sarama has a setting that does the same
(the program's ``check`` says which, and why a value is refused: src/options.go)."""

from __future__ import annotations

from harness.clients.sarama.build import PROGRAM

__all__ = ["refusal", "version_refusal"]

version_refusal = PROGRAM.version_refusal
refusal = PROGRAM.refusal
