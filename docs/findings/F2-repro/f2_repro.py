"""One run of F2 without kchaos, on the cluster reproduce.sh started: a topic of one partition
(replication factor 3, min.insync.replicas=2) led by a broker that is not the controller; an
acks=all producer; one follower stops fetching from the leader; in MODE lost-answer, the
controller hears nothing from ZooKeeper from just before the leader asks it to shrink the ISR
until its ZooKeeper client has given up on the connection; then, once the follower is back, the
controller's own replica stops fetching for a while (what a frozen ISR does to the next lagging
follower). The faults are iptables rules in the brokers' network namespaces (nsenter).

It prints what it saw as JSON lines, the last one the verdict, and exits 1 when the ISR froze (the
controller logged "bad ZK version" for the partition and, after every fault healed, ZooKeeper's ISR
and the brokers' disagree), 0 when not, 2 when the run could not be made.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import re
import subprocess
import sys
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = "127.0.0.1:19191,127.0.0.1:19192,127.0.0.1:19193"
ZK_PORT, INTERNAL_PORT = 2181, 9094
KAFKA_DEFAULT_LAG_MS, KAFKA_DEFAULT_ZK_SESSION_MS = 30_000, 18_000
# The leader's "Shrinking ISR" line: its time (to the millisecond) and the partition's topic
SHRINKING = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO "
                       r"\[Partition (\S+)-0 broker=\d+\] Shrinking ISR")


def say(**what) -> None:
    print(json.dumps(what), flush=True)


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout


def iptables(container: str, *rule: str) -> None:
    """An iptables command in ``container``'s network namespace, with the host's iptables."""
    pid = docker("inspect", "-f", "{{.State.Pid}}", container).strip()
    subprocess.run(["nsenter", "-t", pid, "-n", "iptables", *rule], check=True, capture_output=True)


def address(container: str) -> str:
    return docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", container).strip()


def znode(path: str) -> dict:
    """A znode's JSON, read with ZooKeeper's own shell in the ZooKeeper container."""
    text = docker("exec", "f2-zk", "java", "-cp", "/opt/kafka/libs/*", "org.apache.zookeeper.ZooKeeperMain",
                  "-server", f"localhost:{ZK_PORT}", "get", path)
    line = next(x for x in text.splitlines() if x.startswith("{"))
    return json.loads(line)


def broker_setting(broker: int, name: str, default: int) -> int:
    """A broker's setting as its startup log printed it (KafkaConfig values)."""
    m = re.search(rf"\t{re.escape(name)} = (\d+)", docker("logs", f"f2-kafka-{broker}"))
    return int(m.group(1)) if m else default


def shrink_times(leader: int, topic: str | None = None) -> list[float]:
    """When the leader logged "Shrinking ISR" (of ``topic``'s partition 0, or any partition), as Unix
    times: its ISR checks run every replica.lag.time.max.ms / 2 at a fixed rate from its start, so one
    such line gives the phase of every later check."""
    marks = []
    for line in docker("logs", f"f2-kafka-{leader}").splitlines():
        m = SHRINKING.match(line)
        if m and (topic is None or m.group(3) == topic):
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.UTC)
            marks.append(t.timestamp() + int(m.group(2)) / 1000)
    return marks


def check_phase(admin: AdminClient, leader: int, follower: int, controller: int, lag_s: float,
                fetch_cut: list[str]) -> float:
    """The time of one of the leader's ISR checks: from a shrink it logged before, or else from a
    calibration topic whose follower is cut until the leader shrinks its ISR."""
    seen = shrink_times(leader)
    if seen:
        return seen[-1]
    topic = "f2-calibration"
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=-1,
                                  replica_assignment=[[leader, follower, controller]])])[topic].result(30)
    wait_for(lambda: len(metadata_isr(admin, topic)) == 3, 30)
    iptables(f"f2-kafka-{follower}", "-I", *fetch_cut)
    try:
        seen = wait_for(lambda: shrink_times(leader, topic), 1.5 * lag_s + 15, 0.5)
    finally:
        iptables(f"f2-kafka-{follower}", "-D", *fetch_cut)
    if not seen:
        raise RuntimeError(f"the leader never shrank {topic}'s ISR: no phase for its checks")
    wait_for(lambda: len(metadata_isr(admin, topic)) == 3, 60)
    return seen[-1]


