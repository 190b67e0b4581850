"""kchaos F3: librdkafka's transactional producer reports a committed transaction's messages
delivered at the offsets of an aborted transaction's messages, and no log holds them.

Each round, against one Kafka broker reached through a proxy this script runs: a new topic of one
partition; a transactional producer (confluent-kafka, librdkafka inside) begins transaction A and
sends three messages to partition 0 while the proxy loses every answer to a Produce request for
--lose-s seconds (the request reaches the broker and is handled; its answer is dropped and the
connection closed, as a network that lost the answer leaves it). After waiting --wait-s for the
delivery reports, the producer aborts A (librdkafka purges what it still holds). It then begins
transaction B, sends three other messages to the same partition and commits. The round reads the
partition from offset 0, read_committed and read_uncommitted, and prints B's messages reported
delivered that the committed log does not hold, each with its reported offset and what that offset
holds. Exits 1 if any round showed one.

    python f3_repro.py BROKER LISTEN [--rounds 20] [--lose-s 1.5] [--wait-s 1.0] [--debug-log FILE]

BROKER is the broker's host:port; LISTEN the proxy's, which the broker must advertise.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import socket
import struct
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, NewTopic

PRODUCE = 0  # Kafka's api key of a Produce request


class AnswerLosingProxy:
    """A TCP proxy that follows Kafka's request frames (4-byte size, then api key, api version and
    correlation id) and, while armed, drops the answer to any Produce request and closes both sides."""

    def __init__(self, listen: tuple[str, int], broker: tuple[str, int]) -> None:
        self.broker = broker
        self.lose_until = 0.0
        self.lost = 0
        self.server = socket.create_server(listen, reuse_port=False)
        threading.Thread(target=self._accept, daemon=True).start()

    def lose_produce_answers(self, seconds: float) -> None:
        self.lose_until = time.monotonic() + seconds

    def _accept(self) -> None:
        while True:
            client, _ = self.server.accept()
            broker = socket.create_connection(self.broker)
            for s in (client, broker):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            apis: dict[int, int] = {}  # correlation id -> api key of the requests in flight
            threading.Thread(target=self._requests, args=(client, broker, apis), daemon=True).start()
            threading.Thread(target=self._answers, args=(broker, client, apis), daemon=True).start()

    def _requests(self, client: socket.socket, broker: socket.socket, apis: dict[int, int]) -> None:
        for frame in _frames(client):
            api, _version, corr = struct.unpack(">hhi", frame[4:12])
            apis[corr] = api
            if not _send(broker, frame):
                break
        _close(client, broker)

    def _answers(self, broker: socket.socket, client: socket.socket, apis: dict[int, int]) -> None:
        for frame in _frames(broker):
            (corr,) = struct.unpack(">i", frame[4:8])
            if apis.pop(corr, None) == PRODUCE and time.monotonic() < self.lose_until:
                self.lost += 1
                logging.getLogger("proxy").info("lost the answer to Produce request %d; closing", corr)
                break
            if not _send(client, frame):
                break
        _close(client, broker)


def _frames(s: socket.socket):
    buf = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            return
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
            n = 4 + struct.unpack(">i", buf[:4])[0]
            yield buf[:n]
            buf = buf[n:]


def _send(s: socket.socket, data: bytes) -> bool:
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def _close(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


def producer(bootstrap: str, debug_log: str | None) -> Producer:
    """A transactional producer with librdkafka's defaults but its transactional id (and a debug log
    of contexts eos, msg, topic, protocol and broker: epochs, sequences, purges, requests and
    disconnects)."""
    conf = {"bootstrap.servers": bootstrap, "transactional.id": f"f3-{uuid.uuid4().hex[:8]}", "linger.ms": 5}
    if debug_log:
        log = logging.getLogger("librdkafka")
        conf |= {"debug": "eos,msg,topic,protocol,broker", "logger": log}
    return Producer(conf)


def abort(p: Producer) -> None:
    """Abort the open transaction, again while librdkafka says the abort may be retried (a request
    still in flight when it timed out)."""
    for _ in range(5):
        try:
            p.abort_transaction(10)
            return
        except KafkaException as e:
            if not e.args[0].retriable():
                raise
    p.abort_transaction(10)


def read(bootstrap: str, topic: str, isolation: str) -> dict[int, str]:
    """Offset -> value of every record partition 0 of ``topic`` holds, read until quiet for 3 s."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, 0, 0)])
    held: dict[int, str] = {}
    quiet_until = time.monotonic() + 3
    while time.monotonic() < quiet_until:
        m = c.poll(0.3)
        if m is not None and m.error() is None:
            held[m.offset()] = m.value().decode()
            quiet_until = time.monotonic() + 3
    c.close()
    return held


