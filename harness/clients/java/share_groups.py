"""Share groups (KIP-932): members that share a topic's partitions record by record, and what the
run reads of the group around them.

Each member is a process of its own running the Java driver's ShareMember (``kchaos.Driver
share-member CONFIG``), started, signalled and read as a consumer group's members are (groups.py's
``Member``: SIGKILL, SIGSTOP/SIGCONT after a SIGUSR1, SIGTERM for a clean leave), so the same member
faults act on it: client_kill, client_pause, client_restart. A member appends a ``delivery`` line for
every record it was given (with the delivery count the client reports) and an ``ack`` line for every
acknowledgement once its outcome is known; ``ShareGroup.history`` turns them into
deliveries.parquet's and share_acks.parquet's rows.

A share of records can be poison (``crash_ratio``): a member given one dies at once, before
committing anything of its poll, as an application that crashes on a record does (its ``crash``
line, exit status CRASH_EXIT). Which records are poison depends on the value alone (``poison``), so
every incarnation dies on the same ones; the group starts a member that died so again after
CRASH_RESTART_S, unless a fault holds it down. KIP-932's delivery attempt limit is what ends such a
loop: a poison record is archived after it.

The group's share-partition start offsets (every offset below is archived) are read with the
client's own Admin call (``kchaos.Driver share-offsets``) when the group starts (where it starts
from) and after healing (where it ended): run.json's ``start_offsets`` and ``final_start_offsets``,
which share_unseen judges by. After healing the run waits until the group has archived every
partition to its end (its start offset at the high watermark), so that what is left undelivered
is what the group skipped, not what it had not reached yet.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException, TopicPartition

from harness.clients.groups import STOP_GRACE_S, Member, MemberProcesses
from harness.clients.java.process import java_command
from harness.clients.process import bootstrap
from harness.scenario import ShareGroupSpec

if TYPE_CHECKING:
    from harness.cluster import KafkaCluster

CRASH_EXIT = 3  # ShareMember.CRASH_EXIT: the member died on a poison record
CRASH_RESTART_S = 0.5  # a crashed member is started again this long after it is seen dead
INITIALIZED_S = 30.0  # how long the group has to initialize its share state on every partition after starting
OFFSETS_TIMEOUT_S = 60.0
QUIET_S = 3.0  # after healing: no member given anything for this long, and the group is drained


def poison(value: str, crash_ratio: float) -> bool:
    """Whether a member dies processing ``value``: its CRC-32 below ``crash_ratio`` of the range
    (ShareMember.poison, the same answer in every process)."""
    return zlib.crc32(value.encode()) < crash_ratio * 2**32


class ShareMember(Member):
    """One share member's process; each new process is a new incarnation named ``s-1``, ``s-1.2``."""

    def __init__(self, name: str, spec: ShareGroupSpec, conf: dict, topic: str, work: Path,
                 spawner: ThreadPoolExecutor, command: list[str], seed: int):
        super().__init__(name, spec, conf, topic, work, spawner, command)  # type: ignore[arg-type]
        self.seed = seed
        self.held = False  # a fault stopped the process and starts it at its heal: not a crash to restart
        self.crashed_at: float | None = None  # when the group saw the current process dead of a poison record
        self.last_crash_at: float | None = None  # when a process of this member was last seen dead of one

    def start(self) -> None:
        with self._lock:
            self._start()

    def _start(self) -> None:
        self.incarnation += 1
        self.held, self.crashed_at = False, None
        g: ShareGroupSpec = self.spec  # type: ignore[assignment]
        cfg = {"group": g.group_id, "topic": self.topic, "conf": self.conf, "acknowledge": g.acknowledge,
               "release_ratio": g.release_ratio, "reject_ratio": g.reject_ratio, "crash_ratio": g.crash_ratio,
               "seed": zlib.crc32(f"{self.seed}/{self.consumer}".encode()),
               "group_config": {"share.auto.offset.reset": g.auto_offset_reset,
                                "share.isolation.level": g.isolation_level},
               "configure": self.incarnation == 1, "out": str(self.work / f"{self.consumer}.jsonl")}
        path = self.work / f"{self.consumer}.json"
        path.write_text(json.dumps(cfg))
        self.proc = self.spawner.submit(self._spawn, path).result()

    def kill(self) -> None:
        with self._lock:
            self.held = True
        super().kill()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        with self._lock:
            self.held = True
        super().stop(grace_s)

    def restart_if_crashed(self, now: float) -> bool:
        """Start the member again CRASH_RESTART_S after its process was seen dead of a poison record,
        unless a fault holds it down; whether it was started."""
        with self._lock:
            if self.held or self.proc is None or self.proc.poll() != CRASH_EXIT:
                return False
            if self.crashed_at is None:
                self.crashed_at = self.last_crash_at = now
            if now - self.crashed_at < CRASH_RESTART_S:
                return False
            self._start()
            return True

    def coming_back(self, now: float) -> bool:
        """Whether the member is coming back from a poison record: dead and not started again yet,
        starting (no ``started`` line yet), or within its session timeout of the death, while the
        dead process's membership still holds its partitions. The group is not quiet meanwhile."""
        if self.last_crash_at is None:
            return False
        with self._lock:
            alive = self.proc is not None and self.proc.poll() is None
            crashed = not self.held and self.proc is not None and self.proc.poll() == CRASH_EXIT
        g: ShareGroupSpec = self.spec  # type: ignore[assignment]
        return crashed or (alive and not self._started()) or now - self.last_crash_at < g.session_timeout_ms / 1000

    def failure(self) -> str | None:
        """A death on a poison record is the workload's, not a failure."""
        return None if self.proc is not None and self.proc.poll() == CRASH_EXIT else super().failure()


