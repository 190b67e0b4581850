#!/bin/sh
# Runs f2_repro.py RUNS times against a ZooKeeper-mode Kafka cluster in Docker (one ZooKeeper
# server, three brokers), each run on a topic of its own, and prints how many runs froze the ISR.
#   ./reproduce.sh [MODE] [RUNS]
#   MODE: lost-answer (the controller's ZooKeeper answers dropped across the ISR shrink) | control
#         (the same cut after the shrink) | none (no ZooKeeper fault)
# Environment: KAFKA_IMAGE (default apache/kafka:3.9.2; any image with Kafka's jars in
# /opt/kafka/libs and java on its PATH), LAG_MS (replica.lag.time.max.ms; Kafka's default when
# unset), OUT (default ./out). Needs docker, nsenter and iptables (root: the faults are iptables
# rules in the brokers' network namespaces) and python3 with confluent-kafka.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-lost-answer}; runs=${2:-10}
image=${KAFKA_IMAGE:-apache/kafka:3.9.2}
out=${OUT:-$here/out}/$mode
mkdir -p "$out"
names="f2-zk f2-kafka-1 f2-kafka-2 f2-kafka-3"
cleanup() {
  for n in $names; do docker logs "$n" > "$out/$n.log" 2>&1 || true; done
  docker rm -f $names >/dev/null 2>&1 || true
  docker network rm f2-net >/dev/null 2>&1 || true
}
cleanup
trap cleanup EXIT INT TERM
docker network create f2-net >/dev/null
docker run -d --name f2-zk --network f2-net -v "$here:/repro:ro" --entrypoint sh "$image" -c "
  exec java -Xmx256m -Dlog4j.configuration=file:/repro/log4j.properties -cp '/opt/kafka/libs/*' \
    org.apache.zookeeper.server.quorum.QuorumPeerMain /repro/zookeeper.properties" >/dev/null
broker() {  # broker ID
  docker run -d --name "f2-kafka-$1" --network f2-net -p "127.0.0.1:1919$1:1919$1" -v "$here:/repro:ro" \
    --entrypoint sh "$image" -c "
    sed 's/NODE_ID/$1/g' /repro/server.properties > /tmp/server.properties
    [ -z '${LAG_MS:-}' ] || echo 'replica.lag.time.max.ms=${LAG_MS:-}' >> /tmp/server.properties
    exec java -Xmx384m -Dlog4j.configuration=file:/repro/log4j.properties -cp '/opt/kafka/libs/*' \
      kafka.Kafka /tmp/server.properties" >/dev/null
}
started() {  # broker ID: wait for its "started" line
  i=0
  until docker logs "f2-kafka-$1" 2>&1 | grep -q "\[KafkaServer id=$1\] started"; do
    i=$((i + 1)); [ "$i" -le 1200 ] || { echo "broker $1 did not start" >&2; docker logs "f2-kafka-$1" >&2; exit 2; }
    sleep 0.1
  done
}
for b in 1 2 3; do broker "$b"; done
for b in 1 2 3; do started "$b"; done
seen=0; k=1
while [ "$k" -le "$runs" ]; do
  set +e
  python3 "$here/f2_repro.py" --mode "$mode" --topic "f2-$mode-$k" > "$out/run-$k.txt"
  rc=$?
  set -e
  [ "$rc" -le 1 ] || { echo "run $k failed (exit $rc), see $out/run-$k.txt" >&2; cat "$out/run-$k.txt" >&2; exit 2; }
  [ "$rc" -eq 1 ] && seen=$((seen + 1))
  echo "run $k: $(tail -1 "$out/run-$k.txt")"
  k=$((k + 1))
done
echo "$mode ($image, replica.lag.time.max.ms ${LAG_MS:-default}): the ISR froze in $seen of $runs runs"
