"""Faults on a live cluster, on a planned schedule, each logged with its start and end.

The nemesis resolves a planned target ("leader of partition 0", "rack:a") against the cluster
as it is when the fault fires, applies the fault, and heals it after its duration. Every fault
becomes one ``{"type": "fault", ...}`` line in events.jsonl with start_ms, end_ms and the brokers
and links it touched; a state sampler adds leader/ISR/controller lines every 250 ms (a sample can
take longer when the brokers are slow to answer: at most a second apart under the test suite's load).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

from harness.cluster import KafkaCluster
from harness.cluster.broker_log import Truncation, TruncationFollower
from harness.faults import FAULTS, Applied, PlannedFault, Target
from harness.faults.registry import Action
from harness.faults.triggers import POLL_S, Observation, fired
from harness.history.events import (
    EventLog,
    Fault,
    FaultSkipped,
    FaultStart,
    State,
    TriggerFired,
    TriggerUnfired,
    now_ms,
)
from harness.run.coordinator_log import partition_for
from harness.scenario import transactional_id

LOG = logging.getLogger("kchaos.nemesis")
_TAGS = itertools.count(1)  # process-wide: the pytest plugin makes a Nemesis per fault
HEAL_RETRY_S = 60.0  # how long an operator's undo is asked again while the cluster does not answer it
HEAL_RETRY_PAUSE_S = 1.0
ABANDON_WAIT_S = 10.0  # what a run ending early waits for a fault being applied before its cluster goes


def txn_state_partition(transactional_id: str, partitions: int) -> int:
    """The partition of an internal topic a coordinator key maps to, as Kafka computes it for
    __transaction_state, __consumer_offsets and __share_group_state alike (coordinator_log.partition_for)."""
    return partition_for(transactional_id, partitions)


class Nemesis:
    def __init__(self, cluster: KafkaCluster, topic: str, events: EventLog,
                 clients: Callable[[str], object] | None = None, first_client: str = "",
                 members: Callable[[str], object | None] | None = None, first_group: str = "",
                 first_share_group: str = "",
                 acks: Callable[[str], int] | None = None,
                 txn_id: Callable[[str], str] = transactional_id, group_id: Callable[[str], str] = str):
        self.c = cluster
        self.topic = topic
        self.events = events
        self.clients = clients  # a client by name (Recording.client), for faults on the client itself
        self.first_client = first_client  # what "txn_coordinator" alone means
        self.members = members  # a group member by name, or None (Recording.member)
        self.first_group = first_group  # what "group_coordinator" alone means
        self.first_share_group = first_share_group  # what "share_coordinator" alone means
        self.txn_id = txn_id  # a transactional client's transactional.id, by its name
        self.group_id = group_id  # a group's group.id (a share group's too), by its name
        self.acks = acks  # acknowledged records of a producer ("" = all): what acked triggers count
        self.started: set[int] = set()  # numbers of the scenario's faults that have started
        self.ended: set[int] = set()
        self._lock = threading.Lock()  # _active, started, ended: the schedule and the triggers share them
        self._armed: list[PlannedFault] = []
        self._watermarks = None  # a consumer that asks partitions for their high watermark
        self._probe_lock = threading.Lock()  # the watermark consumer and the log follower, made once
        self._truncations: TruncationFollower | None = None  # the brokers' logs, followed once a trigger needs them
        self._watchers: list[threading.Thread] = []
        self._timers: list[threading.Timer] = []  # triggered faults' delays and heals: stop() waits for them
        self._stop = threading.Event()
        self._gone = threading.Event()  # abandon(): the cluster is about to go, an undo is not asked again
        self._thread: threading.Thread | None = None
        self._active: list[Applied] = []
        self.error: BaseException | None = None

    # ------------------------------------------------------------ targets
    def resolve(self, f: PlannedFault) -> list[int]:
        """The brokers ``f``'s target means now: a role is looked up in the cluster as it is."""
        t = f.target
        if t.role == "broker":
            return [t.number]
        if t.role == "rack":
            return [b for b in self.c.settings.broker_ids if self.c.settings.rack_of(b) == t.rack]
        if t.role == "txn_coordinator":
            return [self.coordinator("__transaction_state", self.txn_id(t.client or self.first_client))]
        if t.role == "group_coordinator":
            return [self.coordinator("__consumer_offsets", self.group_id(t.client or self.first_group))]
        if t.role == "share_coordinator":
            return [self.share_coordinator(self.group_id(t.client or self.first_share_group), f.partition)]
        if t.role == "client":  # its own links to every broker, or no broker at all (client_kill)
            return self.c.settings.broker_ids if FAULTS[f.kind].client_links else []
        if t.of_quorum:
            return self.quorum_nodes(t)
        st = self.c.describe(self.topic, timeout_s=5)
        p = st.partition(self.topic, f.partition)
        if t.role == "leader":
            if p.leader < 0:
                raise ValueError(f"partition {f.partition} has no leader")
            return [p.leader]
        # Followers in AR order, ISR members first: "follower:2" is the second of them.
        followers = [r for r in p.replicas if r != p.leader and r in p.isr] + \
                    [r for r in p.replicas if r != p.leader and r not in p.isr]
        if t.role == "followers":
            return followers
        if t.number > len(followers):
            raise ValueError(f"partition {f.partition} has {len(followers)} followers, no follower {t.number}")
        return [followers[t.number - 1]]

    def quorum_nodes(self, t: Target) -> list[int]:
        """Coordination targets: ``controller`` (ZooKeeper mode: the broker that is Kafka's controller;
        KRaft: the active controller), ``controller:K`` / ``zookeeper:K`` (that node), ``zookeeper``
        (the ensemble's leader), ``quorum_majority`` (enough voters to lose the majority: followers
        first, so the leader is left alone without it)."""
        topo = self.c.topo
        if t.number:
            return [self.c.settings.coordination_ids[t.number - 1]]
        if t.role in ("controller", "controller_zookeeper") and self.c.settings.mode == "zk":
            controller = self.c.describe(timeout_s=5).controller
            if controller < 0:
                raise ValueError("no broker is the controller now")
            return [controller] if t.role == "controller" else [self.c.zookeeper_server_of(controller)]
        q = self.c.quorum_state(timeout_s=1)
        if t.role != "quorum_majority":
            if q.leader < 0:
                raise ValueError("the quorum has no leader now")
            return [q.leader]
        voters = list(q.voters) or [n for n in topo.quorum][: self.c.settings.quorum_size]
        ordered = [n for n in voters if n != q.leader] + [n for n in voters if n == q.leader]
        return ordered[: len(voters) // 2 + 1]

    def share_coordinator(self, group: str, partition: int) -> int:
        """The share coordinator of ``group``'s share-partition of the fault's partition: the leader of
        the __share_group_state partition its key ("GROUP:TOPIC_ID:PARTITION") maps to, as Kafka's
        ShareCoordinatorService.partitionFor maps it (Java's String.hashCode, made non-negative)."""
        topic_id = self.c.topic_id(self.topic)
        return self.coordinator("__share_group_state", f"{group}:{topic_id}:{partition}")

    def coordinator(self, internal_topic: str, key: str) -> int:
        """The coordinator of a transactional id or a group now: the leader of the partition of
        ``internal_topic`` (__transaction_state, __consumer_offsets) that ``key`` maps to."""
        st = self.c.describe(internal_topic, timeout_s=5)
        parts = sorted(p.partition for p in st.partitions if p.topic == internal_topic)
        if not parts:
            raise ValueError(f"{internal_topic} does not exist yet (no transaction or group has begun)")
        p = st.partition(internal_topic, txn_state_partition(key, len(parts)))
        if p.leader < 0:
            raise ValueError(f"{internal_topic} partition {p.partition} (of {key}) has no leader")
        return p.leader

    # ------------------------------------------------------------ apply / heal
    def apply(self, f: PlannedFault, detail: dict | None = None) -> Applied:
        """Apply a fault; one that fails halfway takes back the toxics it added before raising. The fault
        counts as started (for a trigger on its start) once its target is resolved and before it acts:
        acting can take seconds (a clean stop of each follower in turn, longer while the leader is
        frozen), and a fault chained on another's start keeps its delay from that start."""
        brokers = self.resolve(f)
        st = self.c.describe(self.topic, timeout_s=5, quorum=True if f.target.of_quorum else None)
        a = Applied(f, brokers, start_ms=now_ms(), tag=f"f{next(_TAGS)}", topic=self.topic, detail={
            "leader_before": st.partition(self.topic, f.partition).leader, "controller_before": st.controller,
            **({"quorum_before": st.quorum.as_event()} if st.quorum is not None else {}), **(detail or {})})
        kind = FAULTS[f.kind]
        if f.stream != "both":
            a.detail["stream"] = f.stream
        if f.target.role == "txn_coordinator":
            a.detail["transactional_id"] = self.txn_id(f.target.client or self.first_client)
        if f.target.role in ("group_coordinator", "share_coordinator"):
            group = f.target.client or (self.first_group if f.target.role == "group_coordinator"
                                        else self.first_share_group)
            a.detail["group"] = group  # as the scenario names it, as the checker reads it
            if self.group_id(group) != group:
                a.detail["group_id"] = self.group_id(group)
        member = self.members(f.target.client) if self.members is not None and f.target.role == "client" else None
        self._mark(self.started, f)
        if member is not None and kind.on_member is not None:  # on the member's process, not its links
            a.brokers, a.member = [], member
            getattr(member, kind.on_member[0])()
            self.events.write(FaultStart(kind=f.kind, target=str(f.target), brokers=[], tag=a.tag, ts_ms=a.start_ms,
                                         **a.detail))
            return a
        try:
            if kind.on_client is not None:
                if self.clients is None or f.target.role != "client":
                    raise ValueError(f"{f.kind} needs a target client:NAME of this run's transactional clients")
                kind.on_client(self.clients(f.target.client), f)  # type: ignore[call-arg]
            for b in brokers:
                kind.apply(self.c, a, b)
        except Exception:
            if a.links:
                try:
                    self.c.restore(sorted(set(a.links)), only=kind.toxic, tag=a.tag)
                except Exception as e:  # the fault's own error is the one to report
                    LOG.warning("could not take back the toxics of %s %s: %s", f.kind, f.target, e)
            raise
        self.events.write(FaultStart(kind=f.kind, target=str(f.target), brokers=brokers, nodes=self.node_names(brokers),
                                     tag=a.tag, ts_ms=a.start_ms, **a.detail))
        return a

    def node_names(self, nodes: list[int]) -> list[str]:
        """Container names of the nodes a fault hit (kafka-2, controller-1, zookeeper-3)."""
        return [self.c.topo.node_key(n) for n in nodes]

    def _mark(self, which: set[int], f: PlannedFault) -> None:
        with self._lock:
            which.add(f.number)

    def heal(self, a: Applied) -> None:
        f = a.fault
        kind = FAULTS[f.kind]
        if a.member is not None:
            getattr(a.member, kind.on_member[1])()  # type: ignore[index]
        elif kind.off_client is not None and self.clients is not None:
            kind.off_client(self.clients(f.target.client), f)
        elif kind.heal is not None:
            for b in a.brokers:
                self._retried(kind.heal, a, b) if kind.heal_retried else kind.heal(self.c, a, b)
        if a.links:
            self.c.restore(sorted(set(a.links)), only=kind.toxic, tag=a.tag)
        end = now_ms()
        self.events.write(Fault(
            name=f"{f.kind} {f.target}" + (f" (p{f.partition})" if f.target.of_partition else ""),
            kind=f.kind, target=str(f.target), partition=f.partition, brokers=a.brokers,
            nodes=self.node_names(a.brokers), tag=a.tag, links=sorted(set(a.links)), start_ms=a.start_ms, end_ms=end,
            planned_at_s=f.at_s, planned_duration_s=f.duration_s, **a.detail))
        self._mark(self.ended, f)

    def _retried(self, undo: Action, a: Applied, b: int) -> None:
        """An operator's undo, asked again every HEAL_RETRY_PAUSE_S until it is answered; after
        HEAL_RETRY_S, or once the run is abandoned, its last error fails the run as any heal's does.
        Each refusal is kept in the fault's account (``heal_retries``)."""
        deadline = time.monotonic() + HEAL_RETRY_S
        while True:
            try:
                undo(self.c, a, b)
                return
            except Exception as e:
                if time.monotonic() >= deadline or self._gone.wait(HEAL_RETRY_PAUSE_S):
                    raise
                a.detail.setdefault("heal_retries", []).append(f"{now_ms()}: {str(e)[:200]}")

    # ------------------------------------------------------------ schedule
    def start(self, plan: list[PlannedFault], t0: float) -> None:
        timed = [f for f in plan if f.on is None]
        self._armed = [f for f in plan if f.on is not None]
        self._thread = threading.Thread(target=self._run, args=(timed, t0), name="nemesis", daemon=True)
        self._thread.start()
        # One watcher per trigger, so a slow observation of one (a high watermark asked of a broker
        # that does not answer) never delays another's.
        self._watchers = [threading.Thread(target=self._watch, args=(f, t0), name=f"trigger-{f.number}",
                                           daemon=True) for f in self._armed]
        for w in self._watchers:
            w.start()

    def _run(self, plan: list[PlannedFault], t0: float) -> None:
        # (time, order, action, item): heals before starts at the same instant
        agenda: list[tuple[float, int, str, object]] = [(f.at_s, 1, "start", f) for f in plan]
        try:
            while agenda and not self._stop.is_set():
                agenda.sort(key=lambda x: (x[0], x[1]))
                at, _, action, item = agenda.pop(0)
                wait = t0 + at - time.monotonic()
                if wait > 0 and self._stop.wait(wait):
                    break
                if action == "start":
                    a = self._start_fault(item)  # type: ignore[arg-type]
                    if a is not None:
                        agenda.append((at + item.duration_s, 0, "heal", a))  # type: ignore[attr-defined]
                elif FAULTS[item.fault.kind].heal_retried:  # type: ignore[attr-defined]
                    self._timer(0, lambda a=item: self.heal_active(a))  # its retries hold back no other heal
                else:
                    self.heal_active(item)  # type: ignore[arg-type]
        except BaseException as e:
            self.error = e

    def _start_fault(self, f: PlannedFault, detail: dict | None = None) -> Applied | None:
        """Apply a fault of the schedule; one whose target cannot be resolved now is logged and skipped."""
        try:
            a = self.apply(f, detail)
        except Exception as e:
            self.events.write(FaultSkipped(kind=f.kind, target=str(f.target), reason=str(e) or type(e).__name__,
                                           ts_ms=now_ms()))
            return None
        with self._lock:
            self._active.append(a)
        return a

    def heal_active(self, a: Applied) -> bool:
        """Heal ``a`` if it is still applied (stop() or another caller may have healed it); whether it was."""
        with self._lock:
            if a not in self._active:
                return False
            self._active.remove(a)
        self.heal(a)
        return True

    def applied(self) -> list[Applied]:
        """The faults applied and not yet healed, oldest first."""
        with self._lock:
            return list(self._active)

    # ------------------------------------------------------------ triggers
    def _watch(self, f: PlannedFault, t0: float) -> None:
        """Evaluate ``f``'s trigger each POLL_S from its ``at_s``; fire it when it holds (after its
        delay), and heal it ``duration_s`` after it started."""
        armed_at: Observation | None = None
        try:
            while not self._stop.wait(POLL_S):
                if time.monotonic() - t0 < f.at_s:
                    continue
                try:
                    now = self.observe(f)
                except Exception:  # a broker down or slow to answer: look again next poll
                    continue
                if armed_at is None:
                    armed_at = now
                    continue
                why = fired(f.on, now, armed_at)  # type: ignore[arg-type]
                if why is not None:
                    with self._lock:
                        self._armed.remove(f)
                    self._fire(f, why)
                    return
        except BaseException as e:
            self.error = e

    def _fire(self, f: PlannedFault, why: str) -> None:
        """Log what fired ``f``, then apply it after its delay and heal it after its duration."""
        seen_ms = now_ms()
        self.events.write(TriggerFired(fault=f.number, kind=f.kind, target=str(f.target), on=str(f.on), observed=why,
                                       ts_ms=seen_ms, delay_s=f.on.delay_s))  # type: ignore[union-attr]

        def go() -> None:
            if self._stop.is_set():  # its delay outlasted the schedule: the run is healing
                self.events.write(FaultSkipped(kind=f.kind, target=str(f.target), ts_ms=now_ms(),
                                               reason="the schedule ended during its trigger's delay"))
                return
            a = self._start_fault(f, {"trigger": str(f.on), "observed": why, "trigger_ms": seen_ms})
            if a is not None and self._stop.is_set():
                self.heal_active(a)  # stop() ran while it was being applied
            elif a is not None:
                self._timer(f.duration_s, lambda: self.heal_active(a))

        self._timer(f.on.delay_s, go)  # type: ignore[union-attr]

    def _timer(self, delay_s: float, action: Callable[[], object]) -> None:
        """``action`` after ``delay_s``, on a timer stop() cancels, or waits for if it is running. What it
        raises fails the run as the schedule's own errors do (``error``), not only a thread's traceback."""

        def act() -> None:
            try:
                action()
            except BaseException as e:
                if self.error is None:
                    self.error = e
                LOG.error("a triggered fault's step failed: %r", e)

        timer = threading.Timer(delay_s, act)
        timer.daemon = True
        with self._lock:
            self._timers.append(timer)
        timer.start()

    def observe(self, f: PlannedFault) -> Observation:
        """What a trigger of ``f`` looks at, now: only what its event needs is asked for."""
        t = f.on
        assert t is not None
        with self._lock:
            obs = Observation(started=frozenset(self.started), ended=frozenset(self.ended))
        if t.event == "acked" and self.acks is not None:
            obs.acked = self.acks(t.producer)
        part = f.partition if t.partition < 0 else t.partition
        if t.event in ("isr_shrink", "isr_grow", "leader_change"):
            p = self.c.describe(self.topic, timeout_s=1, quorum=False).partition(self.topic, part)
            obs.leader, obs.isr = p.leader, tuple(p.isr)
        if t.event == "hw":
            obs.hw = self.high_watermark(part)
        if t.event == "truncation":
            obs.truncations = tuple(
                f"broker {x.broker} truncated {x.topic}-{x.partition} to offset {x.offset}"
                for x in self.truncations() if x.topic == self.topic and x.partition == part
                and (not t.broker or x.broker == t.broker))
        return obs

    def truncations(self) -> list[Truncation]:
        """The truncations the brokers' logs have written since a trigger first asked."""
        with self._probe_lock:
            if self._truncations is None:
                self._truncations = self.c.follow_truncations()
        return self._truncations.seen()

    def high_watermark(self, partition: int) -> int:
        from confluent_kafka import Consumer, TopicPartition

        with self._probe_lock:  # one consumer, shared by the watchers of hw triggers
            if self._watermarks is None:
                self._watermarks = Consumer(self.c.client_config(**{"group.id": "kchaos-triggers"}), logger=LOG)
            _, high = self._watermarks.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=1,
                                                             cached=False)
        return high

    def abandon(self) -> None:
        """The run ends early (an interrupt, a failure) and its cluster is about to be removed: nothing
        of the schedule is applied or healed after this returns (a heal then would act on containers
        that are gone), and nothing is healed now. A fault being applied is waited for briefly."""
        self._stop.set()
        self._gone.set()
        with self._lock:
            timers, self._timers = self._timers, []
        for t in timers:
            t.cancel()
        for t in (self._thread, *self._watchers, *timers):
            if t is not None and t.is_alive():
                t.join(timeout=ABANDON_WAIT_S)

    def stop(self) -> None:
        """Stop the schedule and heal whatever is still applied; a trigger that never fired is logged."""
        self._stop.set()
        for t in (self._thread, *self._watchers):
            if t is not None:
                t.join(timeout=60)
        # Every fault still on is healed first, so an undo being asked again on a timer meets the
        # cluster healed; the undos still on are left for last.
        for a in self.applied():
            if not FAULTS[a.fault.kind].heal_retried:
                self.heal_active(a)
        # A triggered fault still in its delay is cancelled; one being applied (a clean stop takes
        # seconds) is waited for, and heals itself on seeing the stop: nothing it does outlives the run.
        while True:
            with self._lock:
                timers, self._timers = self._timers, []
            if not timers:
                break
            for t in timers:
                t.cancel()
                t.join(timeout=120)
        for f in self._armed:
            self.events.write(TriggerUnfired(fault=f.number, kind=f.kind, target=str(f.target), on=str(f.on),
                                             armed_at_s=f.at_s, ts_ms=now_ms()))
        with self._lock:
            active, self._active = list(self._active), []
        for a in active:
            self.heal(a)
        if self._watermarks is not None:
            self._watermarks.close()
        if self._truncations is not None:
            self._truncations.close()


