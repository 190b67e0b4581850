#!/bin/sh
# Runs the version a rolling upgrade moved this node to (named in /var/lib/kafka/kchaos-version),
# else the image's own, through the image's own entrypoint (same roles and arguments).
set -eu
marker=/var/lib/kafka/kchaos-version
if [ -f "$marker" ]; then
  v="$(cat "$marker")"
  if [ ! -d "/opt/kafka-versions/$v/libs" ]; then
    echo "kchaos-upgrade-entrypoint: no jars for Kafka $v in this image" >&2
    exit 2
  fi
  ln -sfn "/opt/kafka-versions/$v/libs" /opt/kafka/libs
  export KAFKA_VERSION="$v"
fi
exec /opt/kafka/bin/kchaos-entrypoint.sh "$@"
