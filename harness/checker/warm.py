"""The warm Spark a check runs on: one local Spark Connect server per user, started on first use,
shared by every later check (``kchaos run``, ``check``, ``matrix``, the pytest plugin) and stopped
after an idle time.

A cold embedded driver spends most of a small check starting up, planning and compiling; a server
that stays up answers the same job in a second or two. The server listens on loopback only, keeps
its state and log in the cache folder (``server.json``, ``server.log``), and is checked before
every use: a server that died, hangs (no answer within PROBE_S) or runs another Spark version is
killed and replaced, never waited on. One process at a time decides (a file lock), so two checks
starting together share one new server; each check has a Connect session of its own, so their
settings and cached frames never mix. A server is recorded the moment it is spawned, and every
server carries this cache folder in its command line: one whose starter died before recording it
(a killed ``kchaos run`` warming it up) is found by that mark and stopped before another starts.

A watcher process (``python -m harness.checker.warm watch``) stops the server once no check has
used it for KCHAOS_SPARK_IDLE_S seconds (default 900) and none holds it; ``kchaos doctor --fix``
and ``kchaos engine stop`` stop it at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.setup import java
from harness.setup.java import cache_dir

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PROBE_S = float(os.environ.get("KCHAOS_SPARK_PROBE_S", "20"))  # no answer to a tiny job in this: hung
STATE_MARK = "spark.kchaos.stateDir"  # in every server's command line: whose server it is
START_S = 120.0  # how long a new server may take to listen
IDLE_S = float(os.environ.get("KCHAOS_SPARK_IDLE_S", "900"))
PROBE_ERRORS: list[str] = []  # why probes of this process failed, newest last


class WarmSparkError(RuntimeError):
    """The warm server could not be started (its log says why)."""


@dataclass
class ServerInfo:
    pid: int
    port: int
    spark_version: str
    started: float

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def state_dir() -> Path:
    """Where the server's state, lock and log live: KCHAOS_SPARK_STATE, or the cache folder. Servers
    of different state folders are apart: each folder has its own (the tests' has one of its own)."""
    chosen = os.environ.get("KCHAOS_SPARK_STATE")
    d = Path(chosen) if chosen else cache_dir() / "spark-connect"
    d.mkdir(parents=True, exist_ok=True)
    return d


def spark_version() -> str:
    import pyspark

    return pyspark.__version__


# ---------------------------------------------------------------- state and locks

def read_info() -> ServerInfo | None:
    try:
        return ServerInfo(**json.loads((state_dir() / "server.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_info(info: ServerInfo) -> None:
    tmp = state_dir() / f".server.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(asdict(info)))
    tmp.replace(state_dir() / "server.json")


@contextlib.contextmanager
def _flock(name: str, mode: int) -> Iterator[None]:
    with open(state_dir() / name, "a") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _touch() -> None:
    (state_dir() / "last-use").touch()


def last_use() -> float:
    """When a check last used the server (epoch seconds)."""
    try:
        return (state_dir() / "last-use").stat().st_mtime
    except OSError:
        return 0.0


# ---------------------------------------------------------------- the server process

def alive(info: ServerInfo) -> bool:
    """Whether the recorded pid is still a Spark Connect server (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{info.pid}/cmdline").read_bytes()
    except OSError:
        return False
    return SERVER_CLASS.encode() in cmdline


def kill(info: ServerInfo | None) -> None:
    """Stop a recorded server and forget it; SIGKILL after 10 s, or at once if it is frozen."""
    if info is not None and alive(info):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.pid, signal.SIGTERM)
            os.killpg(info.pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while alive(info) and time.monotonic() < deadline:
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.pid, signal.SIGKILL)
    with contextlib.suppress(FileNotFoundError):
        (state_dir() / "server.json").unlink()


def _marked() -> list[int]:
    """Pids of every server started from this cache folder, recorded or not."""
    mark = f"{STATE_MARK}={state_dir()}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if SERVER_CLASS.encode() in cmdline and mark in cmdline.split(b"\0"):
                pids.append(int(proc.name))
    return pids


def _stop_all() -> None:
    """Stop the recorded server and any server of this cache folder that nobody recorded."""
    kill(read_info())
    for pid in _marked():
        kill(ServerInfo(pid, 0, "", 0.0))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_command(port: int) -> list[str]:
    import pyspark

    from harness.checker.spark_conf import driver_conf

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    conf = {**driver_conf(), "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port), STATE_MARK: str(state_dir())}
    args = [str(submit), "--class", SERVER_CLASS, "--name", "kchaos-check", "--master", "local[*]"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return [*args, "spark-internal"]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start() -> ServerInfo:
    """Start a server in a session of its own (it outlives this process), and its idle watcher.
    Called under the lock; every other server of this cache folder is stopped first."""
    _stop_all()
    java.use()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    port = _free_port()
    with open(state_dir() / "server.log", "w") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(_server_command(port), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    info = ServerInfo(proc.pid, port, spark_version(), time.time())
    _write_info(info)  # recorded before it listens: if this process dies now, the next check stops it
    _touch()  # a new server is not idle, whatever the last one was
    subprocess.Popen([sys.executable, "-m", "harness.checker.warm", "watch", str(proc.pid)],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                     start_new_session=True)
    deadline = time.monotonic() + START_S
    while not _listening(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            kill(info)
            tail = (state_dir() / "server.log").read_text(errors="replace")[-2000:]
            raise WarmSparkError(f"the Spark Connect server did not start (log {state_dir() / 'server.log'}):\n{tail}")
        time.sleep(0.2)
    return info


# ---------------------------------------------------------------- sessions

def connect(url: str, timeout_s: float, spark_version: str | None = None):
    """A new Connect session at ``url`` that ran a tiny job (on ``spark_version`` when given), or
    None if it did not in time: an endpoint that accepts connections but never answers would
    otherwise hold a check for ever.

    A session that failed its probe has its client closed: an open client's exit hook sends the
    server a clean-up request and retries it for minutes, which would keep a check whose old server
    hung from exiting long after its verdict is written."""
    from pyspark.sql import SparkSession

    made: list = []
    answered, abandoned = threading.Event(), threading.Event()

    def probe() -> None:
        try:
            made.append(SparkSession.builder.remote(url).create())
            if abandoned.is_set():  # created after the caller gave up on it
                made[0].client.close()
                return
            if spark_version not in (None, made[0].version):
                PROBE_ERRORS.append(f"{url} runs Spark {made[0].version}, not {spark_version}")
            elif made[0].range(3).count() == 3:
                answered.set()
        except Exception as e:  # the server's fault or ours: said when a new server fails too
            PROBE_ERRORS.append(f"{type(e).__name__}: {e}")

    t = threading.Thread(target=probe, name="spark-connect-probe", daemon=True)
    t.start()
    t.join(timeout_s)
    if answered.is_set():
        return made[0]
    abandoned.set()
    for failed in made:
        with contextlib.suppress(Exception):
            failed.client.close()
    return None


def session():
    """A Connect session on the warm server: the running one if it is well, else a new one."""
    with _flock("lock", fcntl.LOCK_EX):
        info = read_info()
        s = connect(info.url, PROBE_S, info.spark_version) if info is not None and alive(info) and \
            info.spark_version == spark_version() else None
        if s is None:
            info = start()
            s = connect(info.url, START_S, info.spark_version)
            if s is None:
                kill(info)
                why = PROBE_ERRORS[-1] if PROBE_ERRORS else "no answer in time"
                raise WarmSparkError(f"a new Spark Connect server did not answer ({why[:500]}; log "
                                     f"{state_dir() / 'server.log'})")
        _touch()
    return s


def ensure_up() -> None:
    """Make sure a server is up, for checks to come. Failures are left to the check, which reports them."""
    with contextlib.suppress(Exception):
        session().stop()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """While a check runs, the idle watcher leaves the server alone."""
    _touch()
    with _flock("in-use", fcntl.LOCK_SH):
        yield
    _touch()


def stop() -> bool:
    """Stop the warm server now; whether one was running."""
    with _flock("lock", fcntl.LOCK_EX):
        info = read_info()
        running = (info is not None and alive(info)) or bool(_marked())
        _stop_all()
    return running


# ---------------------------------------------------------------- the idle watcher

def watch(pid: int, idle_s: float = IDLE_S, every_s: float = 10.0) -> None:
    """Stop server ``pid`` once it has been idle ``idle_s`` and no check holds it; exit when it is gone."""
    while True:
        time.sleep(every_s)
        info = read_info()
        if info is None or info.pid != pid or not alive(info):
            return
        if time.time() - last_use() < idle_s:
            continue
        with open(state_dir() / "in-use", "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a check is running
            with _flock("lock", fcntl.LOCK_EX):
                if (current := read_info()) is not None and current.pid == pid:
                    kill(current)
            return


if __name__ == "__main__" and sys.argv[1:2] == ["watch"]:
    watch(int(sys.argv[2]))
elif __name__ == "__main__" and sys.argv[1:2] == ["start"]:
    ensure_up()