class StateSampler(threading.Thread):
    """Leader, ISR and controller of every partition, and the coordination quorum (its leader, epoch,
    whether it has a majority, each node's lag), at least every ``interval_s``."""

    def __init__(self, cluster: KafkaCluster, topic: str, events: EventLog, interval_s: float = 0.25):
        super().__init__(name="state-sampler", daemon=True)
        self.c, self.topic, self.events, self.interval = cluster, topic, events, interval_s
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            t = time.monotonic()
            try:
                st = self.c.describe(self.topic, timeout_s=0.2, quorum=True)
                self.events.write(State(
                    ts_ms=now_ms(), controller=st.controller, brokers=st.brokers,
                    partitions=[{"partition": p.partition, "leader": p.leader, "replicas": p.replicas, "isr": p.isr}
                                for p in st.partitions],
                    **({"quorum": st.quorum.as_event()} if st.quorum is not None else {}),
                    **({"frozen": True} if st.frozen else {})))
            except Exception as e:  # brokers or ZooKeeper not answering: the quorum's own state still tells
                self.events.write(State(ts_ms=now_ms(), error=str(e), **self._quorum()))
            self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - t)))

    def _quorum(self) -> dict:
        """The quorum's own answer when the brokers' was not had. In KRaft mode the active controller
        is the quorum's leader, so the sample names it too: a failover is timed by the controllers,
        not by whether a busy broker answered a metadata request within the sample's 200 ms."""
        try:
            q = self.c.quorum_state(timeout_s=0.2)
        except Exception:
            return {}
        return {"quorum": q.as_event(), **({"controller": q.leader} if self.c.settings.mode == "kraft" else {})}
