"""librdkafka #4605 (rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0' failed),
made to happen on purpose: a group-coordinator Admin request (DeleteGroups here; DescribeGroups,
ListConsumerGroupOffsets and the other coordinator-addressed calls take the same path) times out
while the group's coordinator does not answer (its container frozen with `docker pause`), then the
coordinator answers again.

The process this script starts for the Admin client aborts when librdkafka has the bug; this
script reports that and exits 1, or exits 0 when the client survived. Needs confluent-kafka and
Docker.

    python3 repro_4605.py --broker 2=19092=r4605-kafka-2 3=19093=r4605-kafka-3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

COORDINATOR = r'''
import sys, time
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1], "broker.address.family": "v4"})
for _ in range(30):  # until the group coordinator is up (the offsets topic is made on first use)
    group = admin.describe_consumer_groups(["g"], request_timeout=30)["g"]
    if group.exception(40) is None:
        print(group.result().coordinator.id, group.result().coordinator.port)
        break
    time.sleep(1)
'''

ADMIN = r'''
import sys
from confluent_kafka.admin import AdminClient
# Bootstrapped from a broker that is not the group's coordinator, so that no connection to the
# coordinator is up when the request is made: librdkafka looks the coordinator up and waits for it.
admin = AdminClient({"bootstrap.servers": sys.argv[1], "broker.address.family": "v4",
                     "debug": "admin,broker,protocol", "socket.timeout.ms": 5000})
def say(*words):
    print(*words, flush=True)
admin.list_topics(timeout=30)
say("ready")
sys.stdin.readline()  # the coordinator is frozen now
future = admin.delete_consumer_groups(["g"], request_timeout=3)["g"]
say("while frozen:", repr(future.exception(10)))
sys.stdin.readline()  # the coordinator answers again
for _ in range(60):
    admin.poll(0.5)
say("survived")
'''


def docker(*args: str) -> None:
    subprocess.run(["docker", *args], check=True, capture_output=True)


def tell(child: subprocess.Popen, what: str) -> None:
    """Tell the Admin client's process what happened; it may have aborted already."""
    try:
        child.stdin.write(what + "\n")
        child.stdin.flush()
    except BrokenPipeError:
        pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--broker", nargs="+", required=True, metavar="ID=PORT=CONTAINER",
                   help="each broker's node id, the port of its listener on 127.0.0.1, its container")
    p.add_argument("--client-log", default="client.log", help="the Admin client's stderr (librdkafka's debug log)")
    a = p.parse_args()
    brokers = {i: (port, name) for i, port, name in (x.split("=", 2) for x in a.broker)}
    everyone = ",".join(f"127.0.0.1:{port}" for port, _ in brokers.values())
    said = subprocess.run([sys.executable, "-c", COORDINATOR, everyone], capture_output=True, text=True).stdout.split()
    if not said or said[0] not in brokers:
        print(f"no coordinator found for group g ({said!r})")
        return 2
    coordinator = said[0]
    other = next(port for i, (port, _) in brokers.items() if i != coordinator)
    print("the group's coordinator: broker", coordinator)
    with open(a.client_log, "w") as err:
        child = subprocess.Popen([sys.executable, "-c", ADMIN, f"127.0.0.1:{other}"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=err, text=True)
        assert child.stdin is not None and child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            print("the Admin client did not start; see", a.client_log)
            return 2
        docker("pause", brokers[coordinator][1])
        tell(child, "frozen")
        print(child.stdout.readline().strip())  # while frozen: a timeout, as asked
        time.sleep(3)  # the Admin client's connection to the coordinator times out (socket.timeout.ms)
        docker("unpause", brokers[coordinator][1])
        tell(child, "answering")
        rest = child.stdout.read()
        code = child.wait(timeout=120)
    print(rest.strip())
    if code == -6:
        with open(a.client_log) as f:
            said = [x.strip() for x in f if "Assertion" in x]
        print(f"aborted once the coordinator was unfrozen: {said[-1] if said else code}")
        return 1
    print("the Admin client survived" if code == 0 else f"the Admin client ended with {code}")
    return 0 if code == 0 else 2


if __name__ == "__main__":
    sys.exit(main())
