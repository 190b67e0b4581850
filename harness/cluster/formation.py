"""A fault while the cluster forms: the coordination quorum's first leader (the first active KRaft
controller, or the first ZooKeeper ensemble leader) killed, stopped or frozen at one of two moments:
as soon as it is elected (``after = "elected"``), when it writes the cluster's first metadata (KRaft:
the bootstrap records, the feature levels among them) and before any broker has registered; or once
the first broker has registered and serves while the others may still be registering
(``after = "registering"``).

Faults drawn during a workload find a cluster that has formed. Formation is its own ground: a
cluster that loses its first leader there must still form with another. The fault is a cluster
setting (``[cluster.formation]``), applied by the cluster's start before every broker is seen
registered; what happened is kept in ``KafkaCluster.formation`` for the run's history (a
``formation`` event).

Mixed into KafkaCluster (kafka_cluster.py), whose quorum reads and node faults it uses."""

from __future__ import annotations

import logging
import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.cluster.errors import ClusterError
from harness.waiting import until

LOG = logging.getLogger("kchaos.cluster")

# How a cluster that did not form after its formation fault says so (hunts and campaigns look for it).
FORMATION_FAILED = "the cluster did not form after its first quorum leader"
FIRST_LEADER_TIMEOUT_S = 60.0  # a quorum that elects nobody in this long did not start: a ClusterError
FIRST_BROKER_TIMEOUT_S = 120.0  # the cluster's whole start has this long (KafkaCluster.start)
# Each kind of formation fault: the node fault (nodes.py) that does it and the one that undoes it.
DONE_AND_UNDONE = {"kill": ("kill", "start_broker"), "stop": ("stop_broker", "start_broker"),
                   "pause": ("pause", "resume")}


class FormationFault(BaseModel):
    """``[cluster.formation]``: what is done to the quorum's first leader, and when."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["kill", "stop", "pause"] = Field(
        "kill", description="kill -9 its process, stop it cleanly (SIGTERM), or freeze it")
    after: Literal["elected", "registering"] = Field(
        "elected", description="the moment delay_s counts from: the first leader seen elected, or the first broker "
                               "seen registered and serving")
    delay_s: float = Field(0.0, ge=0, le=10, description="seconds after that moment before the fault")
    duration_s: float = Field(3.0, gt=0, le=60, description="seconds it stays killed, stopped or frozen")


def _ms() -> int:
    return time.time_ns() // 1_000_000


class Formation:

    formation: dict | None = None  # what the formation fault did, for the run's history; None without one

    def fault_formation(self, started: float) -> None:
        """Wait for the coordination quorum's first leader, fault it for the fault's duration, then
        bring it back; ``started`` is the monotonic time the cluster's first node was started. The
        record says who led in which epoch, when, and what the fault did."""
        f: FormationFault | None = self.settings.formation
        if f is None:
            return
        seen: list[tuple[int, int]] = []
        until(lambda: self._first_leader(seen), FIRST_LEADER_TIMEOUT_S, "the coordination quorum elected no leader",
              0.05, error=ClusterError)
        leader, epoch = seen[0]
        elected_s = round(time.monotonic() - started, 2)
        brokers: list[int] = []
        if f.after == "registering":
            until(lambda: self._first_brokers(brokers), FIRST_BROKER_TIMEOUT_S, "no broker registered", 0.1,
                  error=ClusterError)
        time.sleep(f.delay_s)
        LOG.info("formation: %s the first leader, node %d (epoch %d), for %g s", f.kind, leader, epoch, f.duration_s)
        fault_ms = _ms()
        apply, heal = DONE_AND_UNDONE[f.kind]
        getattr(self, apply)(leader)
        time.sleep(f.duration_s)
        getattr(self, heal)(leader)
        self.formation = {"kind": f.kind, "after": f.after, "leader": leader, "epoch": epoch,
                          "elected_after_s": elected_s, "brokers_serving": len(brokers), "delay_s": f.delay_s,
                          "duration_s": f.duration_s, "fault_ms": fault_ms, "heal_ms": _ms()}

    def _first_brokers(self, seen: list[int]) -> bool:
        """Whether a broker has registered and serves (its metadata names the brokers it knows); if so
        ``seen`` holds them."""
        try:
            brokers = sorted(self.admin.list_topics(timeout=0.5).brokers)
        except Exception:  # no broker answers yet
            return False
        seen[:] = brokers
        return bool(brokers)

    def _first_leader(self, seen: list[tuple[int, int]]) -> bool:
        """Whether the quorum has elected a leader; if so its (node, epoch) is appended to ``seen``."""
        q = self.quorum_state(0.3)
        if q.leader >= 0:
            seen.append((q.leader, q.epoch))
        return q.leader >= 0

    def formation_failed(self, e: ClusterError) -> ClusterError:
        """The error of a cluster that did not form, saying what its formation fault did first."""
        f = self.formation
        if f is None:
            return e
        moment = "its election" if f["after"] == "elected" else "the first broker registered"
        return ClusterError(f"{FORMATION_FAILED} (node {f['leader']}, epoch {f['epoch']}) was faulted ({f['kind']} "
                            f"for {f['duration_s']:g} s, {f['delay_s']:g} s after {moment}): {e}")

    def formed(self) -> None:
        """Complete the record once the cluster has formed: who leads the quorum now, in which epoch."""
        if self.formation is not None and "leader_after" not in self.formation:
            q = self.quorum_state(1.0)
            self.formation |= {"leader_after": q.leader, "epoch_after": q.epoch, "formed_ms": _ms()}
