#!/bin/sh
# Runs reproduce.sh once per confluent-kafka-python release (each bundles its own librdkafka), with
# the same FAULT, RUNS and PROTOCOL, and prints one line per release: how many runs saw the group's
# committed offset move back. Each release is installed with pip into CK_CACHE (default
# ./confluent-kafka) on first use and put first on PYTHONPATH for its runs.
#   ./versions.sh FAULT RUNS PROTOCOL VERSION...      e.g. ./versions.sh kill 10 classic 2.0.2 2.16.1
# Environment: as reproduce.sh (KAFKA_IMAGE, ARGS); OUT defaults to ./out-versions.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
fault=$1; runs=$2; protocol=$3; shift 3
cache=${CK_CACHE:-$here/confluent-kafka}
for v in "$@"; do
  [ -d "$cache/$v" ] || python3 -m pip install -q --no-deps --target "$cache/$v" "confluent-kafka==$v"
  lib=$(PYTHONPATH="$cache/$v" python3 -c 'import confluent_kafka as c; print(c.libversion()[0])')
  line=$(PYTHONPATH="$cache/$v" OUT="${OUT:-$here/out-versions}/librdkafka-$lib" \
    "$here/reproduce.sh" "$fault" "$runs" "$protocol" | tail -1)
  echo "librdkafka $lib (confluent-kafka $v): $line"
done
