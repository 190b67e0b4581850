"""A kept cluster that ``kchaos run`` reuses: ``kchaos up SCENARIO`` boots the cluster a scenario's
settings describe and serves runs on it until Ctrl-C; a ``kchaos run`` whose scenario has those
settings and may share a cluster (harness/run/kept_cluster.py) hands its run to that process instead
of booting a cluster of its own.

The process that owns the cluster runs the workload: its containers, proxies and the reaper's
watchdog stay where they are, so nothing outlives it whatever happens to a ``kchaos run`` that used
it. The two talk over a Unix socket (``multiprocessing.connection``, the standard library's
authenticated message channel): the run's scenario and directory go one way, the run's log lines
and its result the other. Each served run gets a topic of its own, as a matrix's cells do; runs are
served one at a time, a second ``kchaos run`` waiting for the first. A ``kchaos run`` stopped by
Ctrl-C leaves the served run to end, and its directory is then removed: nothing half-written stays.

Each serving process registers itself in ``~/.cache/kchaos/kept/KEY.json`` (KEY: a digest of its
cluster settings) and removes the file when it stops; a file whose process is gone is ignored and
removed by whoever finds it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path

from harness.cluster.settings import ClusterSettings
from harness.run.kept_cluster import KeptCluster, may_share_a_cluster, with_topic_and_ids_of_its_own
from harness.run.result import RunResult
from harness.scenario import Scenario
from harness.setup.java import cache_dir

Log = Callable[[str], None]


class ServedRunFailed(RuntimeError):
    """The serving process could not carry the run out; the message is its reason."""


def registry() -> Path:
    return cache_dir() / "kept"


def settings_key(settings: ClusterSettings) -> str:
    """A digest of everything that shapes the cluster: two scenarios may share one iff their keys match."""
    return hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Served:
    """A serving process, as its registry file says: where to reach it and with what key."""

    pid: int
    socket: str
    authkey: str
    cluster: str  # the cluster's name, for what ``kchaos run`` prints

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return Path(self.socket).exists()


def find(s: Scenario) -> Served | None:
    """The serving process whose cluster has ``s``'s settings, if ``s`` may share a cluster and one is up."""
    if not may_share_a_cluster(s):
        return None
    f = registry() / f"{settings_key(s.cluster_settings())}.json"
    try:
        served = Served(**json.loads(f.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if not served.alive():
        f.unlink(missing_ok=True)
        return None
    return served


def run_on(served: Served, s: Scenario, out: Path, scenario_file: str | None, overrides: list[str],
           log: Log, on_started: Callable[[], None] | None = None) -> RunResult:
    """Hand run ``s`` (into ``out``) to the serving process and relay its log; its result, or
    ServedRunFailed with the reason it gave. ``on_started`` is called once the run is handed over
    (this process then only waits)."""
    with Client(served.socket, family="AF_UNIX", authkey=served.authkey.encode()) as conn:
        conn.send({"scenario": s.model_dump(mode="json"), "out": str(Path(out).resolve()),
                   "scenario_file": scenario_file, "overrides": overrides})
        if on_started is not None:
            on_started()
        while True:
            msg = conn.recv()
            if "log" in msg:
                log(msg["log"])
            elif "error" in msg:
                raise ServedRunFailed(msg["error"])
            else:
                r = msg["done"]
                return RunResult(**{**r, "path": Path(r["path"])})


class Service:
    """The serving side: ``kchaos up SCENARIO``'s cluster and the loop that runs what it is handed."""

    def __init__(self, s: Scenario, kept: KeptCluster, execute: Callable[..., RunResult] | None = None):
        """``execute`` runs a scenario on the kept cluster (``kept.execute`` unless a test gives its own)."""
        self.scenario = s
        self.kept = kept
        self.execute = execute or kept.execute
        self.key = settings_key(s.cluster_settings())
        self.authkey = secrets.token_hex(16)
        # a Unix socket's path must fit in 108 bytes: a short directory of its own under the system's temp
        self.dir = Path(tempfile.mkdtemp(prefix="kchaos-kept-", dir="/tmp"))
        self.served = 0
        self._stop = threading.Event()

    @contextlib.contextmanager
    def listening(self, cluster_name: str) -> Iterator[Listener]:
        """The socket and the registry file, both removed however the service ends."""
        sock = self.dir / "sock"
        listener = Listener(str(sock), family="AF_UNIX", authkey=self.authkey.encode())
        entry = registry() / f"{self.key}.json"
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(Served(os.getpid(), str(sock), self.authkey, cluster_name))))
        tmp.replace(entry)
        try:
            yield listener
        finally:
            listener.close()
            with contextlib.suppress(OSError, ValueError):
                if json.loads(entry.read_text()).get("pid") == os.getpid():
                    entry.unlink()
            shutil.rmtree(self.dir, ignore_errors=True)

    def serve(self, listener: Listener, log: Log) -> None:
        """Accept and run one request after another until ``stop``."""
        while not self._stop.is_set():
            try:
                conn = listener.accept()
            except OSError:  # the listener was closed: the service is stopping
                return
            with conn:
                self.handle(conn, log)

    def stop(self) -> None:
        self._stop.set()

    def handle(self, conn: Connection, log: Log) -> None:
        """One request: the scenario run on the kept cluster on a topic of its own, its log lines
        relayed while the requester listens; a requester that went away gets its directory removed."""
        try:
            req = conn.recv()
        except (EOFError, OSError):
            return
        s = Scenario.model_validate(req["scenario"])
        if s.cluster_settings() != self.scenario.cluster_settings() or not may_share_a_cluster(s):
            _send(conn, {"error": f"this cluster ({self.key}) serves scenarios of other settings, or {s.name} may "
                                  "not share a cluster"})
            return
        self.served += 1
        out = Path(req["out"])
        listening = True

        def relay(line: str) -> None:
            nonlocal listening
            listening = listening and _send(conn, {"log": line})

        log(f"serving {s.name} into {out}")
        try:
            res = self.execute(with_topic_and_ids_of_its_own(s, f"up{os.getpid()}-{self.served}"), out, True,
                               scenario_file=req.get("scenario_file"), overrides=req.get("overrides") or [],
                               log=relay)
        except Exception as e:  # the run could not be carried out: the requester says so and exits
            _send(conn, {"error": f"{type(e).__name__}: {e}"})
            return
        if not _send(conn, {"done": {**asdict(res), "path": str(res.path)}}) or not listening:
            shutil.rmtree(res.path, ignore_errors=True)  # no one is left to check or keep it
            log(f"{s.name}: its requester went away; {res.path} removed")


def _send(conn: Connection, msg: dict) -> bool:
    """Send ``msg``; False when the other side has gone."""
    try:
        conn.send(msg)
        return True
    except (OSError, EOFError, BrokenPipeError):
        return False