def metadata_isr(admin: AdminClient, topic: str) -> list[int]:
    """The partition's ISR in the brokers' metadata: what the controller last sent them."""
    return sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].isrs)


class Acks:
    """An acks=all producer of ``rate`` records a second; the time of each acknowledgement."""

    def __init__(self, topic: str, rate: int = 200):
        self.topic, self.rate, self.acked, self.failed = topic, rate, [], 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.acked.append(time.monotonic())
        else:
            self.failed += 1

    def _run(self) -> None:
        p = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "enable.idempotence": False,
                      "linger.ms": 5, "message.timeout.ms": 300_000})
        n = 0
        while not self.stop.is_set():
            p.produce(self.topic, str(n).encode(), on_delivery=self._on_delivery)
            p.poll(0)
            n += 1
            time.sleep(1 / self.rate)
        p.flush(60)

    def longest_gap(self, start: float, end: float) -> tuple[float, float]:
        """The longest time without an acknowledgement between ``start`` and ``end``, and where it began
        (seconds since ``start``)."""
        times = [start, *[t for t in self.acked if start <= t <= end], end]
        gap, at = max((b - a, a) for a, b in itertools.pairwise(times))
        return round(gap, 1), round(at - start, 1)


def wait_for(what, timeout_s: float, step_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(step_s)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("lost-answer", "control", "none"), default="lost-answer")
    ap.add_argument("--topic", default="f2")
    a = ap.parse_args()
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    controller = znode("/controller")["brokerid"]
    leader, follower = [b for b in (1, 2, 3) if b != controller]
    lag_s = broker_setting(leader, "replica.lag.time.max.ms", KAFKA_DEFAULT_LAG_MS) / 1000
    session_s = broker_setting(controller, "zookeeper.session.timeout.ms", KAFKA_DEFAULT_ZK_SESSION_MS) / 1000
    zk, leader_ip = address("f2-zk"), address(f"f2-kafka-{leader}")
    fetch_cut = ["OUTPUT", "-p", "tcp", "-d", leader_ip, "--dport", str(INTERNAL_PORT), "-j", "DROP"]
    answers_cut = ["INPUT", "-p", "tcp", "-s", zk, "--sport", str(ZK_PORT), "-j", "DROP"]
    # The leader shrinks the ISR at its first check (every lag/2, at a fixed rate) after the follower
    # has lagged for lag. The follower's cut starts when that check falls 1 s after the lag is up,
    # so the shrink's time is known: the controller's ZooKeeper client gives up on a connection it
    # has heard nothing from for 2/3 of its session, and the answers are dropped from 0.5 s before
    # the lag is up, so the shrink is written 1.5 s into that window and its answer lost. The
    # control drops them for as long once ZooKeeper holds the shrink.
    period_s = lag_s / 2
    phase = check_phase(admin, leader, follower, controller, lag_s, fetch_cut)
    admin.create_topics([NewTopic(a.topic, num_partitions=1, replication_factor=-1,
                                  replica_assignment=[[leader, follower, controller]],
                                  config={"min.insync.replicas": "2"})])[a.topic].result(30)
    state = f"/brokers/topics/{a.topic}/partitions/0/state"
    if not wait_for(lambda: len(metadata_isr(admin, a.topic)) == 3, 30):
        say(error="the topic's ISR never had its three replicas")
        return 2
    say(controller=controller, leader=leader, follower=follower, replica_lag_time_max_s=lag_s,
        zookeeper_session_s=session_s, mode=a.mode)
    acks = Acks(a.topic)
    acks.thread.start()
    t0, since = time.monotonic(), time.time()
    wait_for(lambda: acks.acked, 20)
    earliest = time.time() + max(0.0, 4 - (time.monotonic() - t0))
    check = phase + period_s * math.ceil((earliest + lag_s + 1.0 - phase) / period_s)
    time.sleep(max(0.0, check - lag_s - 1.0 - time.time()))
    iptables(f"f2-kafka-{follower}", "-I", *fetch_cut)
    cut_at = time.monotonic()
    say(at_s=round(cut_at - t0, 1), fault=f"broker {follower} stops fetching from leader {leader}",
        leaders_check_expected_at_s=round(cut_at - t0 + lag_s + 1.0, 1))
    if a.mode == "lost-answer":
        time.sleep(max(0.0, cut_at + lag_s - 0.5 - time.monotonic()))
    elif a.mode == "control":
        wait_for(lambda: len(znode(state)["isr"]) == 2, 2 * lag_s, 0.5)
    if a.mode != "none":
        iptables(f"f2-kafka-{controller}", "-I", *answers_cut)
        say(at_s=round(time.monotonic() - t0, 1), fault=f"controller {controller} hears nothing from ZooKeeper")
        time.sleep(session_s * 2 / 3 + 2)
        iptables(f"f2-kafka-{controller}", "-D", *answers_cut)
        say(at_s=round(time.monotonic() - t0, 1), healed="ZooKeeper's answers")
    time.sleep(max(0.0, cut_at + 1.5 * lag_s + 15 - time.monotonic()))
    stalled = acks.longest_gap(cut_at, time.monotonic())
    shrunk = [round(t - since, 1) for t in shrink_times(leader, a.topic)]
    iptables(f"f2-kafka-{follower}", "-D", *fetch_cut)
    back_at = time.monotonic()
    say(at_s=round(back_at - t0, 1), healed=f"broker {follower} fetches again",
        longest_without_ack_s=stalled[0], from_s=round(stalled[1] + cut_at - t0, 1), leader_shrank_at_s=shrunk)
    # The next follower that lags: with the ISR frozen the leader cannot drop it, and acks=all
    # writes wait for it for as long as it lags.
    wait_for(lambda: len(metadata_isr(admin, a.topic)) == 3 and len(znode(state)["isr"]) >= 2, 60)
    time.sleep(10)
    iptables(f"f2-kafka-{controller}", "-I", *fetch_cut)
    second = time.monotonic()
    say(at_s=round(second - t0, 1), fault=f"broker {controller} (the controller's replica) stops fetching")
    time.sleep(1.5 * lag_s + 15)
    stalled2 = acks.longest_gap(second, time.monotonic())
    iptables(f"f2-kafka-{controller}", "-D", *fetch_cut)
    say(at_s=round(time.monotonic() - t0, 1), healed=f"broker {controller} fetches again",
        longest_without_ack_s=stalled2[0], from_s=round(stalled2[1] + second - t0, 1))
    time.sleep(20)
    acks.stop.set()
    acks.thread.join(90)
    refused = [x for x in docker("logs", "--since", f"{since:.3f}", f"f2-kafka-{controller}").splitlines()
               if "bad ZK version" in x and f" for partition {a.topic}-0" in x]
    in_zookeeper, in_metadata = sorted(znode(state)["isr"]), metadata_isr(admin, a.topic)
    frozen = bool(refused) and in_zookeeper != in_metadata
    say(controller_refused=refused[:3], isr_in_zookeeper=in_zookeeper, isr_in_metadata=in_metadata,
        acknowledged=len(acks.acked), failed=acks.failed)
    say(verdict="frozen" if frozen else "not frozen", first_stall_s=stalled[0], second_stall_s=stalled2[0],
        replica_lag_time_max_s=lag_s)
    return 1 if frozen else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the run could not be made: never read as a frozen ISR (exit 1)
        say(error=f"{type(e).__name__}: {e}")
        sys.exit(2)
