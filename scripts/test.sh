#!/usr/bin/env bash
# The test command: set up this machine if needed, then run the default suite against real Kafka:
# everything except the chaos_long catalogue tests (run those with: scripts/test.sh -m chaos_long).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# The report tests open the HTML in headless Chromium: Debian's package, not a downloaded browser.
if ! command -v chromium >/dev/null 2>&1; then
  echo "[setup] installing Debian's chromium for the report tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2 || {
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2; }
fi
# The Spark start-up cache, which set-up leaves to an idle machine: a suite never leaves it idle, and
# the checks the tests make should start as fast as a user's.
${PYTHON:-python3} -m harness.setup.cds --now >&2
if [ $# -eq 0 ]; then set -- -m "not chaos_long"; fi
# Two workers, a group of tests each at a time (a file, or the files that share a cluster: see
# tests/conftest.py's scheduler): most of a test's time is spent waiting on containers and JVMs, so two run side
# by side on two cores; the dearest groups first (xdist's own reorder, by test count, is off).
# KCHAOS_TEST_WORKERS=0 runs in one process.
exec ${PYTHON:-python3} -m pytest -q --durations=20 -n "${KCHAOS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
