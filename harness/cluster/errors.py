"""What the cluster raises, and how it explains a node that exited."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster could not be started or did not become healthy; the message says why."""


class TopicError(ValueError):
    """A topic request Kafka refused (or that could never succeed on this cluster)."""


def why_exited(log: str, context: int = 3) -> str:
    """The first ERROR or FATAL line of a JVM's log with the lines after it, else the log's tail.

    A broker that dies logs its cause once and then pages of orderly shutdown; the tail alone
    hides the cause."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if (" ERROR " in line or " FATAL " in line) and "Exiting Kafka" not in line:
            return "\n".join(lines[i:i + context + 1]) + "\n[...]\n" + "\n".join(lines[-3:])
    return "\n".join(lines[-30:])
