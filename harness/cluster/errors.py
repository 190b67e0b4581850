"""What the cluster raises, and how it explains a node that exited."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster could not be started or did not become healthy; the message says why."""


# A ZooKeeper-mode broker that lost its ZooKeeper session while it started: Kafka exits (code 1),
# as it does for any error during KafkaServer.startup, where it would have re-registered had the
# session lapsed a moment later.
BOOT_FAILED = "Fatal error during KafkaServer startup"
SESSION_EXPIRED = "SessionExpiredException"


def lost_its_session_while_starting(log: str) -> bool:
    """Whether a broker's log says it exited because its ZooKeeper session expired during start-up."""
    return BOOT_FAILED in log and SESSION_EXPIRED in log


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
