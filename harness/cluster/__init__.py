"""Containers, proxies and cluster state: a real Kafka cluster with Toxiproxy in every link."""

from harness.cluster.kafka_cluster import (
    ClusterError,
    ClusterState,
    KafkaCluster,
    PartitionState,
    TopicError,
)
from harness.cluster.settings import ClusterSettings
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
