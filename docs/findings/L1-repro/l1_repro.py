"""Candidate for L1: librdkafka's idempotent producer reports a message delivered that Kafka never
wrote, when the partition's leader does not know the producer and refuses one request of a pipeline
with a retriable error but accepts the next.

librdkafka takes a later batch's success as proof that the earlier batches of the partition were
written (rd_kafka_dr_implicit_ack: "implicitly acked by subsequent batch success"), because a broker
that knows the producer refuses a batch whose sequence is ahead of the one it expects. A partition
with no state for the producer (a new topic, a topic created again, a producer new to the partition)
accepts any first sequence (Kafka's ProducerAppendInfo.checkSequence), so a refused batch followed by
an accepted one leaves the refused batch's messages reported delivered and in no log.

Each round: a new topic whose two replicas are on brokers 1 and 2, broker 2 down, and whose
min.insync.replicas is 2, so every acks=all request is refused with NOT_ENOUGH_REPLICAS (retriable:
the producer keeps retrying); a new idempotent producer sends one message a request, several
requests in flight; after --refuse-s the topic's min.insync.replicas is set to 1 through the Admin
API, so the pipeline in flight meets the change part-way. The producer flushes, the topic is read
from offset 0, and every message reported delivered is looked for in it. Prints one line per round
and a total; exits 1 if any round showed a message reported delivered that the topic does not hold.

    python l1_repro.py BOOTSTRAP [--rounds 20] [--rate 2000] [--refuse-s 1.0] [--debug-log FILE]
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition, libversion
from confluent_kafka import admin as kadmin
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic


def refusing_topic(admin: AdminClient) -> str:
    """A new topic of one partition on brokers 1 and 2 (2 is down: the ISR is broker 1 alone) with
    min.insync.replicas=2, so that every acks=all write is refused."""
    topic = f"l1-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2]],
                                  config={"min.insync.replicas": "2"})])[topic].result()
    return topic


def accept_writes(admin: AdminClient, topic: str) -> None:
    """min.insync.replicas=1 on the topic: its one replica in sync is enough from now on (through
    IncrementalAlterConfigs where the client has it, AlterConfigs before confluent-kafka 2.2)."""
    if hasattr(kadmin, "AlterConfigOpType"):
        entry = kadmin.ConfigEntry("min.insync.replicas", "1", incremental_operation=kadmin.AlterConfigOpType.SET)
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
        futures = admin.incremental_alter_configs([res])
    else:
        futures = admin.alter_configs([ConfigResource("topic", topic, set_config={"min.insync.replicas": "1"})])
    for f in futures.values():
        f.result()


def producer_conf(bootstrap: str, debug_log: str | None) -> dict:
    """An idempotent producer (acks=all), one message a request, up to five requests in flight, and
    short retry backoffs so that its retries keep the pipeline full while the topic refuses them."""
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 0,
            "batch.num.messages": 1, "max.in.flight.requests.per.connection": 5,
            "retry.backoff.ms": 5, "message.timeout.ms": 60000}
    if libversion()[1] >= 0x02030000:  # exponential retry backoff came with librdkafka 2.3.0
        conf["retry.backoff.max.ms"] = 20
    if debug_log:
        conf["debug"] = "msg,eos"
        conf["logger"] = _file_logger(debug_log)
    return conf


def _file_logger(path: str):
    import logging

    log = logging.getLogger(f"librdkafka-{path}")
    if not log.handlers:
        h = logging.FileHandler(path)
        h.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.DEBUG)
    return log


def read_values(bootstrap: str, topic: str, expected: int) -> set[str]:
    """Every value partition 0 of ``topic`` holds, read from offset 0 until ``expected`` are seen or
    the log has been quiet for 5 s."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    seen: set[str] = set()
    quiet_until = time.monotonic() + 5
    while time.monotonic() < quiet_until and len(seen) < expected:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.add(m.value().decode())
            quiet_until = time.monotonic() + 5
    c.close()
    return seen


def one_round(bootstrap: str, rate: int, refuse_s: float, tail_s: float, debug_log: str | None) -> tuple[int, list]:
    """Returns the messages reported delivered and those of them the topic does not hold, each with
    the offset its delivery report gave."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = refusing_topic(admin)
    p = Producer(producer_conf(bootstrap, debug_log))
    delivered: dict[str, int] = {}

    def report(err, msg) -> None:
        if err is None:
            delivered[msg.value().decode()] = msg.offset()

    stop = threading.Event()

    def send() -> None:
        i = 0
        while not stop.is_set():
            p.produce(topic, value=f"m{i}".encode(), partition=0, on_delivery=report)
            p.poll(0)
            i += 1
            time.sleep(1 / rate)

    t = threading.Thread(target=send)
    t.start()
    time.sleep(refuse_s)
    accept_writes(admin, topic)
    time.sleep(tail_s)
    stop.set()
    t.join()
    p.flush(60)
    held = read_values(bootstrap, topic, len(delivered))
    absent = sorted(((v, o) for v, o in delivered.items() if v not in held), key=lambda x: int(x[0][1:]))
    admin.delete_topics([topic])
    return len(delivered), absent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bootstrap")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rate", type=int, default=2000, help="messages a second")
    ap.add_argument("--refuse-s", type=float, default=1.0, help="seconds the topic refuses writes")
    ap.add_argument("--tail-s", type=float, default=1.0, help="seconds of writes after the change")
    ap.add_argument("--debug-log", help="librdkafka's debug log (msg,eos) to this file")
    a = ap.parse_args()
    print(f"librdkafka {libversion()[0]} (confluent-kafka {__import__('confluent_kafka').__version__})", flush=True)
    shown = 0
    for k in range(1, a.rounds + 1):
        n, absent = one_round(a.bootstrap, a.rate, a.refuse_s, a.tail_s, a.debug_log)
        shown += bool(absent)
        print(f"round {k}: {n} reported delivered, {len(absent)} of them not in the topic"
              + (f": {absent[:8]}" if absent else ""), flush=True)
    print(f"messages reported delivered and not written in {shown} of {a.rounds} rounds")
    sys.exit(1 if shown else 0)


if __name__ == "__main__":
    main()
