"""What an operator does to a running cluster through Kafka's Admin API, as faults do it (the fault
registry's admin operations): leader elections by hand.

Mixed into KafkaCluster (kafka_cluster.py), whose Admin client it uses."""

from __future__ import annotations

import time

from confluent_kafka import ElectionType, KafkaException, TopicPartition

from harness.cluster.errors import ClusterError

ELECTIONS = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}
# Answers that say the election had nothing to do, which an operator's tool reports and moves past.
NOTHING_TO_DO = {"ELECTION_NOT_NEEDED", "ELIGIBLE_LEADERS_NOT_AVAILABLE", "PREFERRED_LEADER_NOT_AVAILABLE"}
RETRIED = {"NOT_CONTROLLER", "REQUEST_TIMED_OUT", "_TIMED_OUT", "_TRANSPORT"}


class Operations:

    def elect_leader(self, topic: str, partition: int, election: str, timeout_s: float = 15.0) -> dict:
        """``kafka-leader-election --election-type PREFERRED|UNCLEAN`` for one partition: the leader
        before and after, and what the controller answered ("ok", or the error's name when the
        election had nothing to do: the preferred replica leads already, no replica may lead).
        Raises ClusterError for any other answer."""
        before = self.describe(topic).partition(topic, partition).leader
        tp = TopicPartition(topic, partition)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                # No request_timeout: confluent-kafka 2.16.1's elect_leaders raises SystemError for either
                # of its timeout options; the future's wait bounds it instead.
                err = self.admin.elect_leaders(ELECTIONS[election], [tp]).result(timeout_s).get(tp)
            except KafkaException as e:
                err = e.args[0]
            answer = "ok" if err is None else err.name()
            # the controller moved (a kill, a restart): asked again, as Kafka's own Admin client does
            if answer not in RETRIED or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if answer != "ok" and answer not in NOTHING_TO_DO:
            raise ClusterError(f"{election} leader election of {topic}-{partition}: {answer} ({err})")
        after = self.describe(topic).partition(topic, partition).leader
        return {"election": election, "answer": answer, "leader_before": before, "leader_after": after}
