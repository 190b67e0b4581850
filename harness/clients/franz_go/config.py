"""What a scenario may ask of the franz-go driver, checked before any container starts: the
version (one the Go module proxy serves, built the first time a scenario names it) and each table's
``config``, which takes Kafka's own property names where franz-go has an option that does the same
(the program's ``check`` says which, and why a value is refused)."""

from __future__ import annotations

from harness.clients.franz_go.build import PROGRAM
from harness.clients.go_program import as_properties

__all__ = ["as_properties", "franz_version", "refusal", "version_refusal"]

franz_version = PROGRAM.version
version_refusal = PROGRAM.version_refusal
refusal = PROGRAM.refusal