def one_round(bootstrap: str, proxy: AnswerLosingProxy, lose_s: float, wait_s: float,
              debug_log: str | None) -> tuple[dict[str, int], list[tuple[str, int, str]]]:
    """B's messages reported delivered (value -> offset), and those the committed log lacks, each with
    its reported offset and what the log holds there."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"f3-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    p = producer(bootstrap, debug_log)
    p.init_transactions(30)
    reports: dict[str, tuple[str | None, int]] = {}

    def report(err, msg) -> None:
        reports[msg.value().decode()] = (err.name() if err else None, msg.offset())

    p.begin_transaction()
    proxy.lose_produce_answers(lose_s)
    for i in range(3):
        p.produce(topic, value=f"a{i}".encode(), partition=0, on_delivery=report)
    p.flush(wait_s)
    abort(p)
    time.sleep(max(0.0, lose_s - wait_s) + 0.1)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"b{i}".encode(), partition=0, on_delivery=report)
    p.commit_transaction(30)
    p.flush(10)
    committed = read(bootstrap, topic, "read_committed")
    every = read(bootstrap, topic, "read_uncommitted")
    b = {v: o for v, (err, o) in reports.items() if v.startswith("b") and err is None}
    held = set(committed.values())
    absent = [(v, o, every.get(o, "nothing")) for v, o in sorted(b.items()) if v not in held]
    print(f"  reports: {sorted(reports.items())}", flush=True)
    admin.delete_topics([topic])
    return b, absent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("broker", help="the broker's host:port")
    ap.add_argument("listen", help="the proxy's host:port, which the broker advertises")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--lose-s", type=float, default=1.5, help="seconds every Produce answer is lost")
    ap.add_argument("--wait-s", type=float, default=1.0, help="seconds to wait for A's reports before the abort")
    ap.add_argument("--debug-log", help="librdkafka's debug log and the proxy's to this file")
    a = ap.parse_args()
    if a.debug_log:
        logging.basicConfig(filename=a.debug_log, level=logging.DEBUG, format="%(asctime)s %(name)s %(message)s")
    host, port = a.listen.rsplit(":", 1)
    bhost, bport = a.broker.rsplit(":", 1)
    proxy = AnswerLosingProxy((host, int(port)), (bhost, int(bport)))
    print(f"librdkafka {libversion()[0]} (confluent-kafka {__import__('confluent_kafka').__version__})", flush=True)
    shown = 0
    for k in range(1, a.rounds + 1):
        try:
            b, absent = one_round(a.listen, proxy, a.lose_s, a.wait_s, a.debug_log)
        except KafkaException as e:
            print(f"round {k}: the producer failed: {e}", flush=True)
            continue
        shown += bool(absent)
        print(f"round {k}: {len(b)} of B's messages reported delivered, {len(absent)} of them not committed"
              + (f": {absent} (value, reported offset, what the offset holds)" if absent else ""), flush=True)
    print(f"a committed transaction's messages reported delivered and not in the log in {shown} of {a.rounds} "
          f"rounds ({proxy.lost} Produce answers lost)")
    sys.exit(1 if shown else 0)


if __name__ == "__main__":
    main()
