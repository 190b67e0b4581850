#!/bin/sh
# Runs repro_4605.py RUNS times against a Kafka cluster in Docker (one KRaft controller, two
# brokers) and prints in how many runs librdkafka's Admin client aborted.
#   ./reproduce.sh [RUNS]
# Environment: KAFKA_IMAGE (default apache/kafka:4.1.0; any image with Kafka's jars in
# /opt/kafka/libs and java on its PATH), OUT (default ./out). Needs docker and python3 with
# confluent-kafka.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=${1:-5}
image=${KAFKA_IMAGE:-apache/kafka:4.1.0}
out=${OUT:-$here/out}
mkdir -p "$out"
cleanup() {
  for n in 1 2 3; do docker logs "r4605-kafka-$n" > "$out/kafka-$n.log" 2>&1 || true; done
  docker rm -f r4605-kafka-1 r4605-kafka-2 r4605-kafka-3 >/dev/null 2>&1 || true
  docker network rm r4605-net >/dev/null 2>&1 || true
}
cleanup
trap cleanup EXIT INT TERM
docker network create r4605-net >/dev/null
node() {  # node ID, roles, listeners, advertised listeners, published ports
  docker run -d --name "r4605-kafka-$1" --network r4605-net $5 -v "$here:/repro:ro" --entrypoint sh "$image" -c "
    sed 's/NODE_ID/$1/' /repro/node.properties > /tmp/server.properties
    printf 'process.roles=$2\nlisteners=$3\n' >> /tmp/server.properties
    [ -n '$4' ] && printf 'advertised.listeners=$4\n' >> /tmp/server.properties
    if ls /opt/kafka/libs/log4j-core-2*.jar >/dev/null 2>&1; then
      LOG=-Dlog4j2.configurationFile=/repro/log4j2.properties
    else
      LOG=-Dlog4j.configuration=file:/repro/log4j.properties
    fi
    java \$LOG -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
      -t r4605ReproClusterAAAAA -c /tmp/server.properties >/dev/null
    exec java -Xmx384m \$LOG -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties" >/dev/null
}
node 1 controller CONTROLLER://0.0.0.0:9093 "" ""
for b in 2 3; do
  node "$b" broker "PLAINTEXT://0.0.0.0:1909$b,INTERNAL://0.0.0.0:9094" \
    "PLAINTEXT://127.0.0.1:1909$b,INTERNAL://r4605-kafka-$b:9094" "-p 127.0.0.1:1909$b:1909$b"
done
for b in 2 3; do
  i=0
  until docker logs "r4605-kafka-$b" 2>&1 | grep -q "Kafka Server started"; do
    i=$((i + 1)); [ "$i" -le 900 ] || { echo "broker $b did not start" >&2; docker logs "r4605-kafka-$b" >&2; exit 2; }
    sleep 0.1
  done
done
seen=0; k=1
while [ "$k" -le "$runs" ]; do
  set +e
  python3 "$here/repro_4605.py" --broker 2=19092=r4605-kafka-2 3=19093=r4605-kafka-3 --client-log "$out/client-$k.log" > "$out/run-$k.txt"
  rc=$?
  set -e
  [ "$rc" -le 1 ] || { echo "run $k failed (exit $rc), see $out/run-$k.txt" >&2; cat "$out/run-$k.txt" >&2; exit 2; }
  [ "$rc" -eq 1 ] && seen=$((seen + 1))
  echo "run $k: $(tail -1 "$out/run-$k.txt")"
  sleep 10  # the unfrozen broker back in the cluster before the next run
  k=$((k + 1))
done
echo "librdkafka $(python3 -c 'import confluent_kafka as c; print(c.libversion()[0])') ($image): the Admin client aborted in $seen of $runs runs"
