"""KIP-853 quorum changes: a controller removed from the voters or added to them, by Kafka's own tool.

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and proxies it uses."""

from __future__ import annotations

import logging
import re
import time

from harness.cluster import kafka_tools
from harness.cluster.errors import ClusterError
from harness.cluster.nodes import DATA_DIR
from harness.cluster.settings import CONTROLLER_ID_BASE, controller_port

LOG = logging.getLogger("kchaos.cluster")


# What Kafka answers a voter change it refuses for now, as an operator sees it: the controller to
# add has not caught up with the leader yet ("Aborted add voter operation ... since it is lagging
# behind"), a new leader has not yet committed its epoch's start ("... waiting for leader to
# establish HWM and fence previous voter changes"), or the tool found no active controller to send
# it to before its timeout (a leader being elected). The operator asks again; so does kchaos, until
# RETRY_S have passed.
RETRIABLE = ("since it is lagging behind", "waiting for leader to establish HWM",
             "Timed out waiting for a node assignment")
RETRY_S = 90.0
RETRY_PAUSE_S = 2.0
VOTERS_WAIT_S = 10.0  # how long a failed change waits for a leader to say whether it was made


class QuorumChanges:

    def _voter_change(self, n: int, voter: bool, args: list[str]) -> None:
        """Make controller n a voter (``voter``) or not with Kafka's metadata-quorum tool, run in n's
        own container (so it reaches the other controllers through n's links). A tool that failed may
        still have changed the voters (its request timed out after the leader committed it), so the
        quorum is asked first; a change Kafka refuses for now (RETRIABLE) is asked again. ClusterError
        when the change is neither made nor can be."""
        boot = ",".join(f"controller-{k}:{controller_port(k)}" for k in range(1, self.settings.quorum_size + 1))
        deadline = time.monotonic() + RETRY_S
        while True:
            try:
                kafka_tools.run(self.exec, self.topo.node_key(n), "kafka-metadata-quorum",
                                ["--bootstrap-controller", boot, *args])
                return
            except kafka_tools.ToolError as e:
                if self._is_voter(n) is voter:
                    LOG.info("quorum change on node %d: the tool failed, the voters have it all the same", n)
                    return
                if not any(why in e.output for why in RETRIABLE) or time.monotonic() + RETRY_PAUSE_S > deadline:
                    raise
                LOG.info("quorum change on node %d refused for now, asked again: %s", n, e.output.strip()[-200:])
                time.sleep(RETRY_PAUSE_S)

    def _is_voter(self, n: int) -> bool | None:
        """Whether the quorum's leader counts controller n among its voters; None when no leader answers
        within VOTERS_WAIT_S."""
        deadline = time.monotonic() + VOTERS_WAIT_S
        while time.monotonic() < deadline:
            q = self.quorum_state(0.5)
            if q.leader >= 0:
                return n in q.voters
            time.sleep(0.2)
        return None

    def remove_controller(self, n: int) -> None:
        """Take controller n (node id) out of the voters; it goes on as an observer. Removing the
        active controller makes it resign once the removal is committed."""
        k = self.topo.index(n)
        self._voter_change(n, False, ["remove-controller", "--controller-id", str(n),
                                      "--controller-directory-id", self.directory_id(k)])

    def add_controller(self, n: int) -> None:
        """Make controller n (running, an observer) a voter, from its own configuration and log dir."""
        self._voter_change(n, True, ["--command-config", "/etc/kchaos/server.properties", "add-controller"])

    def directory_id(self, k: int) -> str:
        """Controller K's log directory id: the one its format was given, or (a spare) read back."""
        if k in self.directory_ids:
            return self.directory_ids[k]
        meta = self.files(self.topo.node_key(CONTROLLER_ID_BASE + k), DATA_DIR, "meta.properties")["meta.properties"]
        found = re.search(rb"^directory\.id=(\S+)", meta, re.M)
        if found is None:
            raise ClusterError(f"controller {k} has no directory.id in meta.properties")
        return found.group(1).decode()
