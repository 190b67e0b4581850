"""A consumer group member that commits asynchronously while its group coordinator fails, and a
check, from the coordinator's own __consumer_offsets log, that the group's committed offset never
moves back. Needs only confluent-kafka (librdkafka) and Docker; see README.md beside this file.

One run: a fresh topic (one partition, on the broker that is not the group coordinator, so that
reading goes on through the fault) and group; a producer writes RATE records/s; one member reads
and calls ``commit(asynchronous=True)`` every COMMIT_EVERY records; after FAULT_AT seconds the
fault named on the command line hits the coordinator's broker and is healed HOLD seconds later;
the workload goes on to DURATION seconds. Then every OffsetCommit
record the coordinator wrote for the group is read back from __consumer_offsets, in log order. A
committed offset lower than the one written before it, with no rebalance between (one member, one
generation), is the regression. Exit 1 if one is seen, 0 if not, 2 if the run could not be made.

librdkafka's own debug log (``debug=cgrp,protocol,broker``) goes, unfiltered, to the file named by
--client-log.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import struct
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, NewTopic

RATE = 200  # records per second
COMMIT_EVERY = 10  # records between asynchronous commits


def docker(*args: str) -> None:
    subprocess.run(["docker", *args], check=True, capture_output=True)


def iptables(flag: str, port: int, *target: str) -> None:
    """Insert (-I) or delete (-D) a rule for every packet the host sends on a connection to the
    broker's published port."""
    subprocess.run(["iptables", flag, "OUTPUT", "-p", "tcp", "--dport", str(port), "-j", *target], check=True)


RESET = ("REJECT", "--reject-with", "tcp-reset")


def abort_connections(port: int) -> None:
    """Abort the host's open connections to the port (what a NAT or load balancer that forgot them
    does: the client's next read fails), then let packets through again."""
    subprocess.run(["ss", "-K", "dst", "127.0.0.1", "dport", "=", str(port)], check=True, capture_output=True)
    iptables("-D", port, "DROP")

# Each fault on the coordinator's broker (container c, published port p): what makes it, and what
# heals it.
# - reset: the client's connections to it are reset and new ones refused, the broker running (what
#   a load balancer, a proxy or a firewall that rejects does);
# - drop: every packet to it dropped, connections left open (a network partition);
# - drop-abort: the same, and at the heal the open connections are aborted on the client's side;
# - kill: its process killed (SIGKILL), started again at the heal;
# - restart: stopped cleanly (SIGTERM), started again at the heal;
# - freeze: its processes stopped (cgroup freezer), thawed at the heal.
FAULTS = {
    "none": (lambda c, p: None, lambda c, p: None),
    "reset": (lambda c, p: iptables("-I", p, *RESET), lambda c, p: iptables("-D", p, *RESET)),
    "drop": (lambda c, p: iptables("-I", p, "DROP"), lambda c, p: iptables("-D", p, "DROP")),
    "drop-abort": (lambda c, p: iptables("-I", p, "DROP"), lambda c, p: abort_connections(p)),
    "kill": (lambda c, p: docker("kill", "-s", "KILL", c), lambda c, p: docker("start", c)),
    "restart": (lambda c, p: docker("stop", "-t", "10", c), lambda c, p: docker("start", c)),
    "freeze": (lambda c, p: docker("pause", c), lambda c, p: docker("unpause", c)),
}


