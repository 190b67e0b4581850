"""A new user's first command: ``./kchaos matrix --quick`` on a machine that has built nothing yet.

    python benchmarks/first_run.py --wipe [--checkout DIR] [--out DIR]

``--wipe`` (required: it deletes) removes what kchaos's set-up builds or downloads on a fresh
machine: every ``kchaos/*`` image, the Java and Go drivers, Kafka's verifiable clients' jars and the
Spark start-up cache (under ``~/.cache/kchaos``), Maven's local repository and Go's module and build
caches; the warm Spark server is stopped. What stays is what a fresh machine's first command would install from package
registries without kchaos doing anything special (the Debian and Python packages, the Docker
engine): their install time is the registries', the same before and after any change here.

Then it times ``DIR/kchaos matrix --quick`` (the checkout given, by default this one) from the start
to the report, and splits it at the first line the matrix itself prints: set-up before it, the
matrix's runs (and any image a run needed first) after it; the matrix's lines (each run's end, each
check's verdict; the known-results table cut short) are printed with their seconds since the start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOME = Path.home()
WIPED = [HOME / ".m2" / "repository",
         *(HOME / ".cache" / "kchaos" / d for d in ("java-driver", "go-driver", "verifiable"))]


def wipe(checkout: Path) -> None:
    """Remove what set-up builds; see the module's docstring."""
    subprocess.run([sys.executable, "-m", "harness", "spark", "stop"], cwd=checkout, capture_output=True)
    tags = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "kchaos/*"],
                          capture_output=True, text=True, check=True).stdout.split()
    if tags:
        subprocess.run(["docker", "rmi", "-f", *tags], capture_output=True, check=True)
    subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True)
    for p in WIPED:
        shutil.rmtree(p, ignore_errors=True)
    for p in (HOME / ".cache" / "kchaos").glob("spark-*.*"):  # the start-up caches (.aot, .jsa), not spark-connect/
        if p.is_file():
            p.unlink()
    subprocess.run(["go", "clean", "-modcache", "-cache"], capture_output=True)
    print(f"wiped {len(tags)} images, {', '.join(map(str, WIPED))}, the Spark start-up cache and Go's caches")


def timed(checkout: Path, out: Path) -> None:
    """Run the quick matrix, noting when its first own line appears (set-up logs to stderr)."""
    t0 = time.monotonic()
    first: list[float] = []
    proc = subprocess.Popen([str(checkout / "kchaos"), "matrix", "--quick", "--out", str(out)], cwd=checkout,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    errs: list[str] = []
    reader = threading.Thread(target=lambda: errs.extend(proc.stderr), daemon=True)
    reader.start()
    lines: list[str] = []
    for line in proc.stdout:
        if not first:
            first.append(time.monotonic() - t0)
        if line.strip():
            lines.append(f"{time.monotonic() - t0:6.1f} s  {line.rstrip()}")
    rc = proc.wait()
    reader.join()
    wall = time.monotonic() - t0
    setup = first[0] if first else wall
    print("".join(errs[-40:]), end="")
    print("\n".join(lines[:60]))
    print(f"exit {rc}: {wall:.0f} s to the report ({int(wall // 60)} min {wall % 60:.0f} s); set-up {setup:.0f} s, "
          f"the matrix {wall - setup:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wipe", action="store_true", help="required: remove what set-up builds, then time")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the kchaos checkout to time (default: this one)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    if not a.wipe:
        ap.error("--wipe is required: this benchmark deletes images and caches to start as a fresh machine")
    wipe(a.checkout)
    timed(a.checkout, a.out or Path(tempfile.mkdtemp(prefix="kchaos-first-run-")) / "m")


if __name__ == "__main__":
    main()
