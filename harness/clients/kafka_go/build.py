"""kafka-go's driver program (``src/``), built per kafka-go version from the Go module proxy
(harness/clients/go_program.py does the building), and what a kafka-go client cannot be asked."""

from __future__ import annotations

from pathlib import Path

from harness.clients.go_program import DriverBuildError, GoProgram


def cannot(table) -> str | None:
    """What kafka-go has no way to do: an idempotent or transactional producer, an auto-commit."""
    if table.kind == "producer" and getattr(table, "transactional", False):
        return "transactional: kafka-go has no transactional producer (allowed: false; another library's " \
               "producer: client = \"librdkafka\", \"java\", \"franz-go\" or \"sarama\")"
    if table.kind == "producer" and getattr(table, "idempotence", False):
        return "idempotence: kafka-go has no idempotent producer (allowed: false)"
    if table.kind == "group" and getattr(table, "commit", "sync") == "auto":
        return "commit: kafka-go's ConsumerGroup has no auto-commit (allowed: sync, async)"
    return None


PROGRAM = GoProgram("kafka-go", "github.com/segmentio/kafka-go", Path(__file__).resolve().parent / "src",
                    default_version="0.4.51", cannot=cannot,
                    lacks=(("delivery.timeout.ms", "kafka-go has no delivery timeout: a record is tried `retries` "
                            "+ 1 times (Writer.MaxAttempts) (allowed: the producer's retries)"),))
DEFAULT_VERSION = PROGRAM.default_version
__all__ = ["DEFAULT_VERSION", "PROGRAM", "DriverBuildError", "build", "build_all", "built", "program"]

built = PROGRAM.built
build = PROGRAM.build
build_all = PROGRAM.build_all
program = PROGRAM.path
