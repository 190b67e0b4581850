"""One cluster kept between runs that may share it, each with a topic and ids of its own.

Booting a cluster is most of a short run's overhead (15-25 s of three brokers and their quorum on
two cores). A run whose outcome depends only on what it holds on the cluster may run on a cluster
an earlier run left healed: the hunt's drawn runs and the matrix's cells do so by default. Each
such run gets a topic, group ids and transactional ids no earlier run held
(``with_topic_and_ids_of_its_own``), so nothing the cluster keeps for a workload (committed
offsets, generations, share state, producer epochs) is an earlier run's. What may not share is
decided by ``may_share_a_cluster``: a fault that leaves the quorum or the cluster changed. A run
that did not heal takes the kept cluster with it, and the next one boots.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.cluster.settings import MAX_PRIVATE_CLIENTS
from harness.faults import FAULTS
from harness.scenario import Scenario
from harness.scenario.tables import HoldsClusterIds

T = TypeVar("T", bound=HoldsClusterIds)

if TYPE_CHECKING:
    from harness.cluster import KafkaCluster
    from harness.run.result import RunResult


def may_share_a_cluster(s: Scenario) -> bool:
    """Whether ``s`` may run on a cluster earlier runs healed, with a topic and ids of its own
    (``with_topic_and_ids_of_its_own``): not when the faults change the quorum's voters, or leave
    the cluster on another version or feature level; nor when its cluster's formation is faulted
    (that happens once, as the cluster starts). Groups, share groups, transactional producers and
    the copier may: what the cluster keeps of them (committed offsets, generations, share state,
    producer epochs) is kept under ids no other run holds."""
    return ("formation" not in s.cluster
            and not any(FAULTS[f.kind].quorum_change or FAULTS[f.kind].lasting for f in s.faults))


def with_topic_and_ids_of_its_own(s: Scenario, tag: str) -> Scenario:
    """``s`` with its topic named ``NAME-tag`` and every id its clients hold on the cluster ending in
    ``-tag`` (group.id, transactional.id; a copier's output topic named by hand too): names no
    earlier run on a kept cluster used. The names the scenario gives its clients, groups and
    members stay as they are: faults aim at them, and the history and the verdict name them."""
    suffix = f"-{tag}"

    def own(table: T) -> T:
        return table.model_copy(update={"ids_suffix": table.ids_suffix + suffix})

    update: dict[str, Any] = {"topic": s.topic.model_copy(update={"name": f"{s.topic.name}{suffix}"}),
                              "producers": [own(p) if p.transactional else p for p in s.producers],
                              "groups": [own(g) for g in s.groups], "share_groups": [own(g) for g in s.share_groups]}
    if s.copier is not None:
        copier = own(s.copier)
        if copier.output_topic:
            copier = copier.model_copy(update={"output_topic": f"{copier.output_topic}{suffix}"})
        update["copier"] = copier
    return s.model_copy(update=update)


def with_links_for(s: Scenario, clients: list[str]) -> Scenario:
    """``s`` with links of their own for ``clients`` (the cluster settings a run gives a client it aims a
    link fault at), whether or not its faults aim at them: runs whose schedules differ in which
    clients they fault then have the same cluster settings, so they may share one."""
    private = list(dict.fromkeys([*s.cluster.get("private_clients", []), *clients]))
    if not clients or len(private) > MAX_PRIVATE_CLIENTS:  # more than a cluster gives links of their own
        return s
    return s.model_copy(update={"cluster": {**s.cluster, "private_clients": private}})


def with_node_faults(s: Scenario, skewable_clocks: bool, faultable_disks: bool,
                     losable_answers: bool = False) -> Scenario:
    """``s`` on nodes whose clocks a clock fault can move (libfaketime loaded, at offset 0 until one
    does), whose log directories a disk fault can fail (served through kchaos-diskfs, failing
    nothing until one does) and whose links' answers a fault can lose (the Kafka toxics on, unarmed
    until one is), as asked: runs with and without such faults then share one cluster."""
    wanted = {k: True for k, on in (("skewable_clocks", skewable_clocks), ("faultable_disks", faultable_disks),
                                    ("losable_answers", losable_answers)) if on}
    return s.model_copy(update={"cluster": {**s.cluster, **wanted}}) if wanted else s


def _boot(s: Scenario) -> KafkaCluster:
    from harness.cluster import KafkaCluster
    from harness.setup import cluster_images

    settings = s.cluster_settings()
    c = KafkaCluster(settings, cluster_images(s.kafka_version, upgrades=s.upgrades, disks=settings.faultable_disks))
    c.__enter__()
    return c


class _Ahead:
    """A cluster booting in a thread while another run goes on: the next run's, when it needs
    other settings than the kept one (a matrix moving to its next Kafka version)."""

    def __init__(self, s: Scenario, before: Callable[[], None] | None) -> None:
        self.settings = s.cluster_settings()
        self.cluster: KafkaCluster | None = None
        self._abandoned = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(s, before), name="kchaos-boot-ahead", daemon=True)
        self._thread.start()

    def _run(self, s: Scenario, before: Callable[[], None] | None) -> None:
        try:
            if before is not None:
                before()  # e.g. the image the cluster runs, still being built
            self.cluster = _boot(s)
        except BaseException:  # the run that needs it boots its own, and fails there if it must
            return
        if self._abandoned.is_set():  # nobody will take it: removed here, where it was made
            self.cluster.__exit__(None, None, None)
            self.cluster = None

    def take(self) -> KafkaCluster | None:
        """The booted cluster, once its boot ends (None: the boot failed)."""
        self._thread.join()
        return self.cluster

    def discard(self, wait: bool = True) -> None:
        """Remove the cluster: at once when its boot has ended; else, without ``wait``, by the boot's
        own thread when it ends (an interrupted process does not wait for a boot it will not use, and
        if it exits first the reaper's watchdog removes the containers)."""
        if not wait and self._thread.is_alive():
            self._abandoned.set()
            return
        if (c := self.take()) is not None:
            c.__exit__(None, None, None)


class KeptCluster:
    """One cluster kept running between runs that may share it, replaced when a run needs other
    settings or a clean one, and removed by ``close`` (the reaper removes it if the process dies).
    ``boot_ahead`` starts the next run's cluster while the current run goes on, so a matrix that
    moves to another version does not wait for its boot."""

    def __init__(self) -> None:
        self.cluster: KafkaCluster | None = None
        self._ahead: _Ahead | None = None

    def for_run(self, s: Scenario, reuse: bool) -> KafkaCluster | None:
        """The kept cluster when ``reuse`` and its settings are the scenario's; else None (the run
        boots its own), and a kept one of other settings is removed first."""
        wanted = s.cluster_settings()
        if self.cluster is not None and (not reuse or self.cluster.settings != wanted):
            self._close_kept()
        if not reuse:
            return None
        if self.cluster is None and self._ahead is not None and self._ahead.settings == wanted:
            ahead, self._ahead = self._ahead, None
            self.cluster = ahead.take()
        if self.cluster is None:
            self.cluster = _boot(s)
        return self.cluster

    def boot_ahead(self, s: Scenario, before: Callable[[], None] | None = None) -> None:
        """Start booting the cluster ``s`` runs on, unless the kept one (or one already booting) has
        its settings; ``before`` runs first in the boot's thread."""
        wanted = s.cluster_settings()
        if (self.cluster is not None and self.cluster.settings == wanted) or (
                self._ahead is not None and self._ahead.settings == wanted):
            return
        if self._ahead is not None:
            self._ahead.discard()
        self._ahead = _Ahead(s, before)

    def execute(self, s: Scenario, out: Path, reuse: bool, **execute_args: Any) -> RunResult:
        """``runner.execute`` of ``s`` into ``out``, on the kept cluster when ``reuse``. A run that did
        not heal, or did not finish, takes the kept cluster with it: no later run starts on it."""
        from harness.run import runner

        try:
            result = runner.execute(s, out, cluster=self.for_run(s, reuse), **execute_args)
        except Exception:
            self._close_kept()  # the next run boots its own, or takes the one booting ahead
            raise
        except BaseException:  # interrupted: leave at once
            self.close(wait=False)
            raise
        if result.unsettled:
            self._close_kept()
        return result

    def _close_kept(self) -> None:
        c, self.cluster = self.cluster, None
        if c is not None:
            c.__exit__(None, None, None)

    def close(self, wait: bool = True) -> None:
        """Remove the kept cluster and any booting ahead (without ``wait``, one still booting is
        left to remove itself: see _Ahead.discard)."""
        ahead, self._ahead = self._ahead, None
        try:
            self._close_kept()
        finally:
            if ahead is not None:
                ahead.discard(wait)

    def __enter__(self) -> KeptCluster:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(wait=exc_type is None)
