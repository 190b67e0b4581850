"""Containers, proxies and cluster state: a real Kafka cluster with Toxiproxy in every link.

The package's names are imported on first use (PEP 562), so a module that needs one small part of
it (the Toxiproxy toxics' names, the disk devices, a setting) does not load Docker's client and the
whole cluster."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "ClusterError": "errors",
    "TopicError": "errors",
    "KafkaCluster": "kafka_cluster",
    "ClusterSettings": "settings",
    "ClusterState": "state_types",
    "PartitionState": "state_types",
    "Topology": "topology",
}

if TYPE_CHECKING:
    from harness.cluster.errors import ClusterError, TopicError
    from harness.cluster.kafka_cluster import KafkaCluster
    from harness.cluster.settings import ClusterSettings
    from harness.cluster.state_types import ClusterState, PartitionState
    from harness.cluster.topology import Topology


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"harness.cluster.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'harness.cluster' has no attribute {name!r}")


__all__ = ["ClusterError", "ClusterSettings", "ClusterState", "KafkaCluster", "PartitionState", "TopicError",
           "Topology"]
