"""Topics created on the cluster, with a clear refusal of what it can never hold.

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and proxies it uses."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from harness.cluster.errors import ClusterError, TopicError

LOG = logging.getLogger("kchaos.cluster")


class Topics:

    def topic_id(self, name: str, timeout_s: float = 10.0) -> str:
        """The topic's id as Kafka prints it (its Uuid's URL-safe base64), which keys its share
        groups' state (``GROUP:TOPIC_ID:PARTITION``)."""
        from confluent_kafka import TopicCollection

        (future,) = self.admin.describe_topics(TopicCollection([name]), request_timeout=timeout_s).values()
        return str(future.result(timeout_s).topic_id)

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
        asked_before = False
        while True:
            fut = self.admin.create_topics([nt], operation_timeout=timeout_s, request_timeout=timeout_s)[name]
            try:
                fut.result(timeout=timeout_s + 5)
                return
            except KafkaException as e:
                err = e.args[0]
                code = err.code()
                if code == KafkaError.TOPIC_ALREADY_EXISTS and asked_before:
                    # An earlier request that failed on our side reached the controller after all.
                    return
                fits = (replication_factor <= n if replica_assignment is None
                        else all(b in self.settings.broker_ids for r in replica_assignment for b in r))
                if _worth_asking_again(code, fits):
                    if time.monotonic() < deadline:
                        asked_before = True
                        time.sleep(0.5)
                        continue
                    # Not a refusal: the cluster did not answer (no controller, every broker down).
                    raise ClusterError(f"topic {name}: not created within {timeout_s:g} s: {err.str()}") from e
                if code == KafkaError.INVALID_REPLICATION_FACTOR:
                    raise TopicError(f"topic {name}: Kafka refused replication factor {replication_factor}: "
                                     f"{err.str()}") from e
                raise TopicError(f"topic {name}: {err.str()}") from e

    def delete_topics(self, names: list[str], timeout_s: float = 60.0) -> None:
        """Delete those of ``names`` that exist and wait until the cluster no longer lists them, so
        the same names can be created again at once (Kafka drops a deleted topic's committed offsets
        from every group with it). TopicError naming a topic that is still there at the deadline."""
        deadline = time.monotonic() + timeout_s
        there = [n for n in names if n in self.admin.list_topics(timeout=30).topics]
        if not there:
            return
        for name, fut in self.admin.delete_topics(there, operation_timeout=timeout_s).items():
            try:
                fut.result(timeout=timeout_s + 5)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise TopicError(f"topic {name}: could not be deleted: {e.args[0].str()}") from e
        while left := [n for n in there if n in self.admin.list_topics(timeout=30).topics]:
            if time.monotonic() > deadline:
                raise TopicError(f"topics {', '.join(left)}: still listed {timeout_s:g} s after their deletion")
            time.sleep(0.2)


def seeded_assignment(partitions: int, replication_factor: int, brokers: list[int], seed: int) -> list[list[int]]:
    """Each partition's replicas, first the preferred leader, as Kafka's own placement makes them
    without racks (``AdminUtils.assignReplicasToBrokers``: leaders round-robin from a start broker,
    followers shifted, the shift growing each round) but with the start and shift drawn from the
    run's seed rather than at random: the same scenario and seed put the same brokers in the same
    roles on every cluster, so a schedule that names ``broker:N`` does the same thing in every run
    of it (a hunt's confirmations and shrinking run on clusters of their own)."""
    import random

    rng = random.Random(f"assignment/{seed}")
    n = len(brokers)
    start, shift = rng.randrange(n), rng.randrange(n)
    out = []
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        followers = [(first + 1 + (shift + j) % (n - 1)) % n for j in range(replication_factor - 1)] if n > 1 else []
        out.append([brokers[first], *(brokers[i] for i in followers)])
    return out


# Errors on the client's side while the request may or may not have reached the controller:
# librdkafka destroys its bootstrap broker handles once it has learned the cluster's own
# addresses, failing a request queued on one with _DESTROY (seen in CI just after start).
TRANSIENT = frozenset({KafkaError._DESTROY, KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
                       KafkaError._ALL_BROKERS_DOWN, KafkaError.NOT_CONTROLLER,
                       KafkaError.REQUEST_TIMED_OUT})


def _worth_asking_again(code: int, factor_fits: bool) -> bool:
    """Whether a failed CreateTopics is worth sending again before the deadline.

    Just after start the controller's own list of live brokers can still be empty ("larger than
    available brokers: 0", seen in CI) although every broker has registered: a factor the cluster
    can hold is refused only for a moment, and nothing was created. A transient error on the
    client's side is asked again too; TOPIC_ALREADY_EXISTS on the next answer then means the
    first request was carried out.
    """
    if code in (KafkaError.INVALID_REPLICATION_FACTOR, KafkaError.INVALID_REPLICA_ASSIGNMENT):
        return factor_fits
    return code in TRANSIENT