def produce(bootstrap: str, topic: str, seconds: float, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    n, t0 = 0, time.monotonic()
    while not stop.is_set() and time.monotonic() - t0 < seconds:
        p.produce(topic, value=str(n).encode())
        n += 1
        p.poll(0)
        time.sleep(max(0.0, t0 + n / RATE - time.monotonic()))
    p.flush(10)


def consume(bootstrap: str, topic: str, group: str, protocol: str, seconds: float,
            acked: list[tuple[float, int, str]]) -> int:
    """Read and commit asynchronously; return how many commits were called. Each commit's outcome,
    as its callback reports it, goes to ``acked`` (time, offset, error)."""

    def on_commit(err, partitions):
        for tp in partitions:
            acked.append((time.time(), tp.offset, str(err) if err else ""))

    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "on_commit": on_commit, "debug": "cgrp,protocol,broker"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    c.subscribe([topic])
    calls, since, t0 = 0, 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        m = c.poll(0.1)
        if m is None or m.error():
            continue
        since += 1
        if since >= COMMIT_EVERY:
            c.commit(asynchronous=True)
            calls, since = calls + 1, 0
    c.close()
    return calls


def _string(buf: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, at)
    return buf[at + 2:at + 2 + n].decode(), at + 2 + n


def offset_commits(bootstrap: str, group: str, topic: str) -> list[tuple[int, int]]:
    """(log offset, committed offset) of every OffsetCommit record the coordinator wrote for the
    group's partition 0, in log order, read from every partition of __consumer_offsets. The record
    format is Kafka's (key version 0 or 1: group, topic, partition; value: version, then offset)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    meta = c.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"]
    parts = [TopicPartition("__consumer_offsets", p, 0) for p in meta.partitions]
    c.assign(parts)
    out, done = [], set()
    deadline = time.monotonic() + 30
    while len(done) < len(parts) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                done.add(m.partition())
            continue
        key, value = m.key(), m.value()
        (kv,) = struct.unpack_from(">h", key, 0)
        if kv not in (0, 1) or value is None:
            continue
        g, at = _string(key, 2)
        t, at = _string(key, at)
        (p,) = struct.unpack_from(">i", key, at)
        if g == group and t == topic and p == 0:
            out.append((m.offset(), struct.unpack_from(">q", value, 2)[0]))
    c.close()
    return out


def coordinator(bootstrap: str) -> int:
    """The broker that coordinates every group: the leader of __consumer_offsets' one partition,
    which the first group lookup creates."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "f1-probe"})
    with contextlib.suppress(KafkaException):  # the lookup is what creates the topic; its answer does not matter
        probe.committed([TopicPartition("f1-probe", 0)], timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topics = probe.list_topics("__consumer_offsets", timeout=10).topics
        parts = topics["__consumer_offsets"].partitions if "__consumer_offsets" in topics else {}
        if 0 in parts and parts[0].leader >= 0:
            probe.close()
            return parts[0].leader
        time.sleep(0.2)
    raise SystemExit("__consumer_offsets has no leader after 30 s")


def commit_requests(container: str, group: str, since: float) -> list[dict]:
    """The group's OffsetCommit requests as the coordinator completed them, in its order, from its
    request log (kafka.request.logger at DEBUG): when, on which connection, the client's
    correlation id, and the offset each carried."""
    logs = subprocess.run(["docker", "logs", "--since", f"{since:.3f}", container], capture_output=True,
                          text=True).stdout
    out = []
    for line in logs.splitlines():
        if '"OFFSET_COMMIT"' not in line or f'"groupId":"{group}"' not in line:
            continue
        body = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
        offsets = [q["committedOffset"] for tp in body["request"]["topics"] for q in tp["partitions"]]
        errors = [q["errorCode"] for tp in body["response"]["topics"] for q in tp["partitions"]]
        out.append({"at": line[1:24], "connection": body["connection"],
                    "correlation_id": body["requestHeader"]["correlationId"], "offsets": offsets, "errors": errors})
    return out


def client_lines(path: str | None, correlation_ids: set[int]) -> list[str]:
    """Every line of librdkafka's log on these OffsetCommit requests and on every request it retried
    (its ``Retrying ... prev CorrId N`` line and the ``Sent ... CorrId N`` it retries), whole and in
    order: a retried request's first send may never have reached the coordinator."""
    if not path:
        return []
    with open(path, errors="replace") as f:
        lines = [line.rstrip("\n") for line in f if "OffsetCommit" in line]
    retry = re.compile(r"Retrying OffsetCommitRequest .*prev CorrId (\d+)\)")
    retried = {int(m.group(1)) for m in map(retry.search, lines) if m}
    wanted = correlation_ids | retried
    return [line for line in lines
            if "Retrying OffsetCommitRequest" in line
            or any(m and int(m.group(1)) in wanted for m in [re.search(r"CorrId (\d+)[,)]", line)])]


def regressions(commits: list[tuple[int, int]]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Adjacent pairs of the coordinator's writes whose later committed offset is lower."""
    return [(a, b) for a, b in itertools.pairwise(commits) if b[1] < a[1]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:19092,127.0.0.1:19093")
    ap.add_argument("--brokers", default="2,3", help="the brokers' node ids (container f1-kafka-ID, port 1909ID)")
    ap.add_argument("--fault", choices=sorted(FAULTS), default="reset")
    ap.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    ap.add_argument("--fault-at", type=float, default=3.0)
    ap.add_argument("--hold", type=float, default=1.6, help="seconds between the fault and its heal")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--client-log", default=None, help="where librdkafka's debug log goes (default: stderr)")
    a = ap.parse_args()
    if a.client_log:
        sys.stderr.flush()
        log = open(a.client_log, "w")  # noqa: SIM115 - librdkafka writes to fd 2 for the whole run
        import os
        os.dup2(log.fileno(), 2)
    coord = coordinator(a.bootstrap)
    other = next(b for b in map(int, a.brokers.split(",")) if b != coord)
    container, port = f"f1-kafka-{coord}", 19090 + coord
    run = uuid.uuid4().hex[:8]
    topic, group = f"f1-{run}", f"g-{run}"
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[other]])])[topic].result(30)
    stop, acked = threading.Event(), []
    producer = threading.Thread(target=produce, args=(a.bootstrap, topic, a.duration, stop))
    producer.start()
    fault, heal = FAULTS[a.fault]

    def nemesis() -> None:
        time.sleep(a.fault_at)
        print(f"{time.time():.3f} fault {a.fault} on {container} (broker {coord}, the coordinator)", flush=True)
        fault(container, port)
        time.sleep(a.hold)
        heal(container, port)
        print(f"{time.time():.3f} healed {a.fault}", flush=True, file=sys.stdout)

    started = time.time()
    n = threading.Thread(target=nemesis)
    n.start()
    calls = consume(a.bootstrap, topic, group, a.protocol, a.duration + 5, acked)
    n.join()
    stop.set()
    producer.join()
    commits = offset_commits(a.bootstrap, group, topic)
    back = regressions(commits)
    failed = sum(1 for _, _, e in acked if e)
    summary = {"librdkafka": libversion()[0], "fault": a.fault, "protocol": a.protocol,
               "group": group, "topic": topic, "commit_calls": calls,
               "callbacks": len(acked), "callbacks_failed": failed, "coordinator_writes": len(commits),
               "regressions": [{"from": f, "to": t, "log_offsets": [lf, lt]} for (lf, f), (lt, t) in back],
               # what the group's next member starts from, against the furthest the application committed
               "final_committed": commits[-1][1] if commits else None,
               "highest_committed": max((o for _, o in commits), default=None),
               "acked_order": [o for _, o, e in acked if not e]}
    print(json.dumps(summary), flush=True)
    if back:
        requests = commit_requests(container, group, started - 5)
        print("the coordinator's request log, OffsetCommit of this group in the order it completed them:")
        for r in requests:
            print(f"  {r['at']} {r['connection']} CorrId {r['correlation_id']} offsets {r['offsets']} "
                  f"errors {r['errors']}")
        print("librdkafka's lines on those requests:")
        sys.stderr.flush()
        for line in client_lines(a.client_log, {r["correlation_id"] for r in requests}):
            print("  " + line)
    said = "; ".join(f"{f} -> {t} at log offsets {lf} -> {lt}" for (lf, f), (lt, t) in back)
    tail = (f"({calls} commit calls, {failed} failed; final committed offset {summary['final_committed']} "
            f"of {summary['highest_committed']})")
    print(f"REGRESSION: the committed offset of {topic}[0] moved back: {said}" if back else
          f"no regression: {len(commits)} commits written in order", tail)
    return 1 if back else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a run that could not be made is not a run without the regression
        print(f"setup failed: {e!r}", flush=True)
        sys.exit(2)
