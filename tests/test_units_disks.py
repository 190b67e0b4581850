"""Disk faults on data the tests build: what each kind takes (bad ones exit 2 naming the key and
what is allowed), that a scenario with one serves its log directories through the pass-through, the
control file each writes, and that none is aimed at ZooKeeper. What Kafka does on
a full, failing or slow disk is tested against real Kafka in tests/test_disks.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from harness import scenario as scenario_mod
from harness.cluster import disks
from harness.cluster.settings import ClusterSettings, broker_properties
from harness.run import schedule
from harness.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def with_faults(*faults: dict, **extra) -> Scenario:
    base = scenario_mod.load(SCENARIOS / "smoke.toml")
    return Scenario.model_validate({**base.model_dump(mode="json"), "faults": list(faults), "duration_s": 30, **extra})


@pytest.mark.parametrize(("fault", "refused"), [
    ({"at_s": 2, "kind": "disk_error", "op": "unlink"}, "op\n  Input should be 'read', 'write' or 'fsync'"),
    ({"at_s": 2, "kind": "kill", "op": "read"}, "op: only disk_error takes op, not kill"),
    ({"at_s": 2, "kind": "disk_full", "target": "zookeeper"},
     "faults.0.target: disk_full acts on a broker's or KRaft controller's log directory, not on zookeeper"),
])
def test_bad_disk_faults_are_refused_naming_the_key(fault, refused):
    with pytest.raises(ValidationError, match=refused.replace("(", r"\(")):
        with_faults(fault)


def test_a_scenario_with_a_disk_fault_serves_its_log_directories_through_the_pass_through():
    s = with_faults({"at_s": 2, "kind": "disk_error", "target": "leader", "op": "fsync"})
    assert s.cluster_settings().faultable_disks and not with_faults().cluster_settings().faultable_disks
    (f,) = schedule.plan(s)
    assert (f.kind, f.op) == ("disk_error", "fsync")
    (f,) = schedule.plan(with_faults({"at_s": 2, "kind": "disk_error"}))
    assert f.op == "write", "write unless op says otherwise"


def test_a_kraft_controllers_log_directory_may_fail():
    s = with_faults({"at_s": 2, "kind": "disk_full", "target": "controller:1"}, mode="kraft", kafka_version="4.1.2",
                    zookeepers=None)
    assert s.cluster_settings().faultable_disks


def test_a_generator_that_would_aim_a_disk_fault_at_zookeeper_is_refused():
    with pytest.raises(ValidationError, match=r"generator\.targets: slow_disk acts on a broker's or KRaft"):
        with_faults(generator={"kinds": ["slow_disk"], "targets": ["zookeeper", "leader"]})
    planned = schedule.plan(with_faults(generator={"kinds": ["slow_disk"], "targets": ["leader", "random"]}))
    assert planned and all(f.kind == "slow_disk" for f in planned)


@pytest.mark.parametrize(("extra", "fault", "refused"), [
    ({}, {"at_s": 2, "kind": "log_dir_failure", "target": "leader"},
     "faults.0: log_dir_failure fails one log directory of several, and brokers have log_dirs = 1 (allowed: "
     "log_dirs = 2..4"),
    ({"log_dirs": 2}, {"at_s": 2, "kind": "log_dir_failure", "target": "leader", "dir": 3},
     "faults.0.dir: 3 does not exist (allowed: 1..2)"),
    ({"log_dirs": 2}, {"at_s": 2, "kind": "disk_full", "target": "leader", "dir": 3},
     "faults.0.dir: 3 does not exist (allowed: 1..2)"),
    ({"log_dirs": 2}, {"at_s": 2, "kind": "kill", "target": "leader", "dir": 1}, "dir: only disk_full"),
    ({"log_dirs": 5}, {"at_s": 2, "kind": "kill", "target": "leader"}, "log_dirs\n  Input should be less than"),
])
def test_bad_log_directories_are_refused_naming_the_key(extra, fault, refused):
    with pytest.raises(ValidationError, match=refused.replace("(", r"\(").replace(")", r"\)")):
        with_faults(fault, **extra)


def test_a_broker_with_two_log_directories_has_both_in_its_configuration():
    s = with_faults({"at_s": 2, "kind": "log_dir_failure", "target": "leader", "dir": 2}, log_dirs=2)
    settings = s.cluster_settings()
    assert settings.log_dirs == 2 and settings.faultable_disks
    assert "log.dirs=/var/lib/kafka/data,/var/lib/kafka/data-2\n" in broker_properties(settings, 1, 9100)
    (f,) = schedule.plan(s)
    assert (f.kind, f.dir) == ("log_dir_failure", 2)
    assert [disks.control_file(k) for k in (1, 2)] == ["disk.json", "disk-2.json"]
    assert [disks.disk_dir(k) for k in (1, 2)] == ["/var/lib/kafka/disk", "/var/lib/kafka/disk-2"]


def test_the_control_file_says_what_fails():
    assert disks.full() == {"full": True}
    assert disks.failing("fsync") == {"error_ops": ["fsync"]}
    assert disks.slow(150, 20) == {"latency_ms": 150, "jitter_ms": 20, "slow_ops": ["write", "fsync"]}


def test_a_cluster_without_faultable_disks_refuses_a_disk_fault():
    class Node(disks.DiskFaults):
        settings = ClusterSettings()

    with pytest.raises(ValueError, match="started without faultable_disks"):
        Node().fail_disk(1, disks.full(), [1])


def test_a_cluster_with_faultable_disks_refuses_an_image_without_the_disk_file_system():
    """No container starts: the Kafka image set-up builds has no kchaos-diskfs, so the entrypoint would
    fail on every node only once the cluster is half up."""
    from harness.cluster import ClusterError, KafkaCluster
    from harness.cluster.settings import ClusterImages

    with pytest.raises(ClusterError, match=r"cluster_images\(..., disks=True\)"):
        KafkaCluster(ClusterSettings(faultable_disks=True), ClusterImages("kchaos/kafka:x", "kchaos/toxiproxy:y"))


def test_the_disk_image_is_named_after_the_image_under_it():
    from harness.setup import images

    a, b = images.diskfs_ref("kchaos/kafka:4.4.0-abc"), images.diskfs_ref("kchaos/kafka:3.9.1-abc")
    assert a.tag.startswith("kchaos/kafka-diskfs:4.4.0-") and b.tag.startswith("kchaos/kafka-diskfs:3.9.1-")
    assert a.tag != images.diskfs_ref("kchaos/kafka:4.4.0-abd").tag, "a new image under it is a new disk image"


BROKER_LOG = "\n".join([
    "[2026-11-26 19:01:28,201] ERROR Error while appending records to chaos-m9-2 in dir /var/lib/kafka/data-2 "
    "(org.apache.kafka.storage.internals.log.LogDirFailureChannel)",
    "java.io.IOException: No space left on device",
    "[2026-11-26 19:01:28,285] WARN [ReplicaManager broker=2] Broker 2 stopped fetcher for partitions  and stopped "
    "moving logs for partitions  because they are in the failed log directory /var/lib/kafka/data-2. "
    "(kafka.server.ReplicaManager)",
    "[2026-11-26 19:01:29,001] INFO Deleted log /var/lib/kafka/data/chaos-1/00000000000000000000.log.deleted. "
    "(kafka.log.LogSegment)",
])


@pytest.mark.parametrize(("log", "dirs", "failed"), [
    (BROKER_LOG, [1, 2], [2]),  # data-2's error does not make data fail; a plain INFO line naming data neither
    (BROKER_LOG.replace("data-2 (org", "data (org"), [1, 2], [1]),
    ("[t] ERROR Error while writing to checkpoint file /var/lib/kafka/data/replication-offset-checkpoint "
     "(kafka.server.LogDirFailureChannel)", [1], [1]),  # the pre-3.7 logger, a path inside the directory
    ("[t] WARN [ReplicaManager broker=1] Stopping serving replicas in dir /var/lib/kafka/data-3 "
     "(kafka.server.ReplicaManager)", [1, 2, 3], [3]),
    ("[t] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)", [1], []),
])
def test_a_directory_failed_only_where_the_brokers_log_names_it_failing(log, dirs, failed):
    assert disks.failed_dirs(log, dirs) == failed


def test_a_halt_for_failed_disks_is_told_from_any_other_exit():
    tail = ("[2026-11-26 19:44:25,831] WARN Stopping serving logs in dir /var/lib/kafka/data (kafka.log.LogManager)\n"
            "[2026-11-26 19:44:25,840] ERROR Shutdown broker because all log dirs in /var/lib/kafka/data have failed "
            "(kafka.log.LogManager)\n")
    assert disks.halted_by_disks(tail)
    assert not disks.halted_by_disks("[t] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)\n")


class Healing(disks.DiskFaults):
    """A node whose disk heals, in the engine's ``status``, with the starts and stops the heal asks for."""

    def __init__(self, status: str, log: str = "", stopped: frozenset[int] = frozenset()):
        self.status, self.log, self.asked, self._stopped = status, log, [], set(stopped)

    def fail_disk(self, n: int, control: dict, dirs: list[int]) -> None:
        self.asked.append("disk back")

    def _node(self, n: int):
        node = self

        class Container:
            status = node.status

            def reload(self) -> None:
                pass

            def logs(self, since: int = 0) -> bytes:
                return node.log.encode()

        return Container()

    def start_broker(self, n: int) -> float:
        if self.status == "paused":
            raise RuntimeError("409 Client Error: Conflict (cannot start a paused container, try unpause instead)")
        self._stopped.discard(n)
        self.asked.append("start")
        return 0.0

    def stop_broker(self, n: int) -> None:
        self.status = "exited"  # the engine thaws a frozen node as its stop begins
        self._stopped.add(n)
        self.asked.append("stop")



