"""The Java driver's recording consumer writes its history lines by hand (kchaos.HistoryRows); these
must be the bytes Jackson's generator writes for the same rows, which the harness reads as JSON."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.clients.java.build import classpath
from harness.versions import CATALOGUE_VERSION

CHECK = Path(__file__).resolve().parent / "java" / "HistoryRowsCheck.java"


def test_hand_written_history_rows_are_jacksons_bytes():
    out = subprocess.run(["java", "-cp", classpath(CATALOGUE_VERSION), str(CHECK)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.startswith("same"), out.stdout + out.stderr
