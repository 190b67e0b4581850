"""Set-up: what a machine needs before a run or a check. The Docker engine (engine), the images built
locally (images), the Java runtime the Spark driver uses and its start-up cache (java, cds), and
``kchaos doctor`` over all of them (doctor). The cluster and the workload never call into here;
callers name the images a cluster runs (``cluster_images``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterImages:
    kafka: str
    toxiproxy: str


def cluster_images(kafka_version: str) -> ClusterImages:
    """The tags of the images a cluster of this Kafka version runs (built by ``kchaos images``)."""
    from harness.setup import images

    return ClusterImages(images.kafka_ref(kafka_version).tag, images.toxiproxy_ref().tag)
