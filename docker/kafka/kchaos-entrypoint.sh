#!/bin/sh
# Roles: zookeeper | broker | controller | tool MAIN_CLASS [ARGS...]
# The harness passes the whole configuration file in KCHAOS_CONFIG, so the image
# carries no templating logic and every setting of a run is visible in run.json.
set -eu
role="${1:-broker}"
[ $# -gt 0 ] && shift
CP="/opt/kafka/libs/*"
if [ "${KAFKA_VERSION%%.*}" -ge 4 ]; then
  LOGOPT="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
else
  LOGOPT="-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"
fi
# Loggers at other levels than the image's configuration (ClusterSettings.log_levels, passed as
# KCHAOS_LOG_LEVELS=name=LEVEL,...): a copy of the configuration with each logger's level set,
# replacing the logger's own entry where the configuration has one.
if [ -n "${KCHAOS_LOG_LEVELS:-}" ]; then
  mkdir -p /etc/kchaos
  if [ "${KAFKA_VERSION%%.*}" -ge 4 ]; then conf=/etc/kchaos/log4j2.properties; else conf=/etc/kchaos/log4j.properties; fi
  cp "/opt/kafka/config/${conf##*/}" "$conf"
  i=0
  for pair in $(printf '%s' "$KCHAOS_LOG_LEVELS" | tr ',' ' '); do
    i=$((i + 1)); name="${pair%%=*}"; level="${pair#*=}"
    if [ "${KAFKA_VERSION%%.*}" -ge 4 ]; then
      key=$(sed -n "s/^logger\.\([A-Za-z0-9_]*\)\.name *= *$(printf '%s' "$name" | sed 's/\./\\./g') *\$/\1/p" "$conf" | head -n 1)
      if [ -n "$key" ]; then
        sed -i "s/^logger\.$key\.level *=.*/logger.$key.level = $level/" "$conf"
      else
        printf 'logger.kchaos%s.name = %s\nlogger.kchaos%s.level = %s\n' "$i" "$name" "$i" "$level" >> "$conf"
      fi
    else
      printf 'log4j.logger.%s=%s\n' "$name" "$level" >> "$conf"  # a later key wins in a properties file
    fi
  done
  if [ "${KAFKA_VERSION%%.*}" -ge 4 ]; then LOGOPT="-Dlog4j2.configurationFile=$conf"; else LOGOPT="-Dlog4j.configuration=file:$conf"; fi
fi
HEAP="${KCHAOS_HEAP:--Xms256m -Xmx512m}"
# Small, fast-starting JVMs: 2-core machines run four of these at once.
JVM="${KCHAOS_JVM_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true}"
# Kafka's classes mapped from the image's class-data archive (kchaos-cds-train.sh) rather than
# loaded and verified again by each JVM: a third less CPU for a broker's start. A node whose jars
# are not the archive's (a rolled upgrade) runs without it; the JVM checks that itself.
if [ -f /opt/kafka/kafka.jsa ] && [ "${KCHAOS_CDS:-1}" = 1 ]; then
  JVM="$JVM -XX:SharedArchiveFile=/opt/kafka/kafka.jsa -Xlog:cds=off -Xlog:cds+dynamic=off"
fi
# Skewable clocks (harness/cluster/clocks.py): the JVM's wall clock is the true time plus the offset
# in /etc/kchaos/clock-offset, read at most once a second; its monotonic clock stays true. The
# library's monotonic "fix" is off: with it, the JVM's timed waits (which run on the monotonic
# clock) return at once and its threads spin.
if [ -n "${KCHAOS_FAKETIME:-}" ]; then
  [ -f /etc/kchaos/clock-offset ] || echo "+0" > /etc/kchaos/clock-offset
  for lib in /usr/lib/*/faketime/libfaketimeMT.so.1; do LD_PRELOAD="$lib"; done
  export LD_PRELOAD FAKETIME_TIMESTAMP_FILE=/etc/kchaos/clock-offset FAKETIME_CACHE_DURATION=0 \
    FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0
fi

case "$role" in
  zookeeper)
    printf '%s\n' "$KCHAOS_CONFIG" > /etc/kchaos/zookeeper.cfg
    # A member of an ensemble learns its server id from dataDir/myid.
    if [ -n "${KCHAOS_ZK_MYID:-}" ]; then
      printf '%s\n' "$KCHAOS_ZK_MYID" > /var/lib/zookeeper/myid
    fi
    exec java $HEAP $JVM $LOGOPT -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/kchaos/zookeeper.cfg
    ;;
  broker|controller)
    printf '%s\n' "$KCHAOS_CONFIG" > /etc/kchaos/server.properties
    # Faultable disks (harness/cluster/disks.py): each log directory (/var/lib/kafka/data, then
    # data-2, ...) is a pass-through of /var/lib/kafka/disk (disk-2, ...) that fails as
    # /etc/kchaos/disk.json (disk-2.json, ...) says. The mounts are this container's.
    if [ -n "${KCHAOS_DISKFS:-}" ]; then
      dirs="${KCHAOS_LOG_DIRS:-1}"; [ "$role" = controller ] && dirs=1
      k=1
      while [ "$k" -le "$dirs" ]; do
        sfx=""; [ "$k" -gt 1 ] && sfx="-$k"
        mkdir -p "/var/lib/kafka/disk$sfx" "/var/lib/kafka/data$sfx"
        [ -f "/etc/kchaos/disk$sfx.json" ] || echo "{}" > "/etc/kchaos/disk$sfx.json"
        kchaos-diskfs -real "/var/lib/kafka/disk$sfx" -mount "/var/lib/kafka/data$sfx" \
          -control "/etc/kchaos/disk$sfx.json" 2>>"/var/lib/kafka/diskfs$sfx.log" &
        tries=0
        until grep -q " /var/lib/kafka/data$sfx fuse" /proc/mounts; do
          tries=$((tries + 1))
          if [ "$tries" -gt 100 ]; then echo "kchaos-entrypoint: /var/lib/kafka/data$sfx was not mounted" >&2; exit 2; fi
          sleep 0.05
        done
        k=$((k + 1))
      done
    fi
    # A simulated power loss (harness/cluster/powerloss.py) left the cuts to apply before start.
    if [ -f /var/lib/kafka/power-loss.sh ]; then
      sh /var/lib/kafka/power-loss.sh && rm -f /var/lib/kafka/power-loss.sh
    fi
    if grep -q '^process.roles=' /etc/kchaos/server.properties && [ ! -f /var/lib/kafka/data/meta.properties ]; then
      java $JVM $LOGOPT -cp "$CP" kafka.tools.StorageTool format -t "$KCHAOS_CLUSTER_ID" -c /etc/kchaos/server.properties ${KCHAOS_FORMAT_ARGS:-}
    fi
    exec java $HEAP $JVM $LOGOPT -cp "$CP" kafka.Kafka /etc/kchaos/server.properties
    ;;
  tool)
    main="$1"; shift
    exec java ${KCHAOS_TOOL_HEAP:--Xmx256m} $JVM $LOGOPT -cp "$CP" "$main" "$@"
    ;;
  *)
    echo "kchaos-entrypoint: unknown role '$role' (zookeeper|broker|controller|tool)" >&2
    exit 2
    ;;
esac
