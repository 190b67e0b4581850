"""Upgrades under load: nodes rolled to a later Kafka version one at a time, and feature levels
raised by Kafka's own tool, while the workload runs.

A node is upgraded as an operator does it: a clean shutdown (the broker's controlled shutdown moves
its leaderships away), the new version's binaries, a start on the same data directory, and a wait
until it is back in the ISR of every partition it replicates before the next node goes. Here the
binaries are the jars of the later version, already in the cluster's image beside the first one's
(``images.upgrade_dockerfile``); the harness names the version in the stopped container's
``/var/lib/kafka/kchaos-version`` and the image's entrypoint runs it. The container, its data and
its links stay the same, so every fault and reading of the harness goes on working across the roll.

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and state it uses."""

from __future__ import annotations

import logging

from harness.cluster import kafka_tools
from harness.cluster.archive import one_file_tar
from harness.cluster.errors import ClusterError
from harness.cluster.features import api_versions_features
from harness.cluster.settings import controller_port
from harness.history.events import now_ms
from harness.waiting import until

LOG = logging.getLogger("kchaos.cluster")

VERSION_MARKER_DIR = "/var/lib/kafka"
VERSION_MARKER = "kchaos-version"
REJOIN_TIMEOUT_S = 60.0  # a node not back in every ISR by then: the roll stops with an error


def marker_tar(version: str) -> bytes:
    """A tar holding the version marker, for ``put_archive`` into the stopped container."""
    return one_file_tar(VERSION_MARKER, f"{version}\n".encode())


def roll_order(first: int, brokers: list[int], controllers: list[int]) -> list[int]:
    """The order a rolling upgrade visits the nodes in: the KRaft controllers, then the brokers (as
    Kafka's upgrade notes have it), each group starting at ``first`` if it is in that group and going
    on in id order from there."""
    def from_first(nodes: list[int]) -> list[int]:
        nodes = sorted(nodes)
        if first not in nodes:
            return nodes
        i = nodes.index(first)
        return nodes[i:] + nodes[:i]

    return from_first(controllers) + from_first(brokers)


class Upgrades:

    def node_version(self, n: int) -> str:
        """The Kafka version node n runs now."""
        return self.node_versions.get(n, self.settings.kafka_version)

    def roll(self, first: int, version: str, steps: list[dict]) -> None:
        """Move every node (KRaft controllers, then brokers; ZooKeeper servers stay) to ``version`` one
        at a time, starting at ``first``, appending each step to ``steps`` as it begins (so a roll that
        stops halfway leaves what it did): the node, its versions and times in epoch ms: stopped,
        started, back in every ISR (``rejoined_ms``)."""
        controllers = list(self.settings.coordination_ids) if self.settings.mode == "kraft" else []
        for n in roll_order(first, list(self.settings.broker_ids), controllers):
            if self.node_version(n) != version:
                step: dict = {}
                steps.append(step)
                self.upgrade_node(n, version, step)

    def upgrade_node(self, n: int, version: str, step: dict) -> None:
        """Node n stopped cleanly, moved to ``version`` and started; returns once it is back. ``step``
        records it as it goes."""
        before = self.node_version(n)
        step.update({"node": self.topo.node_key(n), "before": before, "after": version, "begin_ms": now_ms()})
        self.stop_broker(n)
        step["stopped_ms"] = now_ms()
        self._node(n).put_archive(VERSION_MARKER_DIR, marker_tar(version))
        self.start_broker(n)
        self.node_versions[n] = version
        step["started_ms"] = now_ms()
        self._await_rejoin(n)
        step["rejoined_ms"] = now_ms()
        LOG.info("upgraded %s from %s to %s", step["node"], before, version)

    def _await_rejoin(self, n: int) -> None:
        """Until a broker is in the ISR of every partition it replicates, or a controller answers the
        quorum as a voter again; ClusterError after REJOIN_TIMEOUT_S."""
        if self.topo.is_coordination(n):
            def back() -> bool:
                q = self.quorum_state(timeout_s=1)
                return q.leader > 0 and any(x.node == n and x.reachable for x in q.nodes)
        else:
            def back() -> bool:
                st = self.describe(timeout_s=2, quorum=False)
                return n in st.brokers and all(n in p.isr for p in st.partitions if n in p.replicas)
        if not until(_quietly(back), REJOIN_TIMEOUT_S, "", 0.25, error=None):
            raise ClusterError(f"{self.topo.node_key(n)} was not back in {REJOIN_TIMEOUT_S:g} s after its upgrade to "
                               f"{self.node_version(n)}: the roll stops there")

    # ------------------------------------------------------------ feature levels (KIP-584)

    def _features_tool(self, args: list[str]) -> str:
        """Kafka's feature tool, run in a controller's container against the controllers."""
        boot = ",".join(f"controller-{k}:{controller_port(k)}" for k in range(1, self.settings.quorum_size + 1))
        n = next(iter(self.topo.quorum))
        return kafka_tools.run(self.exec, self.topo.node_key(n), "kafka-features",
                               ["--bootstrap-controller", boot, *args])

    def feature_levels(self) -> dict[str, tuple[int, int]]:
        """Feature -> (finalized level, newest level every live broker supports), from each broker's
        ApiVersions answer (the finalized level: the first broker's)."""
        finalized: dict[str, int] | None = None
        newest: dict[str, int] = {}
        for port in self.client_ports.values():
            try:
                fin, sup = api_versions_features(port, 5.0)
            except (OSError, ValueError):
                continue
            finalized = fin if finalized is None else finalized
            newest = {k: min(v, newest.get(k, v)) for k, v in sup.items()}
        if finalized is None:
            raise ClusterError("no broker answered ApiVersions: feature levels unknown")
        return {k: (finalized.get(k, 0), v) for k, v in newest.items()}

    def upgrade_feature(self, feature: str, level: int | None) -> dict:
        """``kafka-features upgrade --feature NAME=LEVEL`` (the newest level every broker supports when
        None); the feature's level before and after, as the brokers then report it."""
        before = self.feature_levels()
        if feature not in before:
            raise ClusterError(f"the cluster has no feature {feature} (it has: {', '.join(before)})")
        target = before[feature][1] if level is None else level
        self._features_tool(["upgrade", "--feature", f"{feature}={target}"])
        after: dict[str, tuple[int, int]] = {}

        def applied() -> bool:  # the brokers learn the new level from the metadata log
            after.update(self.feature_levels())
            return after.get(feature, (0, 0))[0] >= target
        until(_quietly(applied), 15.0, "", 0.25, error=None)
        return {"feature": feature, "before": before[feature][0], "after": after.get(feature, before[feature])[0],
                "asked": target}


def _quietly(check):
    """``check`` with a broker or controller that does not answer yet counted as not back."""
    def go() -> bool:
        try:
            return check()
        except Exception:
            return False
    return go
