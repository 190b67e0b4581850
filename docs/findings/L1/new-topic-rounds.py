"""Candidate: librdkafka acknowledges a message Kafka never wrote (a later batch's success taken as
proof that an earlier one was written), when the partition's leader does not know the producer.

Each round: a new idempotent producer queues messages, one a batch, for a topic that does not exist
yet; the topic is created; the producer flushes. Every delivery report that says success is then
looked for in the topic. Prints, per round, the successes without an offset and those absent.

Usage: python new-topic-rounds.py BOOTSTRAP [--rounds 30] [--messages 200] [--rf 3] [--debug msg,eos]
"""
import argparse
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def round_(bootstrap: str, n: int, rf: int, debug: str) -> tuple[int, int, int]:
    topic = f"repro-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 0,
            "batch.num.messages": 1, "max.in.flight.requests.per.connection": 5,
            "topic.metadata.refresh.interval.ms": 100}
    if debug:
        conf["debug"] = debug
    p = Producer(conf)
    reports: dict[str, int | None] = {}

    def dr(err, msg):
        if err is None:
            reports[msg.value().decode()] = msg.offset()

    for i in range(n):
        p.produce(topic, value=f"m{i}".encode(), partition=0, on_delivery=dr)
    p.poll(0.3)
    admin.create_topics([NewTopic(topic, 1, rf, config={"min.insync.replicas": str(min(2, rf))})])[topic].result()
    p.flush(60)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    seen: set[str] = set()
    end = time.monotonic() + 10
    while time.monotonic() < end and len(seen) < len(reports):
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.add(m.value().decode())
    c.close()
    no_offset = sum(1 for o in reports.values() if o is None or o < 0)
    absent = sorted(v for v in reports if v not in seen)
    admin.delete_topics([topic])
    return len(reports), no_offset, len(absent)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--debug", default="")
    a = ap.parse_args()
    hits = 0
    for r in range(a.rounds):
        delivered, no_offset, absent = round_(a.bootstrap, a.messages, a.rf, a.debug)
        hits += absent > 0
        print(f"round {r + 1}: {delivered} delivered, {no_offset} without an offset, {absent} absent from the topic",
              flush=True)
    print(f"{hits} of {a.rounds} rounds had a delivered message absent from the topic")


if __name__ == "__main__":
    main()
