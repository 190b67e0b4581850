"""Faults on a live cluster, on a planned schedule, each logged with its start and end.

The nemesis resolves a planned target ("leader of partition 0", "rack:a") against the cluster
as it is when the fault fires, applies the fault, and heals it after its duration. Every fault
becomes one ``{"type": "fault", ...}`` line in events.jsonl with start_ms, end_ms and the brokers
and links it touched; a state sampler adds leader/ISR/controller lines at least every 500 ms.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster import KafkaCluster
from harness.cluster.kafka_cluster import BANDWIDTH_TOXIC, CUT_TOXIC, LATENCY_TOXIC
from harness.schedule import PlannedFault
from harness.workload import now_ms

LOG = logging.getLogger("kchaos.nemesis")
# Which toxics a network fault adds; with its tag (Applied.tag), its heal removes only its own.
TOXIC_PREFIX = {"latency": LATENCY_TOXIC, "slow_fetch": LATENCY_TOXIC, "bandwidth": BANDWIDTH_TOXIC,
                **dict.fromkeys(("isolate", "cut_replication", "cut_fetch", "cut_coordination", "cut_client",
                                 "one_way"), CUT_TOXIC)}
_TAGS = itertools.count(1)  # process-wide: the pytest plugin makes a Nemesis per fault


class EventLog:
    """Append-only JSON lines, safe to share between threads."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._f = open(self.path, "a")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()

    def write(self, event: dict) -> None:
        line = json.dumps(event, default=str)
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


@dataclass
class Applied:
    fault: PlannedFault
    brokers: list[int]
    links: list[str] = field(default_factory=list)
    start_ms: int = 0
    detail: dict = field(default_factory=dict)
    tag: str = ""  # names this fault's toxics apart from an overlapping fault's on the same link


