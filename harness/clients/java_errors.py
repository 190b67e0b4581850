"""How a send's outcome reads from an exception of Apache Kafka's Java client (kafka-clients): shared by
the drivers whose clients are kafka-clients, kchaos's Java driver and Kafka's own verifiable
producer, whose callbacks report the exception's class and message."""

from __future__ import annotations

# Exceptions after which the record was definitely not written (the others, timeouts and
# disconnections among them, leave it unknown: "info"). TransactionAbortedException fails the batches an
# abort found still in the accumulator, never sent (in-flight ones complete), as librdkafka's _PURGE_QUEUE.
DEFINITELY_NOT_WRITTEN = {"RecordTooLargeException", "RecordBatchTooLargeException", "InvalidRecordException",
                          "TopicAuthorizationException", "SerializationException", "InvalidTopicException",
                          "TransactionAbortedException"}
# Definite only when nothing was retried (workload.REFUSED_BEFORE_APPEND says why).
REFUSED_BEFORE_APPEND = {"NotEnoughReplicasException", "InvalidTimestampException"}


def classify(error: str | None, retries: int) -> str:
    """A send's status from its callback's exception (``Class: message``), as workload.classify does for librdkafka."""
    if error is None:
        return "ok"
    cls = error.split(":", 1)[0]
    if cls in DEFINITELY_NOT_WRITTEN or (cls in REFUSED_BEFORE_APPEND and retries == 0):
        return "fail"
    return "info"
