"""What an operator does to a running cluster through Kafka's Admin API, as faults do it (the fault
registry's admin operations): leader elections by hand.

Mixed into KafkaCluster (kafka_cluster.py), whose Admin client it uses."""

from __future__ import annotations

import logging
import time

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from harness.cluster.errors import ClusterError

LOG = logging.getLogger("kchaos.cluster")

ELECTIONS = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}
# Answers that say the election had nothing to do, which an operator's tool reports and moves past.
NOTHING_TO_DO = {"ELECTION_NOT_NEEDED", "ELIGIBLE_LEADERS_NOT_AVAILABLE", "PREFERRED_LEADER_NOT_AVAILABLE"}
RETRIED = {"NOT_CONTROLLER", "REQUEST_TIMED_OUT", "_TIMED_OUT", "_TRANSPORT"}


class Operations:

    def elect_leader(self, topic: str, partition: int, election: str, timeout_s: float = 30.0) -> dict:
        """``kafka-leader-election --election-type PREFERRED|UNCLEAN`` for one partition: the leader
        before and after, and what the controller answered ("ok", or the error's name when the
        election had nothing to do: the preferred replica leads already, no replica may lead).
        Raises ClusterError for any other answer."""
        before = self.describe(topic).partition(topic, partition).leader
        tp = TopicPartition(topic, partition)
        deadline = time.monotonic() + timeout_s
        # A client of its own, as kafka-leader-election is a process of its own: the cluster's long-lived
        # Admin client may still be backing off from brokers that were all down a moment ago. Its
        # socket timeout bounds each try (confluent-kafka 2.16.1's elect_leaders raises SystemError
        # for either of its own timeout options).
        admin = AdminClient(self.client_config(**{"socket.timeout.ms": 5000}), logger=LOG)
        while True:
            try:
                err = admin.elect_leaders(ELECTIONS[election], [tp]).result(timeout_s).get(tp)
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
