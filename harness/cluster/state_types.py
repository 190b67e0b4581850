"""The cluster's state as the harness reads it: each partition's leader, replicas and ISR, the
controller, the live brokers and the coordination quorum."""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.quorum import QuorumState


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # -1 when offline
    replicas: list[int]  # AR order
    isr: list[int]
    leader_epoch: int = -1  # known in ZooKeeper mode (read from the partition's state znode)


@dataclass(frozen=True)
class ClusterState:
    controller: int  # ZooKeeper mode: the broker that is Kafka's controller; KRaft: the active controller
    brokers: list[int]  # brokers the metadata lists as alive
    partitions: list[PartitionState]
    quorum: QuorumState | None = None  # the coordination layer, when asked for (always in KRaft)
    frozen: bool = False  # ZooKeeper did not answer: the last state read, which nothing could change since

    def partition(self, topic: str, p: int) -> PartitionState:
        for x in self.partitions:
            if x.topic == topic and x.partition == p:
                return x
        raise KeyError(f"{topic}-{p} not in metadata")
