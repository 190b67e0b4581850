"""Consumer groups: members that subscribe, record what they return and commit what they processed.

Each member is a process of its own (``python -m harness.clients.librdkafka.member CONFIG``), so a fault can do to
it what happens to a real application: SIGKILL (it dies without leaving the group), SIGSTOP and
SIGCONT (it freezes past its session and poll interval, then resumes as a zombie that may still
commit), SIGTERM (a clean leave). A member writes one JSON line per record it returned, per commit
the coordinator acknowledged, per commit refused and per assignment change, each line written
before the member goes on, so whatever a killed member processed is on disk. ``Group`` in the
harness process turns those lines into consumed.parquet's rows, offsets.parquet's "live" rows and
events.jsonl's rebalance events, and reads the group's committed offsets after healing.

The generation a row carries is the member's count of assignments received in its incarnation:
librdkafka gives Python neither the classic generation nor the KIP-848 member epoch, and a
member's assignments change exactly when those do for it.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from harness.cluster import reaper
from harness.history.events import CommitRefused, Rebalance, now_ms
from harness.scenario import GroupSpec

if TYPE_CHECKING:
    from harness.cluster import KafkaCluster

STOP_GRACE_S = 15.0  # a member's clean leave on SIGTERM, before it is killed
LIBRDKAFKA_MEMBER = [sys.executable, "-m", "harness.clients.librdkafka.member"]  # a member's program: librdkafka's
TAIL_OFFSETS = 500  # how far back from a partition's end its last readable record is looked for
FREEZE_WAIT_S = 5.0  # how long client_pause waits for a member to stop itself between calls


def member_conf(g: GroupSpec, base: dict) -> dict:
    """librdkafka settings of one member of ``g`` (``base`` holds its bootstrap servers)."""
    conf = {**base, "group.id": g.group_id, "isolation.level": g.isolation_level, "auto.offset.reset": "earliest",
            "enable.auto.commit": g.commit == "auto", "auto.commit.interval.ms": g.auto_commit_interval_ms,
            "max.poll.interval.ms": g.max_poll_interval_ms, "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 2000}
    if g.protocol == "consumer":  # session and heartbeat are the broker's settings
        return {**conf, "group.protocol": "consumer", **g.config}
    return {**conf, "group.protocol": "classic", "partition.assignment.strategy": g.assignor,
            "session.timeout.ms": g.session_timeout_ms, "heartbeat.interval.ms": max(200, g.session_timeout_ms // 6),
            **g.config}


COORDINATOR_MOVING = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                      KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._TIMED_OUT, KafkaError._TRANSPORT}


def committed_offsets(consumer: Consumer, parts: list[TopicPartition], timeout_s: float = 60) -> list[TopicPartition]:
    """The group's committed offsets, asked again while its coordinator moves (a broker fault does
    that) until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return consumer.committed(parts, timeout=10)
        except KafkaException as e:
            if e.args[0].code() not in COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def final_offsets(cluster: KafkaCluster, group: str, topic: str) -> list[dict]:
    """A group's committed offsets read after healing: offsets.parquet's "final" rows."""
    c = Consumer(cluster.client_config(**{"group.id": group, "enable.auto.commit": False}))
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        parts = [TopicPartition(topic, p) for p in sorted(md.partitions)]
        return [{"group": group, "topic": tp.topic, "partition": tp.partition, "offset": tp.offset,
                 "ts_ms": now_ms(), "phase": "final"} for tp in committed_offsets(c, parts) if tp.offset >= 0]
    finally:
        c.close()


def _die_with_parent() -> None:
    """The member is killed if the harness process dies: no member outlives a run. The kernel sends
    the signal when the *thread* that started the process ends, so every member is started by one
    thread that lives as long as its group (``Group.spawner``), never by the nemesis's."""
    reaper.die_with_parent()


# ---------------------------------------------------------------- the harness side

