"""The workload of one run on a live cluster, from start to run directory.

Recording producers and consumers on one topic, with a state sampler beside them. ``stop`` ends
the producers, heals the cluster, lets the live consumers see the healed high watermark, reads
every partition back from offset 0, reads every replica's log from its broker's files, and writes
the run directory's history files. The runner and the pytest plugin both record through this one
class, so a test built by hand from the plugin's fixtures gets what a scenario run gets.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from harness import history
from harness.clients import (
    DEFAULT_CLIENT,
    LIBRARIES,
    ClientDriver,
    ConsumerClient,
    CopierClient,
    GroupClient,
    GroupMember,
    ProducerClient,
    driver,
    reader,
)
from harness.cluster import KafkaCluster
from harness.cluster.errors import BOOT_FAILED
from harness.cluster.topics import seeded_assignment
from harness.history.events import (
    EventLog,
    IsrNotRestored,
    Note,
    PartitionSample,
    ToolFailed,
    WorkloadEnd,
    WorkloadStart,
    now_ms,
)
from harness.run import coordinator_log
from harness.run.nemesis import StateSampler
from harness.run.replicas import read_replicas
from harness.scenario import (
    UNLIMITED_RATE,
    ConsumerSpec,
    CopierSpec,
    GroupSpec,
    ProducerSpec,
    Scenario,
    ShareGroupSpec,
    TopicSpec,
    transactional_id,
)

GROUP_FORM_S = 30.0  # how long the workload waits for its groups to form before it starts
PRODUCER_READY_S = 60.0  # how long the workload waits for a producer that runs in a process of its own to be made
GROUP_CATCH_UP_S = 30.0  # how long the heal waits for each group to commit to the end of its topic
REPLICAS_WITH_EPOCH = history.REPLICAS_SCHEMA.append(pa.field("leader_epoch", pa.int32(), True))
SHORT = {"read_committed": "rc", "read_uncommitted": "ru"}  # consumer names when both levels read
SHORT_OF = 0.9  # a producer that sent less than this share of its asked rate is reported short
READ_AFTER_HEAL_S = 1.0  # after healing, the longest live consumers keep reading so they see the healed high watermark
READ_CHECK_S = 0.05  # how often that read is asked whether every reader has read what was acknowledged


def as_named(rows: list[dict], group: str) -> list[dict]:
    """Rows read from the cluster by a group's id, with the group as the scenario names it (the id
    differs on a kept cluster: ``HoldsClusterIds.ids_suffix``)."""
    return [{**r, "group": group} for r in rows]


class Phases(dict):
    """Seconds per phase of a run, in the order they ran (run.json's "phases")."""

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Time a phase; a phase timed twice (the workload, then stopping it) adds up."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self[name] = round(self.get(name, 0.0) + time.monotonic() - t0, 2)

    def together(self, *names: str) -> None:
        """Phases about to run at once: listed in this order whichever ends first."""
        for name in names:
            self.setdefault(name, 0.0)


class RecordingError(RuntimeError):
    """A producer, a consumer or the final read failed: the history would be incomplete."""


@dataclass
class Recorded:
    """What one recording wrote, counted."""

    produced: int
    acked: int
    consumed_live: int
    final: int
    replicas: int
    start_ms: int
    end_ms: int


def acknowledged_ends(sends: list[dict[str, list]], topic: str) -> dict[int, int]:
    """The highest acknowledged offset on each of ``topic``'s partitions, from producers' columns."""
    ends: dict[int, int] = {}
    for cols in sends:
        for t, p, status, offset in zip(cols["topic"], cols["partition"], cols["status"], cols["offset"], strict=True):
            if t == topic and status == "ok" and offset is not None:
                ends[p] = max(ends.get(p, -1), offset)
    return ends


def read_to(highest: dict[int, int] | None, ends: dict[int, int]) -> bool:
    """Whether a reader's highest offsets reach every partition's end (None: a reader that cannot tell)."""
    return highest is not None and all(highest.get(p, -1) >= o for p, o in ends.items())


class Recording:
    """Producers (transactional ones too), consumers at each isolation level, an optional copier,
    consumer groups."""

    def __init__(self, cluster: KafkaCluster, topic: TopicSpec, producers: list[ProducerSpec], consumers: ConsumerSpec,
                 events: EventLog, copier: CopierSpec | None = None, seed: int = 1,
                 groups: list[GroupSpec] | None = None, work: Path | None = None,
                 library: Callable[[object], tuple[str, str]] | None = None,
                 share_groups: list[ShareGroupSpec] | None = None, isr_wait_s: float = 120.0):
        self.isr_wait_s = isr_wait_s  # after healing, how long to wait for every partition's ISR to be whole again
        self.cluster, self.topic, self.events, self.consumer_spec = cluster, topic, events, consumers
        # Each table's clients are made by its library's driver (Scenario.library: the library and its version).
        self.library = library or (lambda table: (DEFAULT_CLIENT, cluster.settings.kafka_version))
        self.reader = reader()  # the harness's own measurement of the brokers, whatever is under test
        self.unsettled: list[str] = []  # topics whose ISR was not full after the heal
        self._stop_producers, self._stop_consumers = threading.Event(), threading.Event()
        self.producers: list[ProducerClient] = [
            self.driver_of(p).producer(name, p, cluster, topic.name, topic.partitions, self._stop_producers, seed)
            for p in producers for name in p.instance_names]
        levels, readers = consumers.levels, self.driver_of(consumers)
        self.consumers: list[ConsumerClient] = [
            readers.consumer(f"c{i}" + (f"-{SHORT[level]}" if len(levels) > 1 else ""), consumers, cluster,
                             topic.name, topic.partitions, self._stop_consumers, isolation=level)
            for level in levels for i in range(consumers.count)]
        self.copier_spec = copier
        self.copier: CopierClient | None = None
        if copier is not None:
            self.copier = self.driver_of(copier).copier(copier, cluster, topic.name, self.output_topic,
                                                        topic.partitions, self._stop_consumers)
        self.groups: list[GroupClient] = [
            self.driver_of(g).group(g, cluster, topic.name, topic.partitions, (work or Path(".")) / "members" / g.name)
            for g in groups or []]
        self.share_groups: list[GroupClient] = [
            self.driver_of(g).share_group(g, cluster, topic.name, topic.partitions,
                                          (work or Path(".")) / "members" / g.name, seed)
            for g in share_groups or []]
        self.sampler = StateSampler(cluster, topic.name, events)
        self.start_ms = self.end_ms = 0
        self.phases = Phases()
        self.seed = seed
        self.log_starts: dict[str, dict[int, int]] = {}  # after the final read: topic -> partition -> log start
        self._sends: dict[str, dict[str, list]] = {}  # producer -> its columns, once it has stopped

    @classmethod
    def of(cls, cluster: KafkaCluster, s: Scenario, events: EventLog, work: Path) -> Recording:
        """The workload a scenario's tables describe (its topic, producers, consumers, copier, groups)."""
        return cls(cluster, s.topic, s.producers, s.consumers, events, s.copier, s.seed, groups=s.groups, work=work,
                   library=s.library, share_groups=s.share_groups, isr_wait_s=s.isr_wait_s)

    def driver_of(self, table) -> ClientDriver:
        """The driver that makes a table's clients: its library's, at its version."""
        return driver(*self.library(table))

    def _clients(self) -> list[dict]:
        """The client library of every client the run made."""
        readers = [self.consumer_spec] if self.consumers else []
        tables = [p.spec for p in self.producers] + readers + [g.spec for g in [*self.groups, *self.share_groups]]
        return [self.client_of(t) for t in tables + ([self.copier_spec] if self.copier_spec is not None else [])]

    def client_of(self, table) -> dict:
        """run.json's account of a table's client library: its name and version."""
        d = self.driver_of(table)
        cannot = LIBRARIES[d.name].cannot_tell
        return {"name": d.name, "version": d.version, **({"cannot_tell": list(cannot)} if cannot else {})}

    def handles(self) -> dict:
        """What a nemesis needs of this workload: its clients and members by name (client faults and
        workload steps), what the coordinator targets mean alone, and the acknowledgement counts
        ``acked`` triggers watch."""
        txn = [p.pname for p in self.producers if p.spec.transactional] + (
            [self.copier_spec.name] if self.copier_spec is not None else [])
        txn_ids = {p.pname: p.spec.transactional_id_of(p.pname) for p in self.producers if p.spec.transactional}
        group_ids = {g.spec.name: g.spec.group_id for g in [*self.groups, *self.share_groups]}
        if self.copier_spec is not None:
            txn_ids[self.copier_spec.name] = self.copier_spec.transactional_id
            group_ids[self.copier_spec.group] = self.copier_spec.group_id
        return {"clients": self.client, "first_client": txn[0] if txn else "", "members": self.member,
                "first_group": self.groups[0].spec.name if self.groups else "", "acks": self.acked,
                "first_share_group": self.share_groups[0].spec.name if self.share_groups else "",
                "txn_id": lambda name: txn_ids.get(name, transactional_id(name)),
                "group_id": lambda name: group_ids.get(name, name)}

    @property
    def output_topic(self) -> str:
        c = self.copier_spec
        return (c.output_topic or f"{self.topic.name}-copy") if c is not None else ""

    @property
    def topics(self) -> list[str]:
        """Every topic the workload writes: the scenario's, and the copier's output."""
        return [self.topic.name] + ([self.output_topic] if self.copier_spec is not None else [])

    @property
    def v2(self) -> bool:
        """Whether the history needs the v2 contract (transactions, a copier, read_committed readers)."""
        return (self.copier is not None or any(p.spec.transactional for p in self.producers)
                or "read_committed" in self.consumer_spec.levels or bool(self.groups) or bool(self.share_groups))

    def create_topics(self) -> None:
        """The scenario's topic and the copier's output topic (same settings), each with a full ISR; a
        topic that exists already is kept."""
        t = self.topic
        existing = set(self.cluster.admin.list_topics(timeout=30).topics)  # a plugin test's, made beforehand
        # Without racks (Kafka's rack-aware placement decides then), the replicas are placed from the
        # seed: the same scenario and seed put the same brokers in the same roles on every cluster.
        placed = None if self.cluster.settings.racks or t.replication_factor > self.cluster.settings.brokers else \
            seeded_assignment(t.partitions, t.replication_factor, self.cluster.settings.broker_ids, self.seed)
        for name in self.topics:
            if name not in existing:
                self.cluster.create_topic(name, t.partitions, t.replication_factor, t.topic_config(),
                                          replica_assignment=placed)
        for name in self.topics:
            self.cluster.wait_full_isr(name, timeout_s=60)

    def start(self) -> float:
        """Sampler and consumers first, then the producers; returns the monotonic start time."""
        self.sampler.start()
        for t in self.consumers:
            t.start()
        if self.copier is not None:
            self.copier.start()
        for g in self.groups:
            g.start()
        for g in self.groups:  # faults meet a formed group; one that does not form is itself worth a record
            if not g.wait_formed(GROUP_FORM_S):
                self.events.write(Note(ts_ms=now_ms(), msg=f"group {g.spec.name}: not every member held a partition "
                                       f"{GROUP_FORM_S:g} s after starting"))
        for sg in self.share_groups:
            sg.start()
        for sg in self.share_groups:  # where each starts from: its start offset on every partition
            if not sg.wait_initialized():
                self.events.write(Note(ts_ms=now_ms(), msg=f"share group {sg.spec.name}: no start offset on every "
                                       "partition (share_unseen is not judged where it has none); the last "
                                       f"answer: {sg.last_answer}"))
        for t in self.producers:
            t.ready(PRODUCER_READY_S)
        t0 = time.monotonic()
        self.start_ms = now_ms()
        self.events.write(WorkloadStart(ts_ms=self.start_ms))
        for t in self.producers:
            t.start()
        return t0

    def stop_producers(self) -> None:
        """Stop sending and wait for every delivery report (or its timeout)."""
        self._stop_producers.set()
        for t in self.producers:
            t.join(timeout=t.spec.delivery_timeout_ms / 1000 + 30)
        self.end_ms = now_ms()
        self.events.write(WorkloadEnd(ts_ms=self.end_ms))

    def heal_and_settle(self) -> None:
        """Heal every fault, wait for the cluster and a full ISR, then stop the live consumers."""
        c = self.cluster
        c.heal()
        for n, times in c.wait_ready(120, restart_lost_boots=True).items():
            self.events.write(Note(ts_ms=now_ms(), msg=f"kafka-{n} exited while it started after the faults, because "
                                   f"ZooKeeper expired its session ({BOOT_FAILED}): the heal started it again"
                                   + (f", {times} times" if times > 1 else "")))
        for name in self.topics:
            try:
                c.wait_full_isr(name, timeout_s=self.isr_wait_s)
            except Exception as e:  # recorded: the final read still tells what survived
                self.unsettled.append(name)
                self.events.write(self._isr_not_restored(name, e))
        self._read_after_heal()
        for g in self.groups:
            if not g.wait_caught_up(GROUP_CATCH_UP_S):
                self.events.write(Note(ts_ms=now_ms(), msg=f"group {g.spec.name} had not committed to the end of every "
                                       f"partition {GROUP_CATCH_UP_S:g} s after healing"))
            g.stop()
        for sg in self.share_groups:
            if not sg.wait_drained(GROUP_CATCH_UP_S):
                self.events.write(Note(ts_ms=now_ms(), msg=f"share group {sg.spec.name}: its start offsets had not "
                                       "reached every partition's end when it stopped being given records (records "
                                       "past them are not judged by share_unseen)"))
            sg.stop()
        self._stop_consumers.set()
        threads = [*self.consumers, *([self.copier] if self.copier is not None else [])]
        for t in threads:
            t.join(timeout=30)
        self.sampler.stop_event.set()
        self.sampler.join(timeout=5)
        named = [(f"producer {p.pname}", p) for p in self.producers]
        named += [(f"consumer {c.cname}", c) for c in self.consumers]
        named += [(f"copier {self.copier.spec.name}", self.copier)] if self.copier is not None else []
        for who, t in named:  # every client's protocol names it: a process has no thread's name
            if t.failure is not None:
                raise RecordingError(f"{who} failed: {t.failure!r}")
        for g in [*self.groups, *self.share_groups]:
            if (why := g.failure()) is not None:
                raise RecordingError(f"group {g.spec.name}: {why}")

    def _read_after_heal(self) -> None:
        """Live consumers read on after the heal until each has read, on every partition, the highest
        offset a plain producer had acknowledged there, or for READ_AFTER_HEAL_S where one has not (a
        record lost, a reader that tells only at its end, nothing to wait for). A producer that failed
        is not asked: its failure is what the run reports."""
        deadline = time.monotonic() + READ_AFTER_HEAL_S
        plain = [p for p in self.producers if not p.spec.transactional and p.failure is None]
        acked = acknowledged_ends([self._sends_of(p) for p in plain], self.topic.name)
        while time.monotonic() < deadline:
            if acked and self.consumers and all(read_to(c.highest_read(), acked) for c in self.consumers):
                return
            time.sleep(READ_CHECK_S)

    def _write_coordinator_log(self, path: Path) -> list[dict]:
        """logs/group-coordinator.log; a tool that could not read a group's commits is an event. The
        coordinator's record as offsets.parquet rows: the "written" rows of the groups whose library
        reports its commits, and the "live" rows of those whose library reports none
        (Group.reports_commits), for which the coordinator's record is the only one."""
        read = coordinator_log.dump(self.cluster, [g.spec.group_id for g in self.groups])
        path.write_text(read.text)
        unreported = [g.spec for g in self.groups if not g.reports_commits]
        for e in read.failures:
            self.events.write(ToolFailed(ts_ms=now_ms(), tool=e.tool, node=e.node,
                                         error=str(e)[:800], lacks="the group coordinator's own record of the "
                                         "groups' commits (logs/group-coordinator.log): offset_regression is judged "
                                         "from the members' acknowledgements alone, with no broker-side check, and "
                                         "coordinator_regression not at all"
                                         + (f", and groups {', '.join(g.name for g in unreported)} have none"
                                            if unreported else "")))
        entries = coordinator_log.parse(read.text)
        as_rows = {True: coordinator_log.written_offsets, False: coordinator_log.live_offsets}
        return [r for g in self.groups
                for r in as_named(as_rows[g.reports_commits](entries, g.spec.group_id), g.spec.name)]

    def _isr_not_restored(self, topic: str, why: Exception) -> IsrNotRestored:
        """The topic's partitions whose ISR is short of their replicas, as the cluster answers now."""
        try:
            short = [p for p in self.cluster.describe(timeout_s=5).partitions
                     if p.topic == topic and set(p.isr) != set(p.replicas)]
        except Exception:  # the record still says that the wait gave up, and why
            short = []
        return IsrNotRestored(ts_ms=now_ms(), topic=topic, waited_s=self.isr_wait_s, why=str(why)[:500], partitions=[
            PartitionSample(partition=p.partition, leader=p.leader, replicas=p.replicas, isr=p.isr) for p in short])

    def abort(self) -> None:
        """Stop every thread without reading anything back (a run that failed or a test that ended)."""
        for ev in (self._stop_producers, self._stop_consumers, self.sampler.stop_event):
            ev.set()
        for g in [*self.groups, *self.share_groups]:
            for m in g.members:
                m.kill()
        if self.sampler.is_alive():  # its last sample written before the run's events.jsonl is closed
            self.sampler.join(timeout=5)

    def _final_read(self) -> tuple[list[dict], list[dict], list[tuple[list[dict], list[dict], list]]]:
        """Every partition read from offset 0, the groups' offsets (the copier's and each group's,
        live and final) and each group's history (consumed rows, live commits, events; its events
        written)."""
        c, topic = self.cluster, self.topic
        with self.phases.timed("final_read"):
            final = [r for name in self.topics for r in self.reader.final_read(c, name, topic.partitions)]
            self.log_starts = {name: c.log_start_offsets(name, topic.partitions) for name in self.topics}
            offsets = []
            if self.copier is not None:
                spec = self.copier.spec
                offsets = as_named(self.copier.offsets + self.reader.group_final_offsets(
                    c, spec.group_id, self.copier.input), spec.group)
            grouped = [g.history() for g in self.groups]
            offsets += [r for g, (_, live, _) in zip(self.groups, grouped, strict=True)
                        for r in [*live, *as_named(self.reader.group_final_offsets(c, g.spec.group_id, topic.name),
                                                g.spec.name)]]
            for _, _, events in grouped:
                for e in events:
                    self.events.write(e)
        return final, offsets, grouped

    def _read_replicas(self) -> tuple[list[dict], dict[int, dict]]:
        """Every replica's log and every broker's checkpoints, from the brokers' own files."""
        c = self.cluster
        with self.phases.timed("replica_logs"):
            if c.settings.faultable_disks:  # a broker Kafka halted for its disks since the heal: started again
                c.wait_ready(120)
            return read_replicas(c, self.topics, self.topic.name)

    def read_back(self, d: Path) -> Recorded:
        """The final read, the replica logs and checkpoints (read from the brokers' files while the final
        read goes on: neither changes what the other reads), and every container's log, written to
        ``d`` with the live history."""
        c = self.cluster
        self.phases.together("final_read", "replica_logs")
        with ThreadPoolExecutor(max_workers=1) as side:
            from_files = side.submit(self._read_replicas)
            final, offsets, grouped = self._final_read()
            replica_rows, checkpoints = from_files.result()
        with self.phases.timed("container_logs"):
            c.write_logs(d / "logs")
            if self.groups:  # the coordinator's own record of the groups' commits
                offsets += self._write_coordinator_log(d / "logs" / coordinator_log.FILE)
        produced = self._produced()
        live = [r for t in self.consumers for r in t.rows]
        if self.copier is not None:  # a process copier knew its group by its id on the cluster
            live += as_named(self.copier.consumed, self.copier.spec.group)
        live += [r for consumed, _, _ in grouped for r in consumed]
        v2 = self.v2
        history.write_table(d / history.PRODUCED, produced, history.PRODUCED_V2_SCHEMA if v2 else
                            history.PRODUCED_SCHEMA)
        history.write_table(d / history.CONSUMED, live + final, history.CONSUMED_V2_SCHEMA if v2 else
                            history.CONSUMED_SCHEMA)
        history.write_table(d / history.REPLICAS, replica_rows, REPLICAS_WITH_EPOCH)
        txns = [row for t in [*self.producers, *([self.copier] if self.copier is not None else [])] for row in t.txns()]
        if txns:
            history.write_table(d / history.TXNS, txns, history.TXNS_SCHEMA)
        if self.copier is not None or self.groups:
            history.write_table(d / history.OFFSETS, offsets, history.OFFSETS_WRITTEN_SCHEMA)
        if self.share_groups:
            shared = [sg.history() for sg in self.share_groups]
            history.write_table(d / history.DELIVERIES, [r for rows, _ in shared for r in rows],
                                history.DELIVERIES_SCHEMA)
            history.write_table(d / history.SHARE_ACKS, [r for _, rows in shared for r in rows],
                                history.SHARE_ACKS_SCHEMA)
        history.write_json_atomic(d / history.CHECKPOINTS_JSON, {str(k): v for k, v in checkpoints.items()})
        return Recorded(len(produced["value"]), produced["status"].count("ok"), len(live), len(final),
                        len(replica_rows), self.start_ms, self.end_ms)

    def _sends_of(self, p: ProducerClient) -> dict[str, list]:
        """A stopped producer's columns, made once (the read after the heal and the tables both ask)."""
        if p.pname not in self._sends:
            self._sends[p.pname] = p.columns()
        return self._sends[p.pname]

    def _produced(self) -> dict[str, list]:
        """Every producer's sends (the copier's too) as produced.parquet's columns, v2 ones included."""
        produced: dict[str, list] = {f.name: [] for f in history.PRODUCED_V2_SCHEMA}
        for p in self.producers:
            cols = self._sends_of(p)
            n = len(cols["value"])
            for k in produced:
                produced[k] += cols.get(k, [None] * n)
        if self.copier is not None:
            for k in produced:
                produced[k] += [r[k] for r in self.copier.sends()]
        return produced

    def client(self, name: str) -> ProducerClient | CopierClient:
        """A producer instance or the copier by name, for client faults and workload steps."""
        if self.copier is not None and self.copier.spec.name == name:
            return self.copier
        for p in self.producers:
            if p.pname == name:
                return p
        raise ValueError(f"no producer or copier named {name!r}")

    def acked(self, producer: str = "") -> int:
        """Acknowledged records so far, of one producer instance ("" = every producer): what an
        ``acked`` trigger counts."""
        return sum(p.acked() for p in self.producers if not producer or p.pname == producer)

    def member(self, name: str) -> GroupMember | None:
        """A group member by name, for faults on its process; None if no group has it."""
        return next((m for g in [*self.groups, *self.share_groups] for m in g.members if m.name == name), None)

    def load(self) -> list[dict]:
        """Per producer (a quiet one takes steps, not a rate): the rate its scenario asked for and the
        rate it reached over the workload, in records handed to the client and acknowledged per
        second, and for a transactional one transactions begun and committed per second. ``short``
        marks a producer that sent less than SHORT_OF of what it was asked: the run tested less load
        than its scenario names."""
        secs = max(0.001, (self.end_ms - self.start_ms) / 1000)
        rows = []
        for p in self.producers:
            if p.spec.quiet:
                continue
            row = {"producer": p.pname, "asked_per_s": p.spec.rate, "sent_per_s": round(p.sent / secs, 1),
                   "acked_per_s": round(p.acked() / secs, 1)}
            if p.spec.transactional:
                done = [t for t in p.txns() if t["outcome"] == "committed"]
                cycle = sorted(t["end_ts_ms"] - t["begin_ts_ms"] for t in done)
                row |= {"asked_txns_per_s": round(p.spec.rate / p.spec.txn_records, 2),
                        "txns_per_s": round(len(p.txns()) / secs, 2),
                        "committed_txns_per_s": round(len(done) / secs, 2),
                        "txn_ms_median": cycle[len(cycle) // 2] if cycle else None}
            row["short"] = p.spec.rate < UNLIMITED_RATE and p.sent < SHORT_OF * p.spec.rate * secs
            rows.append(row)
        return rows

    def run_info(self) -> dict:
        """run.json's keys that describe the workload: topics, producers, consumers, groups, copiers."""
        t = self.topic
        info = {
            "topics": [{"name": name, "partitions": t.partitions, "replication_factor": t.replication_factor,
                        "config": t.topic_config(),
                        **({"log_start_offsets": {str(p): o for p, o in self.log_starts[name].items()}}
                           if name in self.log_starts else {})} for name in self.topics],
            "producers": [{"name": p.pname, "topic": t.name,
                           **p.spec.model_dump(exclude={"name", "count", "client", "client_version"}),
                           "client": self.client_of(p.spec)} for p in self.producers],
            "consumers": {**self.consumer_spec.model_dump(exclude={"client", "client_version"}),
                          "client": self.client_of(self.consumer_spec)},
            # A table that names no library has the scenario's: the run's client; every library in use: clients.
            "client": self.client_of(ProducerSpec()),
            "clients": list({json.dumps(c, sort_keys=True): c for c in self._clients()}.values()),
        }
        if self.v2:
            info["contract"] = "v2"
        if self.groups:
            info["groups"] = [{**g.spec.settings(), "id": g.spec.group_id, "topics": [t.name],
                               "client": self.client_of(g.spec)} for g in self.groups]
        if self.share_groups:
            info["share_groups"] = [{**sg.settings(), "id": sg.spec.group_id, "client": self.client_of(sg.spec)}
                                    for sg in self.share_groups]
        if self.copier_spec is not None:
            c = self.copier_spec
            info["producers"].append({"name": c.name, "topic": self.output_topic, "acks": "all", "idempotence": True,
                                      "transactional": True, "client": self.client_of(c)})
            info["copiers"] = [{"producer": c.name, "group": c.group, "input_topics": [t.name],
                                "output_topics": [self.output_topic],
                                **c.model_dump(exclude={"name", "group", "client", "client_version"}),
                                "client": self.client_of(c)}]
        return info
