#!/usr/bin/env bash
# The test command: set up this machine if needed, then run every test against real Kafka.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec ${PYTHON:-python3} -m pytest -q "$@"
