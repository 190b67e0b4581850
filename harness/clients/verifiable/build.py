"""Kafka's own verifiable clients, from the jars of their version's Kafka image
(harness/setup/kafka_libs.py: ``/opt/kafka/libs`` copied out once into the cache), run as
``java -cp LIBS/* org.apache.kafka.tools.VerifiableProducer`` (or ``VerifiableConsumer``) on the
machine's Java 17, as ``bin/kafka-verifiable-producer.sh`` runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.clients.registry import BuildError
from harness.cluster.host_tools import java_command
from harness.setup import kafka_libs

TOOLS = {"producer": "org.apache.kafka.tools.VerifiableProducer",
         "consumer": "org.apache.kafka.tools.VerifiableConsumer"}


class ToolsCopyError(BuildError):
    """The image's jars could not be copied out: the step that failed and what it said."""


def libs_dir(version: str) -> Path:
    return kafka_libs.libs_dir(version)


def built(version: str) -> bool:
    return kafka_libs.copied(version)


def build(version: str, log: Callable[[str], object] = print) -> Path:
    """Copy Kafka ``version``'s jars out of its image unless they are; their directory."""
    return kafka_libs.ensure(version, log=log, error=ToolsCopyError)


def build_all(versions: list[str], log: Callable[[str], object] = print) -> None:
    for v in versions:
        build(v, log=log)


def tool_command(version: str, role: str) -> list[str]:
    """Kafka ``version``'s verifiable ``role`` ("producer", "consumer"), its jars copied first if they
    are not yet; kchaos appends the tool's own flags."""
    return java_command(build(version, log=lambda m: None), TOOLS[role])
