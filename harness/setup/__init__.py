"""Set-up: what a machine needs before a run or a check. The Docker engine (engine), the images built
locally (images), the Java runtime the Spark driver uses and its start-up cache (java, cds); `kchaos
doctor` over all of them is harness/doctor.py, an entry point beside the command line, since it also
asks the checker and the client libraries. The cluster and the workload never call into here;
callers name the images a cluster runs (``cluster_images``), which builds a version's image the first
time a command needs it."""

from __future__ import annotations

import os

from harness.cluster.disks import FUSE_DEVICE
from harness.cluster.settings import ClusterImages

__all__ = ["ClusterImages", "cluster_images"]


def cluster_images(kafka_version: str, log=None, upgrades: list[str] | tuple[str, ...] = (),
                   disks: bool = False) -> ClusterImages:
    """The tags of the images a cluster of this Kafka version runs, built first if this machine has
    not built them yet (set-up builds only the default version's); with ``upgrades`` (the versions
    rolling upgrades move it to, in order) its nodes run the image that has them all; with ``disks``
    (a cluster whose settings have ``faultable_disks``) that image with the disk faults' file system."""
    import sys

    from harness.setup import engine, images

    if disks and not os.path.exists(FUSE_DEVICE):
        raise engine.EngineError(f"this cluster's disk faults need {FUSE_DEVICE}, which this machine does not have "
                                 "(modprobe fuse, the kernel's FUSE module); every other fault runs without it")
    log = log or (lambda m: print(m, file=sys.stderr))
    client = engine.client(timeout=10)
    images.ensure(client, [kafka_version, *upgrades], log=log)
    nodes = images.build_upgrade(client, kafka_version, list(upgrades), log) if upgrades \
        else images.kafka_ref(kafka_version).tag
    from harness.setup.kafka_libs import tool_libs

    if disks:
        return ClusterImages(images.with_diskfs(client, nodes, log), images.toxiproxy_ref().tag, faultable_disks=True,
                             tool_libs=tool_libs)
    return ClusterImages(nodes, images.toxiproxy_ref().tag, tool_libs=tool_libs)
