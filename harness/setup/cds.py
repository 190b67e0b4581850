"""A start-up cache for the Spark driver's JVM.

Loading, parsing and verifying Spark's classes, and compiling its hot methods, is a large part of
every ``kchaos check``, whatever the history's size. ``kchaos doctor --fix`` builds a cache once, by
reconciling a tiny built-in history in a training run, so it holds what a reconciliation loads:

- on Java 25 and later (the bundled runtime, see java), an ahead-of-time cache (JEP 483, 514,
  515): classes loaded and linked, and method profiles, so the JIT compiles the hot ones sooner.
  About 3 s faster per check than Java 17 with a class-data archive (25 s against 28 s at 1M
  records, 75 s against 78 s at 10M);
- on older runtimes, a dynamic class-data archive (JDK 13 and later): about 5 s of start-up.

The cache's name carries a hash of everything that would make it stale: the java binary and
Spark's version and jar set. A missing cache costs only the time; one the JVM cannot use (it
checks the class path itself) is ignored, silently, and classes load as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from harness.setup import java as jre
from harness.setup.java import cache_dir
from harness.setup.tools import build_lock

AOT_VERSION = 25  # the first runtime whose cache is written in one training run (-XX:AOTCacheOutput)
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # an unusable archive must not print to the user
QUIET_AOT = "-Xlog:aot*=off -Xlog:cds*=off"  # aot* too: 25.0.2 warns of stubs it cannot reuse
UNUSED_DAYS = 14  # a cache no check has used for this long belongs to an install that is gone


def _spark_jars() -> Path:
    import pyspark

    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


def aot(java: Path) -> bool:
    return jre.feature_version(java) >= AOT_VERSION


def archive_path() -> Path | None:
    """Where the cache for this java and this Spark lives (None: no java found)."""
    import pyspark

    java = jre.binary()
    if java is None:
        return None
    st = java.stat()
    h = hashlib.sha256(f"{java}|{st.st_size}|{st.st_mtime_ns}|{pyspark.__version__}".encode())
    jars = _spark_jars()
    for j in sorted(jars.iterdir()) if jars.is_dir() else []:
        h.update(f"|{j.name}:{j.stat().st_size}".encode())
    return cache_dir() / f"spark-{pyspark.__version__}-{h.hexdigest()[:16]}.{'aot' if aot(java) else 'jsa'}"


def options_for(p: Path) -> str:
    """The driver JVM options that use the cache at ``p`` (its kind is in its name)."""
    return f"-XX:AOTCache={p} {QUIET_AOT}" if p.suffix == ".aot" else f"-XX:SharedArchiveFile={p} {QUIET}"


def strict_option(p: Path) -> str:
    """The option that makes the JVM refuse to start unless it can use the cache at ``p`` (for tests)."""
    return "-XX:AOTMode=on" if p.suffix == ".aot" else "-Xshare:on"


def java_options() -> str:
    """The driver JVM options that use the cache, or "" when there is none."""
    p = archive_path()
    if p is None or not p.is_file():
        return ""
    with contextlib.suppress(OSError):  # marks it in use: a build for another install leaves it alone
        os.utime(p)
    return options_for(p)


def remove_unused(keep: Path, days: float = UNUSED_DAYS) -> list[Path]:
    """Remove the caches beside ``keep`` that no check has used for ``days``; returns them.

    Other caches in the directory may belong to other installs sharing it (another virtualenv
    with another Spark or Java): each check touches the cache it uses, so only abandoned ones go.
    """
    cutoff = time.time() - days * 86400
    gone = []
    for other in [*keep.parent.glob("spark-*.jsa"), *keep.parent.glob("spark-*.aot")]:
        with contextlib.suppress(OSError):
            if other != keep and other.stat().st_mtime < cutoff:
                other.unlink()
                gone.append(other)
    return gone


def build(log=print, timeout_s: float = 300, nice: int = 0) -> Path | None:
    """Build the cache if it is missing, in a child process; returns its path (None: no java).

    The child reconciles a tiny history and lets its JVM exit normally, which is when the JVM
    writes the cache; it is written under a temporary name and renamed only when complete, so a
    concurrent ``kchaos check`` never maps half a file. One build at a time on a machine: a second
    caller waits for the first and finds the cache built.
    """
    p = archive_path()
    if p is None or p.is_file():
        return p
    with build_lock("spark-start-up-cache"):
        return p if p.is_file() else _train(p, log, timeout_s, nice)


def _train(p: Path, log, timeout_s: float, nice: int) -> Path | None:
    p.parent.mkdir(parents=True, exist_ok=True)
    remove_unused(p)
    tmp = p.with_name(f".{p.stem}.{os.getpid()}.tmp{p.suffix}")
    t0 = time.monotonic()
    try:
        subprocess.run(["nice", "-n", str(nice), sys.executable, "-m", "harness.checker.cds_training", str(tmp)],
                       check=True, timeout=timeout_s, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not tmp.is_file():
            raise RuntimeError(f"the JVM wrote no cache at {tmp}")
        tmp.replace(p)
    except (subprocess.SubprocessError, RuntimeError, OSError) as e:
        detail = getattr(e, "stderr", "") or ""
        log(f"Spark start-up cache not built (checks still work, only slower to start): {e} {detail[-500:]}")
        return None
    finally:
        tmp.unlink(missing_ok=True)
    log(f"built the Spark start-up cache in {time.monotonic() - t0:.0f} s: {p}")
    return p


BACKGROUND_LOG = "spark-start-up-cache.log"


def build_in_background(log=print) -> bool:
    """Start building the cache in a process of its own and return at once (False: there is nothing
    to build). Only a check needs the cache, and one without it works, about 5 s slower to start:
    so set-up does not wait the minute or two its training takes. The process waits for the
    machine to be idle (the command that set-up ran for, a first matrix, goes first), trains at the
    lowest CPU priority, and ends once the cache is written (or its training failed, which its log
    says); a check that starts before then runs without it."""
    p = archive_path()
    if p is None or p.is_file():
        return False
    out = cache_dir() / BACKGROUND_LOG
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        subprocess.Popen([sys.executable, "-m", "harness.setup.cds"], stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                         start_new_session=True)
    log(f"building the Spark start-up cache in the background (log: {out})")
    return True


IDLE_SHARE = 0.6  # the machine counts as idle when this share of its CPU time is idle
IDLE_SAMPLE_S = 5.0
IDLE_WAIT_MAX_S = 900.0  # train by then however busy the machine is


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies since boot, from /proc/stat's first line."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)  # idle + iowait


def wait_until_idle(share: float = IDLE_SHARE, sample_s: float = IDLE_SAMPLE_S,
                    most_s: float = IDLE_WAIT_MAX_S) -> float:
    """Return once two samples in a row find the CPU idle at least ``share`` of the time, or after
    ``most_s``; the seconds waited."""
    t0, calm, before = time.monotonic(), 0, _cpu_times()
    while time.monotonic() - t0 < most_s and calm < 2:
        time.sleep(sample_s)
        now = _cpu_times()
        idle, total = now[0] - before[0], now[1] - before[1]
        calm = calm + 1 if total > 0 and idle / total >= share else 0
        before = now
    return time.monotonic() - t0


def _main(now: bool) -> None:
    """``python -m harness.setup.cds``: the background build (waits for an idle machine, then trains
    at the lowest priority); with ``--now``, build at once and return when the cache exists (the
    test command, whose suite would otherwise never leave the machine idle)."""
    def log(m: str) -> None:
        print(time.strftime("%H:%M:%S"), m, flush=True)

    p = archive_path()
    if p is None or p.is_file():
        return
    if now:
        build(log=log)
        return
    waiting = (cache_dir() / "spark-start-up-cache.waiting.lock").open("a")
    try:  # one background build waits at a time: set-up runs before every command
        fcntl.flock(waiting, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    log(f"waited {wait_until_idle():.0f} s for an idle machine")
    build(log=log, nice=19)


if __name__ == "__main__":
    _main(now="--now" in sys.argv[1:])
