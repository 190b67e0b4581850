"""What a finding's anomaly breaks, in the words of the project whose tracker it goes to: a title a
maintainer recognises, the documented guarantee quoted with its source (or, where the project's
documentation says nothing in so many words, what the expectation rests on, marked as inferred),
and what the anomaly costs a user. One record per anomaly class; bug.md (write_up.py) reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checker.verdict import NOT_HEALED

PRODUCER_CONFIGS = "https://kafka.apache.org/documentation/#producerconfigs"
DESIGN_REPLICATION = "https://kafka.apache.org/documentation/#replication"
BROKER_CONFIGS = "https://kafka.apache.org/documentation/#brokerconfigs"
COMMIT_ASYNC = ("https://kafka.apache.org/documentation/ (javadoc of org.apache.kafka.clients.consumer."
                "KafkaConsumer#commitAsync)")

ACKS_ALL = ("acks=all This means the leader will wait for the full set of in-sync replicas to acknowledge the "
            "record. This guarantees that the record will not be lost as long as at least one in-sync replica "
            "remains alive. This is the strongest available guarantee.")
IDEMPOTENCE = ("When set to 'true', the producer will ensure that exactly one copy of each message is written in "
               "the stream. If 'false', producer retries due to broker failures, etc., may write duplicates of the "
               "retried message in the stream.")
IDEMPOTENT_ORDER = ("Note that enabling idempotence requires max.in.flight.requests.per.connection to be less than or "
                    "equal to 5 (with message ordering preserved for any allowable value), retries to be greater than "
                    "0, and acks must be 'all'.")
COMMITTED = ("A message is considered committed when all in sync replicas for that partition have applied it to "
             "their log. Only committed messages are ever given out to the consumer. This means that the consumer "
             "need not worry about potentially seeing a message that could be lost if the leader fails.")
ASYNC_ORDER = "Offsets committed through multiple calls to this API are guaranteed to be sent in the same order as " \
              "the invocations."
LAG_TIME = ("If a follower hasn't sent any fetch requests or hasn't consumed up to the leaders log end offset for at "
            "least this time, the leader will remove the follower from isr")


@dataclass(frozen=True)
class Guarantee:
    """``title``: the anomaly as a tracker's title says it; ``quote`` and ``source``: the documented
    sentence it breaks; ``inferred``: what the expectation rests on when no sentence says it
    (then the report says so); ``impact``: what it costs a user."""

    title: str
    impact: str
    quote: str | None = None
    source: str | None = None
    inferred: str | None = None


GUARANTEES: dict[str, Guarantee] = {
    "lost": Guarantee(
        "Acknowledged records lost", quote=ACKS_ALL, source=f"{PRODUCER_CONFIGS} (acks)",
        impact="records the producer was told were written are gone: no consumer will ever read them"),
    "divergence": Guarantee(
        "Replicas of a partition hold different records at the same offset", quote=COMMITTED,
        source=DESIGN_REPLICATION,
        impact="consumers reading from different replicas (or before and after a leader change) see different "
               "records at one offset"),
    "uncommitted_read": Guarantee(
        "A consumer read records that are not in the partition's final log", quote=COMMITTED,
        source=DESIGN_REPLICATION,
        impact="a consumer acted on records that the partition no longer holds (a downstream copy disagrees with "
               "the topic)"),
    "duplicate": Guarantee(
        "Idempotent producer wrote a record twice", quote=IDEMPOTENCE,
        source=f"{PRODUCER_CONFIGS} (enable.idempotence)",
        impact="consumers see one send twice, at two offsets"),
    "nonmonotonic_send": Guarantee(
        "Idempotent producer's records acknowledged out of send order", quote=IDEMPOTENT_ORDER,
        source=f"{PRODUCER_CONFIGS} (enable.idempotence)",
        impact="a partition's log holds one producer's records in another order than they were sent"),
    "offset_regression": Guarantee(
        "Committed offset of a consumer group moves backwards", quote=ASYNC_ORDER, source=COMMIT_ASYNC,
        inferred="the sentence is the Java client's; librdkafka's documentation gives asynchronous commits no "
                 "order, and the Kafka protocol leaves ordering to the client (the group coordinator stores "
                 "whichever commit arrives last). The expectation for other clients is that a later commit is "
                 "not overwritten by an earlier one",
        impact="a member that restarts, or takes the partition over in a rebalance, resumes from the older offset "
               "and processes the records after it a second time"),
    "coordinator_regression": Guarantee(
        "Committed offset of a consumer group moves backwards in the group coordinator's log", quote=ASYNC_ORDER,
        source=COMMIT_ASYNC,
        inferred="as for an acknowledged commit: the group's committed offset is the last commit its coordinator "
                 "wrote, acknowledged to the member or not, so a commit written behind a newer one moves it back",
        impact="a member that restarts, or takes the partition over in a rebalance, resumes from the older offset "
               "and processes the records after it a second time"),
    NOT_HEALED: Guarantee(
        "ISR does not expand after a caught-up follower returns", quote=LAG_TIME,
        source=f"{BROKER_CONFIGS} (replica.lag.time.max.ms)",
        inferred="the documentation says when a follower leaves the ISR; that a follower which has caught up with "
                 "the leader is added back is the replication design's (a leader expands the ISR when a follower's "
                 "fetch reaches the high watermark) and is not said in one sentence",
        impact="the partition keeps fewer in-sync replicas than it has: one more follower falling behind takes it "
               "below min.insync.replicas and stops acks=all writes, and a leader failure has fewer clean "
               "candidates"),
}


def guarantee(anomaly: str) -> Guarantee:
    """The record of ``anomaly``; a class without one is described from its kchaos definition alone."""
    return GUARANTEES.get(anomaly) or Guarantee(
        anomaly.replace("_", " ").capitalize(),
        impact="see the definition below",
        inferred="no sentence of the project's documentation is quoted for this anomaly class yet: the expectation "
                 "is kchaos's promise for this configuration, stated below")
