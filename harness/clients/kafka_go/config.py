"""What a scenario may ask of the kafka-go driver, checked before any container starts: the version
(one the Go module proxy serves, built the first time a scenario names it), what kafka-go cannot do
(build.cannot) and each table's ``config``, which takes Kafka's own property names where kafka-go
has a field that does the same (the program's ``check`` says which: src/options.go)."""

from __future__ import annotations

from harness.clients.kafka_go.build import PROGRAM

__all__ = ["refusal", "version_refusal"]

version_refusal = PROGRAM.version_refusal
refusal = PROGRAM.refusal
