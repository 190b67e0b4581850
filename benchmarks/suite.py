"""The default suite as CI runs it: a clean clone of HEAD, the warm Spark server stopped first (CI's
machine has none), `CI=true bash .ci/run`; prints the wall time, each test file's seconds (summed
over both workers), how busy the two cores were, and which kinds of process used the CPU.

    python benchmarks/suite.py [--keep-warm-spark] [--clone-dir DIR] [--wipe]

The figures say where the suite's time goes: when the cores are busy throughout, only less work
(fewer JVM starts, fewer cluster boots, shorter checks) makes it faster, not more workers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HZ = os.sysconf("SC_CLK_TCK")
KINDS = (  # the first pattern a process's command line holds names its kind
    ("spark", ("org.apache.spark", "pyspark")),
    ("Kafka and ZooKeeper JVMs", ("kafka.Kafka", "QuorumPeerMain", "kafka.tools")),
    ("client JVMs (the Java driver)", ("kchaos.Driver", "java-driver")),
    ("toxiproxy", ("toxiproxy",)),
    ("docker engine", ("dockerd", "containerd", "docker-proxy", "runc")),
    ("chromium", ("chrom",)),
    ("python (tests, kchaos processes, librdkafka clients)", ("python",)),
)


def kind(cmdline: str) -> str:
    return next((name for name, marks in KINDS if any(m in cmdline for m in marks)), "other")


class CpuSampler(threading.Thread):
    """Each process's CPU seconds while the suite runs, by kind, from /proc every second (a process
    that lives less than a second between two samples is missed; the busy share below is exact)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.first: dict[tuple[str, str], float] = {}
        self.last: dict[tuple[str, str], tuple[str, float]] = {}

    def sample(self, first: bool) -> None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            key, cpu = (pid, stat[19]), (int(stat[11]) + int(stat[12])) / HZ
            if first:
                self.first[key] = cpu
            seen = self.last.get(key)
            self.last[key] = (kind(cmd) if cmd.strip() else (seen[0] if seen else "other"), cpu)

    def run(self) -> None:
        self.sample(first=True)
        while not self.stop.wait(1.0):
            self.sample(first=False)

    def by_kind(self) -> Counter:
        out: Counter = Counter()
        for key, (k, cpu) in self.last.items():
            out[k] += cpu - self.first.get(key, 0.0)
        return out


def busy_jiffies() -> tuple[int, int]:
    f = list(map(int, Path("/proc/stat").read_text().splitlines()[0].split()[1:]))
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep-warm-spark", action="store_true", help="leave a running warm Spark server up")
    ap.add_argument("--clone-dir", type=Path, help="where to clone (default: a new temporary folder)")
    ap.add_argument("--wipe", action="store_true", help="first remove what set-up and the tests build (every "
                    "kchaos image, the client drivers, Maven's and Go's caches: first_run.py's wipe), as on CI's "
                    "fresh machine")
    a = ap.parse_args()
    if a.wipe:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from first_run import wipe

        wipe(ROOT)
    clone = a.clone_dir or Path(tempfile.mkdtemp(prefix="kchaos-suite-"))
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True).stdout
    if not a.keep_warm_spark:
        subprocess.run([sys.executable, "-c", "from harness.checker import warm; warm.stop()"], cwd=ROOT, check=True)
    costs = clone / "file-costs.json"
    sampler = CpuSampler()
    sampler.start()
    busy0, all0 = busy_jiffies()
    t0 = time.monotonic()
    proc = subprocess.run(["bash", ".ci/run"], cwd=clone, capture_output=True, text=True,
                          env={**os.environ, "CI": "true", "KCHAOS_RECORD_FILE_COSTS": str(costs)})
    wall = time.monotonic() - t0
    busy1, all1 = busy_jiffies()
    sampler.stop.set()
    sampler.join()
    summary = [x for x in proc.stdout.splitlines() if " passed" in x or " failed" in x][-1:]
    print(f"commit {head.strip()}, {os.cpu_count()} cores: `CI=true bash .ci/run` on a clean clone, exit "
          f"{proc.returncode}, {wall:.0f} s wall ({' '.join(summary) or 'no pytest summary'})")
    print(f"cores busy {100 * (busy1 - busy0) / max(1, all1 - all0):.0f}% of the time")
    per_file = json.loads(costs.read_text()) if costs.exists() else {}
    print(f"test seconds, summed over the workers: {sum(per_file.values()):.0f} s; the dearest files:")
    for name, s in list(per_file.items())[:12]:
        print(f"  {s:7.1f} s  {name}")
    test_costs = costs.with_suffix(".tests.json")
    per_test = json.loads(test_costs.read_text()) if test_costs.exists() else {}
    print("the dearest tests (setup, call and teardown):")
    for name, s in list(per_test.items())[:30]:
        print(f"  {s:7.1f} s  {name}")
    (clone / "pytest-output.txt").write_text(proc.stdout + proc.stderr)
    print(f"pytest's whole output: {clone / 'pytest-output.txt'}")
    cpu = sampler.by_kind()
    print(f"CPU seconds by kind of process ({sum(cpu.values()):.0f} s in all):")
    for name, s in cpu.most_common():
        print(f"  {s:6.0f} s  {name}")
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
        sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
