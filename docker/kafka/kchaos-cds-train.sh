#!/bin/sh
# Builds /opt/kafka/kafka.jsa, a class-data archive of the classes a broker loads while it starts,
# so every broker, controller and tool JVM of this image maps them instead of loading, verifying
# and linking them again (the entrypoint passes it when it exists). Trained on one node started
# the way the entrypoint starts it: Kafka 4 as a combined KRaft node, older versions as a
# ZooKeeper-mode broker beside a ZooKeeper server of the same jars. A training that fails leaves no
# archive and fails the image build: an image without it would only be slower, so the failure is
# loud rather than a quiet slowdown.
set -eu
CP="/opt/kafka/libs/*"
JVM="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xms256m -Xmx512m -Djava.awt.headless=true"
if [ "${KAFKA_VERSION%%.*}" -ge 4 ]; then
  LOGOPT="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
else
  LOGOPT="-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"
fi
work=$(mktemp -d)
zk=""
if [ "${KAFKA_VERSION%%.*}" -ge 4 ]; then
  cat > "$work/server.properties" <<P
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
log.dirs=$work/data
offsets.topic.replication.factor=1
P
  java $JVM $LOGOPT -cp "$CP" kafka.tools.StorageTool format -t kchaosCdsTrainingAAAAA -c "$work/server.properties" >"$work/format.log" 2>&1
else
  printf 'dataDir=%s/zk\nclientPort=2181\nadmin.enableServer=false\n' "$work" > "$work/zk.cfg"
  java -Xmx128m $JVM $LOGOPT -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zk.cfg" >"$work/zk.log" 2>&1 &
  zk=$!
  printf 'broker.id=1\nzookeeper.connect=localhost:2181\nlisteners=PLAINTEXT://localhost:9092\nlog.dirs=%s/data\noffsets.topic.replication.factor=1\n' \
    "$work" > "$work/server.properties"
fi
java -XX:ArchiveClassesAtExit=/opt/kafka/kafka.jsa $JVM $LOGOPT -cp "$CP" kafka.Kafka "$work/server.properties" >"$work/broker.log" 2>&1 &
broker=$!
tries=0
until grep -q "started (kafka.server" "$work/broker.log"; do
  tries=$((tries + 1))
  if [ "$tries" -gt 1200 ] || ! kill -0 "$broker" 2>/dev/null; then
    echo "kchaos-cds-train: the training broker did not start" >&2; cat "$work/broker.log" >&2; exit 1
  fi
  sleep 0.1
done
kill "$broker"; wait "$broker" || true
[ -n "$zk" ] && { kill "$zk"; wait "$zk" || true; }
rm -rf "$work"
test -s /opt/kafka/kafka.jsa || { echo "kchaos-cds-train: no archive written" >&2; exit 1; }
