"""Containers, proxies and cluster state: a real Kafka cluster with Toxiproxy in every link."""

from harness.cluster.errors import ClusterError, TopicError
from harness.cluster.kafka_cluster import KafkaCluster
from harness.cluster.settings import ClusterSettings
from harness.cluster.state_types import ClusterState, PartitionState
from harness.cluster.topology import Topology

__all__ = [
    "ClusterError",
    "ClusterSettings",
    "ClusterState",
    "KafkaCluster",
    "PartitionState",
    "TopicError",
    "Topology",
]
