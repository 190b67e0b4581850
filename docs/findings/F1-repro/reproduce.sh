#!/bin/sh
# Runs f1_repro.py RUNS times against a Kafka cluster in Docker (one KRaft controller, two
# brokers), with FAULT on the group coordinator's broker each run, and prints how many runs saw
# the group's committed offset move back.
#   ./reproduce.sh [FAULT] [RUNS] [PROTOCOL]
#   FAULT: reset | drop | drop-abort | kill | restart | freeze | none (f1_repro.py --help says what each does)
#   PROTOCOL: classic | consumer (KIP-848; Kafka 4.0 or later)
# Environment: KAFKA_IMAGE (default apache/kafka:3.9.1; any image with Kafka's jars in
# /opt/kafka/libs and java on its PATH), OUT (default ./out), ARGS (more options of f1_repro.py,
# e.g. "--hold 7 --duration 15": the fault held 7 s in a 15 s run). Needs docker, python3 with
# confluent-kafka, and root for the faults made with iptables (reset, drop).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
fault=${1:-reset}; runs=${2:-20}; protocol=${3:-classic}
image=${KAFKA_IMAGE:-apache/kafka:3.9.1}
out=${OUT:-$here/out}/$fault-$protocol
mkdir -p "$out"
cleanup() {
  for n in 1 2 3; do docker logs "f1-kafka-$n" > "$out/kafka-$n.log" 2>&1 || true; done
  docker rm -f f1-kafka-1 f1-kafka-2 f1-kafka-3 >/dev/null 2>&1 || true
  docker network rm f1-net >/dev/null 2>&1 || true
}
cleanup
trap cleanup EXIT INT TERM
docker network create f1-net >/dev/null
# One node: its properties, then Kafka (Log4j 2 from Kafka 4.0, Log4j 1 before), formatted once
# so that a restarted container starts again.
node() {  # node ID, roles, listeners, advertised listeners, published ports
  docker run -d --name "f1-kafka-$1" --network f1-net $5 -v "$here:/repro:ro" --entrypoint sh "$image" -c "
    sed 's/NODE_ID/$1/' /repro/node.properties > /tmp/server.properties
    printf 'process.roles=$2\nlisteners=$3\n' >> /tmp/server.properties
    [ -n '$4' ] && printf 'advertised.listeners=$4\n' >> /tmp/server.properties
    if ls /opt/kafka/libs/log4j-core-2*.jar >/dev/null 2>&1; then
      LOG=-Dlog4j2.configurationFile=/repro/log4j2.properties
    else
      LOG=-Dlog4j.configuration=file:/repro/log4j.properties
    fi
    java \$LOG -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
      -t f1ReproClusterAAAAAAAA -c /tmp/server.properties >/dev/null
    exec java -Xmx384m \$LOG -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties" >/dev/null
}
node 1 controller CONTROLLER://0.0.0.0:9093 "" ""
for b in 2 3; do
  node "$b" broker "PLAINTEXT://0.0.0.0:1909$b,INTERNAL://0.0.0.0:9094" \
    "PLAINTEXT://127.0.0.1:1909$b,INTERNAL://f1-kafka-$b:9094" "-p 127.0.0.1:1909$b:1909$b"
done
for b in 2 3; do
  i=0
  until docker logs "f1-kafka-$b" 2>&1 | grep -q "Kafka Server started"; do
    i=$((i + 1)); [ "$i" -le 900 ] || { echo "broker $b did not start" >&2; docker logs "f1-kafka-$b" >&2; exit 2; }
    sleep 0.1
  done
done
seen=0; k=1
while [ "$k" -le "$runs" ]; do
  set +e
  # shellcheck disable=SC2086  # ARGS is a list of options
  python3 "$here/f1_repro.py" --fault "$fault" --protocol "$protocol" --client-log "$out/client-$k.log" \
    ${ARGS:-} > "$out/run-$k.txt"
  rc=$?
  set -e
  [ "$rc" -le 1 ] || { echo "run $k failed (exit $rc), see $out/run-$k.txt" >&2; cat "$out/run-$k.txt" >&2; exit 2; }
  [ "$rc" -eq 1 ] && seen=$((seen + 1))
  echo "run $k: $(tail -1 "$out/run-$k.txt")"
  k=$((k + 1))
done
echo "$fault ($protocol, $image): the committed offset moved back in $seen of $runs runs"
