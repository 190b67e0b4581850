#!/bin/sh
# Builds librdkafka from a checkout (with a patch, if one is named) and puts it under a copy of
# confluent-kafka-python, so that f1_repro.py runs on it:
#   ./build.sh LIBRDKAFKA_CHECKOUT OUT_DIR [PATCH]
#   PYTHONPATH=OUT_DIR ../reproduce.sh drop-abort 20
# The binding is the installed one, or the one in CK_SITE (a folder holding confluent_kafka, e.g.
# from `pip install --target DIR confluent-kafka==2.15.1`): a binding refuses a librdkafka older
# than its own release. The build leaves out what the reproduction does not use (TLS, SASL,
# compression codecs).
set -eu
src=$(cd "$1" && pwd); out=$2; patch=${3:-}
[ -n "$patch" ] && patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
work=$(mktemp -d)
cp -a "$src/." "$work/"
cd "$work"
[ -n "$patch" ] && patch -p1 < "$patch"
./configure --disable-ssl --disable-gssapi --disable-sasl --disable-zstd --disable-lz4-ext --disable-curl \
  --disable-zlib >/dev/null
make -C src -j"$(nproc)" librdkafka.so.1 >/dev/null
site=${CK_SITE:-$(python3 -c 'import confluent_kafka, os; print(os.path.dirname(os.path.dirname(confluent_kafka.__file__)))')}
rm -rf "$out"; mkdir -p "$out"
cp -a "$site/confluent_kafka" "$site/confluent_kafka.libs" "$out/"
bundled=$(ls "$out/confluent_kafka.libs"/librdkafka-*.so.1)
cp src/librdkafka.so.1 "$bundled"
cd / && rm -rf "$work"
PYTHONPATH=$out python3 -c 'import confluent_kafka; print("built:", confluent_kafka.libversion())'