class Member:
    """One member's process and the faults that act on it; each new process is a new incarnation
    with a consumer name of its own (``g-1``, ``g-1.2``, ...)."""

    def __init__(self, name: str, spec: GroupSpec, conf: dict, topic: str, work: Path, spawner: ThreadPoolExecutor,
                 command: list[str] = LIBRDKAFKA_MEMBER):
        self.name, self.spec, self.conf, self.topic, self.work = name, spec, conf, topic, work
        self.command = command  # the member program; its config file's path is appended
        self.spawner = spawner  # one long-lived thread starts every process: see _die_with_parent
        self.incarnation = 0
        self.proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    @property
    def consumer(self) -> str:
        return self.name if self.incarnation <= 1 else f"{self.name}.{self.incarnation}"

    def start(self) -> None:
        with self._lock:
            self.incarnation += 1
            cfg = {"consumer": self.consumer, "topic": self.topic, "conf": self.conf, "commit": self.spec.commit,
                   "every_records": self.spec.commit_every_records, "every_ms": self.spec.commit_every_ms,
                   "out": str(self.work / f"{self.consumer}.jsonl")}
            path = self.work / f"{self.consumer}.json"
            path.write_text(json.dumps(cfg))
            self.proc = self.spawner.submit(self._spawn, path).result()

    def _spawn(self, cfg_path: Path) -> subprocess.Popen:
        with open(self.work / f"{self.consumer}.log", "w") as log:
            return subprocess.Popen([*self.command, str(cfg_path)], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

    def signal(self, sig: int) -> None:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(sig)

    def kill(self) -> None:
        """client_kill: the member dies without leaving; a new one joins at the heal."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """client_restart and the run's end: a clean leave (its last commit included)."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        if self.proc is not None:
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def pause(self, wait_s: float = FREEZE_WAIT_S) -> None:
        """client_pause: the process freezes: no polls, no heartbeats, no commits. It stops itself
        between calls, after processing a batch and before committing it, never with a commit in
        flight: a frozen process would hear that commit's acknowledgement only when it resumes,
        after other members' later commits, and offset_regression (ordered by acknowledgement)
        would count a regression the coordinator never made. A process that has not reached its
        loop, or does not stop within ``wait_s`` (a call that blocks), is stopped where it is."""
        if self.proc is None or self.proc.poll() is not None:
            return
        if self._started():  # its SIGUSR1 handler is in place
            self.signal(signal.SIGUSR1)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and not self.stopped():
                time.sleep(0.02)
        if not self.stopped():
            self.signal(signal.SIGSTOP)

    def _started(self) -> bool:
        """Whether the current process has written its first line (after installing its handlers)."""
        out = self.work / f"{self.consumer}.jsonl"
        return out.exists() and out.stat().st_size > 0

    def stopped(self) -> bool:
        """Whether the process is stopped (state T in /proc), or gone."""
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text()  # type: ignore[union-attr]
        except OSError:
            return True
        return stat.rsplit(")", 1)[1].split()[0] in ("T", "t", "Z")

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def failure(self) -> str | None:
        """Why the current process ended on its own, if it did (its log's tail)."""
        # A JVM exits 128+15 after its shutdown hooks (the Java member's clean leave) on SIGTERM.
        if self.proc is None or self.proc.poll() in (None, 0, -signal.SIGKILL, -signal.SIGTERM, 128 + signal.SIGTERM):
            return None
        return (self.work / f"{self.consumer}.log").read_text(errors="replace")[-1500:]


class MemberProcesses:
    """What every kind of group's member processes share: stopped together, a failure of one, and
    the lines every incarnation of every member wrote (``work/NAME.jsonl``)."""

    members: list[Member]
    spawner: ThreadPoolExecutor
    work: Path

    def stop(self) -> None:
        """Every member leaves cleanly, in parallel (each may wait out a rebalance)."""
        threads = [threading.Thread(target=m.stop, daemon=True) for m in self.members]
        for t in threads:
            t.start()
        for t in threads:
            t.join(STOP_GRACE_S + 15)
        self.spawner.shutdown(wait=False)

    def failure(self) -> str | None:
        return next((f"member {m.consumer} exited: {why}" for m in self.members if (why := m.failure())), None)

    def lines(self, who: str = "member_file") -> list[dict]:
        """Every line every incarnation of every member wrote, in the order each wrote them, each
        with the incarnation's name under ``who``."""
        out = []
        for path in sorted(self.work.glob("*.jsonl")):
            for text in path.read_text().splitlines():
                with contextlib.suppress(ValueError):  # a line a SIGKILL cut short
                    out.append({**json.loads(text), who: path.stem})
        return out


class Group(MemberProcesses):
    """The members of one group, started together and stopped together; their history afterwards."""

    def __init__(self, spec: GroupSpec, cluster: KafkaCluster, topic: str, partitions: int, work: Path,
                 command: list[str] = LIBRDKAFKA_MEMBER, conf: Callable[[GroupSpec, dict], dict] = member_conf,
                 reports_commits: bool = True):
        """``command`` is the member program (librdkafka's, group_member.py, by default) and ``conf``
        a member's client properties from the spec and the cluster's client settings for it
        (librdkafka's property names by default). ``reports_commits``: whether the library tells a
        member which commits the coordinator acknowledged; where it does not (sarama), the group's
        live commits are the coordinator's own record of them (harness/run/coordinator_log.py)."""
        self.spec, self.cluster, self.topic, self.partitions, self.work = spec, cluster, topic, partitions, work
        self.reports_commits = reports_commits
        work.mkdir(parents=True, exist_ok=True)
        self.spawner = ThreadPoolExecutor(1, thread_name_prefix=f"group-{spec.name}-spawner")
        self.members = [Member(name, spec, conf(spec, cluster.client_config(name)), topic, work, self.spawner, command)
                        for name in spec.member_names]

    def start(self) -> None:
        for m in self.members:
            m.start()

    def assignments(self) -> dict[str, set[int]]:
        """What each member's current process holds now, from its rebalance lines (an assignment
        adds partitions, a revocation or loss removes them: eager and incremental protocols alike)."""
        held: dict[str, set[int]] = {m.consumer: set() for m in self.members}
        for r in self.lines():
            if r["t"] == "rebalance" and r["member_file"] in held:
                parts = set(r["partitions"])
                held[r["member_file"]] = held[r["member_file"]] | parts if r["kind"] == "assign" else \
                    held[r["member_file"]] - parts
        return held

    def wait_formed(self, timeout_s: float = 30.0) -> bool:
        """Wait until every member holds a partition (as many as there are partitions, when there are
        fewer partitions than members), so faults meet a formed group; whether it formed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if sum(bool(p) for p in self.assignments().values()) >= min(len(self.members), self.partitions):
                return True
            time.sleep(0.2)
        return False

    def wait_caught_up(self, timeout_s: float) -> bool:
        """Wait until the group has committed past the last record it can read in every partition (all
        that was written is processed), so the run's end does not cut members off while they catch up
        after a fault; whether it did in time. Called once the producers have stopped and the ISR is
        whole, so those ends no longer move."""
        c = Consumer(self.cluster.client_config(**{"group.id": self.spec.group_id, "enable.auto.commit": False}))
        parts = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        deadline = time.monotonic() + timeout_s
        ends: dict[int, int] | None = None
        try:
            while time.monotonic() < deadline:
                with contextlib.suppress(KafkaException):
                    ends = ends or self._readable_ends(parts)
                    done = {tp.partition: tp.offset for tp in c.committed(parts, timeout=5)}
                    if all(done.get(p, -1) >= end for p, end in ends.items()):
                        return True
                time.sleep(0.5)
            return False
        finally:
            c.close()

    def _readable_ends(self, parts: list[TopicPartition]) -> dict[int, int]:
        """Per partition, the offset after the last record a member reads at the group's isolation
        level, as far as the last TAIL_OFFSETS offsets tell (the high watermark where they hold none).
        A transaction's marker is not a record a consumer returns, and librdkafka commits the offset
        after the last record it returned, so a partition ending in a marker is caught up below its
        high watermark."""
        c = Consumer(self.cluster.client_config(**{
            "group.id": f"kchaos-ends-{self.spec.group_id}", "enable.auto.commit": False,
            "isolation.level": self.spec.isolation_level, "enable.partition.eof": True}))
        try:
            ends, tails = {}, []
            for tp in parts:
                lo, hi = c.get_watermark_offsets(tp, timeout=5)
                ends[tp.partition] = hi
                if hi > lo:
                    tails.append(TopicPartition(tp.topic, tp.partition, max(lo, hi - TAIL_OFFSETS)))
            c.assign(tails)
            last: dict[int, int] = {}
            pending, deadline = {tp.partition for tp in tails}, time.monotonic() + 10
            while pending and time.monotonic() < deadline:
                for m in c.consume(500, timeout=0.5):
                    if m.error() is None:
                        last[m.partition()] = m.offset()
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
            return {p: last[p] + 1 if p in last and p not in pending else hi for p, hi in ends.items()}
        finally:
            c.close()

    def history(self) -> tuple[list[dict], list[dict], list[Rebalance | CommitRefused]]:
        """(consumed rows, live offsets rows, events) of the group's run."""
        lines, g = self.lines(), self.spec.name
        consumed = [{**{k: v for k, v in r.items() if k not in ("t", "member_file")}, "group": g}  # not its id
                    for r in lines if r["t"] == "read"]
        offsets = [{"group": g, "topic": r["topic"], "partition": r["partition"], "offset": r["offset"],
                    "ts_ms": r["ts_ms"], "phase": "live"} for r in acknowledged_in_call_order(lines)]
        events = [(Rebalance if r["t"] == "rebalance" else CommitRefused)(
            group=g, consumer=r["member_file"], **{k: v for k, v in r.items() if k not in ("t", "member_file")})
            for r in lines if r["t"] in ("rebalance", "commit_failed")]
        return consumed, offsets, events


def acknowledged_in_call_order(lines: list[dict]) -> list[dict]:
    """The ``commit`` lines, a member's numbered acknowledgements (``call``) taken in the order of its
    commit calls, each at the earliest time it or a later call of the member was acknowledged (a
    millisecond before a later call's, so the call order survives equal times).

    A driver numbers its commits when its client may report two acknowledgements in another order
    than it received them: the Java client fires completed requests on two threads, and in one run
    a member reported offset 829 at :145 and 738 at :149 while the coordinator's own log wrote 738
    first. One member's successful commits are applied in the order it made them (one connection to
    the coordinator, requests answered in order; a commit that outlived its connection failed), so
    the call order is the order the coordinator applied them in. An acknowledgement's time bounds
    when its commit was applied, and so bounds every earlier call's: the earliest such bound is the
    time kept. Lines without a number (librdkafka's, auto-commits) keep their own order and time."""
    commits = [r for r in lines if r["t"] == "commit"]
    calls: dict[str, dict[int, list[dict]]] = {}  # member file -> call -> its lines (one per partition)
    for r in commits:
        if r.get("call") is not None:
            calls.setdefault(r["member_file"], {}).setdefault(r["call"], []).append(r)
    retimed: dict[int, dict] = {}
    for by_call in calls.values():
        bound = None  # a millisecond before the next call's time: this call was applied before it
        for call in sorted(by_call, reverse=True):
            rows = by_call[call]
            ts = rows[0]["ts_ms"] if bound is None else min(rows[0]["ts_ms"], bound)
            retimed.update({id(r): {**r, "ts_ms": ts} for r in rows})
            bound = ts - 1
    return [retimed.get(id(r), r) for r in commits]
