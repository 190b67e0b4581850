#!/bin/sh
# Runs l1_repro.py against Kafka in Docker (KRaft: node 1 a broker and the controller, node 2 a broker
# that registers and is then stopped, so that a topic on both has broker 1 alone in its ISR) and prints
# in how many rounds librdkafka reported a message delivered that the topic does not hold.
#   ./reproduce.sh [ROUNDS]
# Environment: KAFKA_IMAGE (default apache/kafka:4.4.0; any image of Kafka 3.3 or later, with its jars in
# /opt/kafka/libs and java on its PATH), OUT (default ./out), ARGS (more options of l1_repro.py, e.g.
# "--rate 4000"). Needs docker and python3 with confluent-kafka (the librdkafka under test is the one
# it bundles).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-20}
image=${KAFKA_IMAGE:-apache/kafka:4.4.0}
out=${OUT:-$here/out}
mkdir -p "$out"
cleanup() {
  for n in 1 2; do docker logs "l1-kafka-$n" > "$out/kafka-$n.log" 2>&1 || true; done
  docker rm -f l1-kafka-1 l1-kafka-2 >/dev/null 2>&1 || true
  docker network rm l1-net >/dev/null 2>&1 || true
}
cleanup
trap cleanup EXIT INT TERM
docker network create l1-net >/dev/null
node() {  # node ID, roles, listeners, advertised listeners, published ports
  docker run -d --name "l1-kafka-$1" --network l1-net $5 -v "$here:/repro:ro" --entrypoint sh "$image" -c "
    sed 's/NODE_ID/$1/' /repro/server.properties > /tmp/server.properties
    printf 'process.roles=$2\nlisteners=$3\nadvertised.listeners=$4\n' >> /tmp/server.properties
    if ls /opt/kafka/libs/log4j-core-2*.jar >/dev/null 2>&1; then
      LOG=-Dlog4j2.configurationFile=/repro/log4j2.properties
    else
      LOG=-Dlog4j.configuration=file:/repro/log4j.properties
    fi
    java \$LOG -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
      -t l1ReproClusterAAAAAAAAA -c /tmp/server.properties >/dev/null
    exec java -Xmx512m \$LOG -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties" >/dev/null
}
node 1 broker,controller "PLAINTEXT://0.0.0.0:19091,INTERNAL://0.0.0.0:9094,CONTROLLER://0.0.0.0:9093" \
  "PLAINTEXT://127.0.0.1:19091,INTERNAL://l1-kafka-1:9094" "-p 127.0.0.1:19091:19091"
node 2 broker "PLAINTEXT://0.0.0.0:19092,INTERNAL://0.0.0.0:9094" \
  "PLAINTEXT://127.0.0.1:19092,INTERNAL://l1-kafka-2:9094" "-p 127.0.0.1:19092:19092"
for n in 1 2; do
  i=0
  until docker logs "l1-kafka-$n" 2>&1 | grep -q "Kafka Server started"; do
    i=$((i + 1)); [ "$i" -le 900 ] || { echo "node $n did not start" >&2; docker logs "l1-kafka-$n" >&2; exit 2; }
    sleep 0.1
  done
done
docker stop l1-kafka-2 >/dev/null  # registered, now fenced: a topic on brokers 1 and 2 has broker 1 alone in sync
set +e
# shellcheck disable=SC2086  # ARGS is a list of options
python3 "$here/l1_repro.py" 127.0.0.1:19091 --rounds "$rounds" --debug-log "$out/librdkafka.log" ${ARGS:-} \
  > "$out/rounds.txt"
rc=$?
set -e
cat "$out/rounds.txt"
echo "librdkafka's debug log: $out/librdkafka.log (grep IMPLICITACK); the brokers': $out/kafka-*.log"
exit "$rc"
