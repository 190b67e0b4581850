"""Kafka's own command-line tools, as kchaos runs them inside a node's container.

Releases move a tool's main class between modules (DumpLogSegments left core's ``kafka.tools`` for
``org.apache.kafka.tools`` in kafka-tools with 4.3; FeatureCommand and MetadataQuorumCommand left
``kafka.admin`` earlier), so no class is named at a call site: each tool lists every class a
release has kept it under, and the container resolves the one its own jars hold when the tool runs
(a zip stores its entries' names as they are, so ``grep -F`` on Kafka's jars finds the class file).
A tool no class of which is in the image fails with ``ToolMissing``; one that runs and fails, with
``ToolError``: both name the tool, the node and what the tool said.

``tests/test_kafka_tools.py`` runs every tool on every version in ``harness/versions.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.cluster.errors import ClusterError
from harness.versions import version_key

ENTRYPOINT = "/opt/kafka/bin/kchaos-entrypoint.sh"  # its ``tool MAIN [ARGS]`` role runs a class on Kafka's jars
KAFKA_JARS = "/opt/kafka/libs/kafka*.jar"  # Kafka's own modules: every tool's class is in one of them
MISSING = 127  # the resolver's exit code when no class of the tool is in the image


@dataclass(frozen=True)
class KafkaTool:
    """One tool: the script of Kafka's ``bin/`` that runs it, every main class a release has kept it
    under (newest first), the first version kchaos has that ships it, and the arguments after which
    it prints its usage (how the tools test runs it with no cluster)."""

    name: str
    classes: tuple[str, ...]
    since: str = "2.8.2"
    usage: tuple[str, ...] = ("--help",)

    def shipped_by(self, version: str) -> bool:
        return version_key(version) >= version_key(self.since)


TOOLS: dict[str, KafkaTool] = {t.name: t for t in [
    KafkaTool("kafka-dump-log", ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")),
    KafkaTool("kafka-metadata-quorum", ("org.apache.kafka.tools.MetadataQuorumCommand",
                                        "kafka.admin.MetadataQuorumCommand"), since="3.9.1"),
    KafkaTool("kafka-features", ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand")),
    KafkaTool("kafka-transactions", ("org.apache.kafka.tools.TransactionsCommand",), since="3.9.1"),
    KafkaTool("kafka-configs", ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")),
    KafkaTool("kafka-storage", ("org.apache.kafka.tools.StorageTool", "kafka.tools.StorageTool")),
    KafkaTool("kafka-cluster", ("org.apache.kafka.tools.ClusterTool", "kafka.tools.ClusterTool")),
    KafkaTool("kafka-consumer-groups", ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                                        "kafka.admin.ConsumerGroupCommand")),
    KafkaTool("kafka-reassign-partitions", ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                                            "kafka.admin.ReassignPartitionsCommand")),
]}


class ToolMissing(ClusterError):
    """No class of the tool is in the node's image."""

    def __init__(self, tool: str, node: str, said: str):
        self.tool, self.node = tool, node
        super().__init__(f"{tool} on {node}: {said.strip()}")


class ToolError(ClusterError):
    """The tool ran and exited non-zero."""

    def __init__(self, tool: str, node: str, code: int, output: str):
        self.tool, self.node, self.code, self.output = tool, node, code, output
        super().__init__(f"{tool} failed on {node} (exit {code}): {output.strip()[-600:]}")


def _first_class(tool: str, then: str) -> str:
    """A shell script that finds the first of ``tool``'s classes in the image's Kafka jars and runs
    ``then`` with it in ``$cls``, or exits MISSING naming them."""
    t = TOOLS[tool]
    pairs = " ".join(f"{c}:{c.replace('.', '/')}.class" for c in t.classes)
    return (f'for pair in {pairs}; do cls="${{pair%%:*}}"; '
            f'if grep -q -a -F "${{pair#*:}}" {KAFKA_JARS} 2>/dev/null; then {then}; fi; done; '
            f'echo "no class of {tool} ({", ".join(t.classes)}) in {KAFKA_JARS}" >&2; exit {MISSING}')


def command(tool: str, args: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The command that runs ``tool`` with ``args`` in a Kafka container, through the entrypoint (so
    the JVM options, class-data archive and logging are a broker's)."""
    return ["sh", "-c", _first_class(tool, f'exec {ENTRYPOINT} tool "$cls" "$@"'), tool, *args]


def resolve_command(tool: str) -> list[str]:
    """The command that prints the class ``tool`` resolves to in a container."""
    return ["sh", "-c", _first_class(tool, 'echo "$cls"; exit 0')]


def run(exec_in: Callable[[str, list[str]], tuple[int, str]], node: str, tool: str,
        args: list[str] | tuple[str, ...] = ()) -> str:
    """``tool`` with ``args`` in container ``node`` (``exec_in`` is ``KafkaCluster.exec``): its output,
    or ToolMissing / ToolError."""
    code, out = exec_in(node, command(tool, args))
    if code == MISSING and out.startswith("no class of"):
        raise ToolMissing(tool, node, out)
    if code != 0:
        raise ToolError(tool, node, code, out)
    return out