class ShareGroup(MemberProcesses):
    """The members of one share group, started and stopped together; the group's offsets and history."""

    def __init__(self, spec: ShareGroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                 version: str, seed: int):
        self.spec, self.cluster, self.topic, self.partitions, self.work = spec, cluster, topic, partitions, work
        self.version = version
        work.mkdir(parents=True, exist_ok=True)
        self.spawner = ThreadPoolExecutor(1, thread_name_prefix=f"share-{spec.name}-spawner")
        command = java_command(version, "share-member")
        self.members = [ShareMember(name, spec, {"bootstrap.servers": bootstrap(cluster, name), **spec.config}, topic,
                                    work, self.spawner, command, seed) for name in spec.member_names]
        self.start_offsets: dict[str, int] = {}
        self.final_start_offsets: dict[str, int] = {}
        self.last_answer = ""  # the coordinator's last answer (or error) while the group was awaited
        self._stopping = threading.Event()
        self._supervisor = threading.Thread(target=self._restart_crashed, name=f"share-{spec.name}-supervisor",
                                            daemon=True)

    def _restart_crashed(self) -> None:
        """Until the group stops: every member that died of a poison record is started again."""
        while not self._stopping.wait(0.1):
            for m in self.members:
                m.restart_if_crashed(time.monotonic())

    def stop(self) -> None:
        self._stopping.set()
        if self._supervisor.is_alive():
            self._supervisor.join(5)
        super().stop()

    # ------------------------------------------------------------------ the group's offsets

    def state(self) -> dict:
        """The group as its coordinators answer now: ``offsets``, "topic:partition" -> {"start", "lag"},
        the share-partition start offsets (a partition whose start the group has not yet written is
        absent), and ``assigned``, the "topic:partition"s its members hold."""
        cfg = self.work / "offsets.json"
        cfg.write_text(json.dumps({"bootstrap": bootstrap(self.cluster, ""), "group": self.spec.group_id}))
        proc = subprocess.run([*java_command(self.version, "share-offsets"), str(cfg)], capture_output=True,
                              text=True, timeout=OFFSETS_TIMEOUT_S)
        if proc.returncode != 0:
            raise RuntimeError(f"share group {self.spec.name}: its offsets could not be read: "
                               f"{proc.stderr.strip()[-500:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def offsets(self) -> dict[str, dict]:
        """"topic:partition" -> {"start", "lag"}: the share-partition start offsets as the group's
        coordinator answers now (partitions the group has not read yet are absent)."""
        return self.state()["offsets"]

    def _keys(self) -> list[str]:
        return [f"{self.topic}:{p}" for p in range(self.partitions)]

    def start(self, timeout_s: float = 30.0) -> None:
        """Start every member and wait (up to ``timeout_s``) until each has configured the group and
        subscribed (its ``started`` line), so the workload does not begin before the group exists."""
        for m in self.members:
            m.start()
        if self.spec.crash_ratio > 0:
            self._supervisor.start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not all(m._started() for m in self.members):
            time.sleep(0.1)

    def wait_initialized(self, timeout_s: float = INITIALIZED_S) -> bool:
        """Wait (up to ``timeout_s``) until the group coordinator has given every partition to a member,
        keeping where the group starts on each as ``start_offsets``; whether it got that far. The
        coordinator assigns a partition only once its share state is initialized, so a workload
        started before would meet a group that reads nothing. With ``earliest`` the group starts at the
        partition's log start offset (KIP-932); with ``latest`` where the group's first read found the
        partition's end, which its start offset says once the group has written it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                found = self.state()
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                self.last_answer = str(e)[-300:]
            else:
                self.last_answer = json.dumps(found)
                if set(self._keys()) <= set(found["assigned"]) and self._keep_start_offsets(found["offsets"]):
                    return True
            time.sleep(0.5)
        return False

    def _keep_start_offsets(self, offsets: dict[str, dict]) -> bool:
        """Keep the group's start on every partition as ``start_offsets``; whether it is known yet."""
        if self.spec.auto_offset_reset == "earliest":
            c = Consumer(self.cluster.client_config(**{"group.id": f"kchaos-starts-{self.spec.name}"}))
            try:
                self.start_offsets = {
                    k: c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[0]
                    for p, k in enumerate(self._keys())}
                return True
            except KafkaException:
                return False
            finally:
                c.close()
        if all(k in offsets for k in self._keys()):
            self.start_offsets = {k: int(offsets[k]["start"]) for k in self._keys()}
            return True
        return False

    def wait_drained(self, timeout_s: float) -> bool:
        """Wait until the group has archived every partition to its high watermark (its start offset
        there), or no member has been given anything for QUIET_S while none was coming back from a
        poison record (the start offset the coordinator reports is its persisted one, which may
        trail the last acknowledgements), keeping the last
        offsets read as ``final_start_offsets``; whether it archived everything in time."""
        c = Consumer(self.cluster.client_config(**{"group.id": f"kchaos-ends-{self.spec.name}"}))
        deadline = time.monotonic() + timeout_s
        seen, quiet_since = -1, time.monotonic()
        try:
            while True:
                read = False
                with contextlib.suppress(RuntimeError, ValueError, KafkaException, subprocess.TimeoutExpired):
                    ends = {f"{self.topic}:{p}": c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5)[1]
                            for p in range(self.partitions)}
                    found = self.offsets()
                    self.final_start_offsets = {k: int(v["start"]) for k, v in found.items() if k in ends}
                    read = True
                    if all(self.final_start_offsets.get(k, -1) >= end for k, end in ends.items()):
                        return True
                # Counted after the read (a JVM's start, seconds): quiet means nothing given across it
                given, now = sum(1 for r in self.lines() if r["t"] == "delivery"), time.monotonic()
                if given != seen or any(m.coming_back(now) for m in self.members):
                    seen, quiet_since = given, now
                elif read and now - quiet_since >= QUIET_S:
                    return False
                if now > deadline:
                    return False
                time.sleep(1.0)
        finally:
            c.close()

    # ------------------------------------------------------------------ what it recorded

    def history(self) -> tuple[list[dict], list[dict]]:
        """(deliveries rows, share_acks rows) of the group's run."""
        g = self.spec.name
        deliveries, acks = [], []
        for r in self.lines("member"):
            if r["t"] == "delivery":
                deliveries.append({"group": g, "member": r["member"], "topic": r["topic"], "partition": r["partition"],
                                   "offset": r["offset"], "value": r["value"], "delivery_count": r["delivery_count"],
                                   "ts_ms": r["ts_ms"]})
            elif r["t"] == "ack":
                acks.append({"group": g, "member": r["member"], "topic": r["topic"], "partition": r["partition"],
                             "offset": r["offset"], "value": r["value"], "type": r["type"], "outcome": r["outcome"],
                             "error": r["error"], "ts_ms": r["ts_ms"]})
        return deliveries, acks

    def settings(self) -> dict:
        """run.json's account of the group: its table, its topic and the offsets it started and ended at."""
        return {**self.spec.settings(), "topics": [self.topic], "start_offsets": self.start_offsets,
                **({"final_start_offsets": self.final_start_offsets} if self.final_start_offsets else {})}
