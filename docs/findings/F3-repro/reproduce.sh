#!/bin/sh
# Runs f3_repro.py against one Kafka node in Docker (KRaft, the controller and the broker in one), the
# broker advertising the proxy f3_repro.py runs on the host, and prints in how many rounds librdkafka
# reported a committed transaction's message delivered that the log does not hold.
#   ./reproduce.sh [ROUNDS]
# Environment: KAFKA_IMAGE (default apache/kafka:4.4.0; any image of Kafka 3.3 or later, with its jars in
# /opt/kafka/libs and java on its PATH), OUT (default ./out), ARGS (more options of f3_repro.py, e.g.
# "--lose-s 2"). Needs docker and python3 with confluent-kafka (the librdkafka under test is the one
# it bundles).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-20}
image=${KAFKA_IMAGE:-apache/kafka:4.4.0}
out=${OUT:-$here/out}
broker=19391  # the broker's port, published on the host
proxy=19392   # the proxy's, which the broker advertises
mkdir -p "$out"
rm -f "$out/librdkafka.log"
cleanup() {
  docker logs f3-kafka > "$out/kafka.log" 2>&1 || true
  docker rm -f f3-kafka >/dev/null 2>&1 || true
}
cleanup
trap cleanup EXIT INT TERM
docker run -d --name f3-kafka -p "127.0.0.1:$broker:$broker" -v "$here:/repro:ro" --entrypoint sh "$image" -c "
  cp /repro/server.properties /tmp/server.properties
  printf 'listeners=PLAINTEXT://0.0.0.0:$broker,INTERNAL://localhost:9094,CONTROLLER://localhost:9093\n' \
    >> /tmp/server.properties
  printf 'advertised.listeners=PLAINTEXT://127.0.0.1:$proxy,INTERNAL://localhost:9094\n' \
    >> /tmp/server.properties
  if ls /opt/kafka/libs/log4j-core-2*.jar >/dev/null 2>&1; then
    LOG=-Dlog4j2.configurationFile=/repro/log4j2.properties
  else
    LOG=-Dlog4j.configuration=file:/repro/log4j.properties
  fi
  java \$LOG -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
    -t f3ReproClusterAAAAAAAAA -c /tmp/server.properties >/dev/null
  exec java -Xmx512m \$LOG -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties" >/dev/null
i=0
until docker logs f3-kafka 2>&1 | grep -q "Kafka Server started"; do
  i=$((i + 1)); [ "$i" -le 900 ] || { echo "Kafka did not start" >&2; docker logs f3-kafka >&2; exit 2; }
  sleep 0.1
done
set +e
# shellcheck disable=SC2086  # ARGS is a list of options
python3 "$here/f3_repro.py" "127.0.0.1:$broker" "127.0.0.1:$proxy" --rounds "$rounds" \
  --debug-log "$out/librdkafka.log" ${ARGS:-} > "$out/rounds.txt"
rc=$?
set -e
cat "$out/rounds.txt"
echo "librdkafka's and the proxy's debug log: $out/librdkafka.log; the broker's: $out/kafka.log"
exit "$rc"