def test_a_disk_heals_under_another_fault_without_ending_it_unless_it_must_restart_the_node():
    """A hunt's run could not go on: a disk fault on a follower healed while a pause held that follower
    frozen, and the heal, taking the frozen node for one Kafka halted, asked the engine to start it
    (409 Conflict). A frozen node is left frozen with its disk given back; one the heal must restart
    (a directory its log says failed, or ``restart``) is stopped, which thaws it, and started. A node
    a kill holds down stays down for that kill's heal to start; a node Kafka halted is started."""
    failed = f"ERROR Error while writing to checkpoint file {disks.log_dir(1)}/x (kafka.server.LogDirFailureChannel)"
    frozen = Healing("paused")
    assert frozen.heal_disk(3, [1], since_ms=0) == "" and frozen.asked == ["disk back"]
    frozen = Healing("paused")
    assert frozen.heal_disk(3, [1], since_ms=0, restart=True) == "restarted"
    assert frozen.asked == ["disk back", "stop", "start"]
    halted = Healing("exited")
    assert halted.heal_disk(3, [1], since_ms=0) == "started" and halted.asked == ["disk back", "start"]
    running = Healing("running", log=failed)
    assert running.heal_disk(3, [1], since_ms=0) == "restarted" and running.asked == ["disk back", "stop", "start"]
    killed = Healing("exited", stopped=frozenset({3}))
    assert killed.heal_disk(3, [1], since_ms=0, restart=True) == "" and killed.asked == ["disk back"]
    assert killed._stopped == {3}, "the kill's heal starts it"