class Nemesis:
    def __init__(self, cluster: KafkaCluster, topic: str, events: EventLog):
        self.c = cluster
        self.topic = topic
        self.events = events
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._active: list[Applied] = []
        self.error: BaseException | None = None

    # ------------------------------------------------------------ targets
    def resolve(self, f: PlannedFault) -> list[int]:
        t = f.target
        ids = self.c.settings.broker_ids
        if t.startswith("broker:"):
            return [int(t[7:])]
        if t.startswith("rack:"):
            rack = t[5:]
            return [b for b in ids if self.c.settings.rack_of(b) == rack]
        st = self.c.describe(self.topic, timeout_s=5)
        if t == "controller":
            if st.controller in ids:
                return [st.controller]
            raise ValueError("KRaft: the controller is not a broker; aim network faults at brokers instead")
        p = st.partition(self.topic, f.partition)
        if t == "leader":
            if p.leader < 0:
                raise ValueError(f"partition {f.partition} has no leader")
            return [p.leader]
        # Followers in AR order, ISR members first: "follower:2" is the second of them.
        followers = [r for r in p.replicas if r != p.leader and r in p.isr] + \
                    [r for r in p.replicas if r != p.leader and r not in p.isr]
        if t == "followers":
            return followers
        k = 1 if t == "follower" else int(t.split(":", 1)[1]) if t.startswith("follower:") else 0
        if k:
            if k > len(followers):
                raise ValueError(f"partition {f.partition} has {len(followers)} followers, no follower {k}")
            return [followers[k - 1]]
        raise ValueError(f"unknown target {t}")

    # ------------------------------------------------------------ apply / heal
    def _links(self, kind: str, b: int, leader: int) -> list[str]:
        topo = self.c.topo
        if kind in ("cut_fetch", "slow_fetch"):
            return [topo.repl(b, leader)] if leader > 0 and leader != b else []
        return {
            "isolate": topo.isolation_links(b),
            "cut_replication": topo.replication_links(b),
            "cut_coordination": [topo.coordination(b)],
            "cut_client": [topo.client(b)],
            "latency": topo.isolation_links(b),
            "bandwidth": topo.isolation_links(b),
        }.get(kind, [])

    def apply(self, f: PlannedFault) -> Applied:
        """Apply a fault; one that fails halfway takes back the toxics it added before raising."""
        brokers = self.resolve(f)
        st = self.c.describe(self.topic, timeout_s=5)
        a = Applied(f, brokers, start_ms=now_ms(), tag=f"f{next(_TAGS)}", detail={
            "leader_before": st.partition(self.topic, f.partition).leader, "controller_before": st.controller})
        try:
            self._apply(a)
        except Exception:
            if a.links:
                try:
                    self.c.restore(sorted(set(a.links)), only=TOXIC_PREFIX.get(f.kind), tag=a.tag)
                except Exception as e:  # the fault's own error is the one to report
                    LOG.warning("could not take back the toxics of %s %s: %s", f.kind, f.target, e)
            raise
        self.events.write({"type": "fault_start", "kind": f.kind, "target": f.target, "brokers": brokers,
                           "tag": a.tag, "ts_ms": a.start_ms, **a.detail})
        return a

    def _apply(self, a: Applied) -> None:
        f = a.fault
        for b in a.brokers:
            if f.kind == "kill":
                self.c.kill(b)
            elif f.kind == "power_loss":
                cuts = self.c.power_loss(b)
                a.detail.setdefault("power_loss", {})[str(b)] = [
                    {"file": c.path.rsplit("/", 2)[-2] + "/" + c.path.rsplit("/", 1)[-1], "kept_until": c.kept_until,
                     "removed": c.size < 0} for c in cuts]
            elif f.kind == "pause":
                self.c.pause(b)
            elif f.kind == "restart":
                self.c.stop_broker(b)
            elif f.kind == "one_way":
                for o in self.c.settings.broker_ids:
                    if o != b:
                        a.links += [link for link, _ in self.c.topo.one_way(b, o)]
                        self.c.cut_one_way(b, o, tag=a.tag)
            else:
                links = self._links(f.kind, b, a.detail["leader_before"])
                a.links += links  # before the toxics go on, so a failure halfway takes them back
                if f.kind in ("latency", "slow_fetch"):
                    self.c.latency(links, f.latency_ms, f.jitter_ms, tag=a.tag)
                elif f.kind == "bandwidth":
                    self.c.bandwidth(links, f.rate_kbps, tag=a.tag)
                else:
                    self.c.cut(links, tag=a.tag)

    def heal(self, a: Applied) -> None:
        f = a.fault
        for b in a.brokers:
            if f.kind in ("kill", "power_loss", "restart"):
                waited = self.c.start_broker(b)
                if waited >= 0.5:
                    a.detail.setdefault("restart_waited_s", {})[str(b)] = round(waited, 2)
            elif f.kind == "pause":
                self.c.resume(b)
        if a.links:
            self.c.restore(sorted(set(a.links)), only=TOXIC_PREFIX.get(f.kind), tag=a.tag)
        end = now_ms()
        self.events.write({
            "type": "fault", "name": f"{f.kind} {f.target}" + (f" (p{f.partition})" if f.target in (
                "leader", "follower", "followers") or f.target.startswith("follower:") else ""),
            "kind": f.kind, "target": f.target, "partition": f.partition, "brokers": a.brokers, "tag": a.tag,
            "links": sorted(set(a.links)), "start_ms": a.start_ms, "end_ms": end,
            "planned_at_s": f.at_s, "planned_duration_s": f.duration_s, **a.detail,
        })

    # ------------------------------------------------------------ schedule
    def start(self, plan: list[PlannedFault], t0: float) -> None:
        self._thread = threading.Thread(target=self._run, args=(plan, t0), name="nemesis", daemon=True)
        self._thread.start()

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
                    f = item  # type: ignore[assignment]
                    try:
                        a = self.apply(f)  # type: ignore[arg-type]
                    except Exception as e:  # a target that cannot be resolved now: log, go on
                        self.events.write({"type": "fault_skipped", "kind": f.kind, "target": f.target,  # type: ignore[attr-defined]
                                           "reason": str(e), "ts_ms": now_ms()})
                        continue
                    self._active.append(a)
                    agenda.append((at + f.duration_s, 0, "heal", a))  # type: ignore[attr-defined]
                else:
                    self._active.remove(item)  # type: ignore[arg-type]
                    self.heal(item)  # type: ignore[arg-type]
        except BaseException as e:
            self.error = e

    def stop(self) -> None:
        """Stop the schedule and heal whatever is still applied."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        for a in list(self._active):
            self._active.remove(a)
            self.heal(a)


class StateSampler(threading.Thread):
    """Leader, ISR and controller of every partition, at least every ``interval_s``."""

    def __init__(self, cluster: KafkaCluster, topic: str, events: EventLog, interval_s: float = 0.25):
        super().__init__(name="state-sampler", daemon=True)
        self.c, self.topic, self.events, self.interval = cluster, topic, events, interval_s
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            t = time.monotonic()
            try:
                st = self.c.describe(self.topic, timeout_s=0.2)
                self.events.write({
                    "type": "state", "ts_ms": now_ms(), "controller": st.controller, "brokers": st.brokers,
                    "partitions": [{"partition": p.partition, "leader": p.leader, "replicas": p.replicas,
                                    "isr": p.isr} for p in st.partitions],
                })
            except Exception as e:
                self.events.write({"type": "state", "ts_ms": now_ms(), "error": str(e)})
            self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - t)))
