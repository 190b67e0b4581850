"""Set-up: what a machine needs before a run or a check. The Docker engine (engine), the images built
locally (images), the Java runtime the Spark driver uses and its start-up cache (java, cds), and
``kchaos doctor`` over all of them (doctor). The cluster and the workload never call into here;
callers name the images a cluster runs (``cluster_images``), which builds a version's image the first
time a command needs it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterImages:
    kafka: str
    toxiproxy: str


def cluster_images(kafka_version: str, log=None) -> ClusterImages:
    """The tags of the images a cluster of this Kafka version runs, built first if this machine has
    not built them yet (set-up builds only the default version's)."""
    import sys

    from harness.setup import engine, images

    images.ensure(engine.client(timeout=10), [kafka_version], log=log or (lambda m: print(m, file=sys.stderr)))
    return ClusterImages(images.kafka_ref(kafka_version).tag, images.toxiproxy_ref().tag)
