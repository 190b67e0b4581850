"""Topics created on the cluster, with a clear refusal of what it can never hold.

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and proxies it uses."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from harness.cluster.errors import TopicError

LOG = logging.getLogger("kchaos.cluster")


class Topics:

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     config: dict[str, str] | None = None, validate: bool = True,
                     replica_assignment: list[list[int]] | None = None, timeout_s: float = 30.0) -> None:
        """Create a topic; refuses a replication factor above the broker count with a clear message.

        ``validate=False`` sends the request to Kafka as is, so tests can see Kafka's own refusal.
        """
        n = self.settings.brokers
        if validate and replica_assignment is None and replication_factor > n:
            raise TopicError(f"topic {name}: replication factor {replication_factor} is greater than the "
                             f"{n} brokers of this cluster (allowed: 1..{n})")
        if replica_assignment is not None:
            # confluent-kafka wants num_partitions = len(assignment) here, not the -1 its docs say.
            nt = NewTopic(name, num_partitions=len(replica_assignment), replica_assignment=replica_assignment,
                          config=config or {})
        else:
            nt = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                          config=config or {})
        deadline = time.monotonic() + timeout_s
        while True:
            fut = self.admin.create_topics([nt], operation_timeout=timeout_s, request_timeout=timeout_s)[name]
            try:
                fut.result(timeout=timeout_s + 5)
                return
            except KafkaException as e:
                err = e.args[0]
                if err.code() != KafkaError.INVALID_REPLICATION_FACTOR:
                    raise TopicError(f"topic {name}: {err.str()}") from e
                # Just after start the controller's own list of live brokers can still be empty
                # ("larger than available brokers: 0", seen in CI) although every broker has
                # registered: a factor the cluster can hold is refused only for a moment. Nothing
                # was created, so asking again is safe.
                if replication_factor <= n and replica_assignment is None and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise TopicError(f"topic {name}: Kafka refused replication factor {replication_factor}: "
                                 f"{err.str()}") from e
