"""Label-based cleanup: no container or network outlives the run that made it.

Testcontainers' Ryuk cannot be pulled here (no registry), and its Go module is
not served by the Go proxy, so kchaos does the same job itself:

- every container and network it creates carries ``kchaos.session`` (one id per
  process), ``kchaos.pid`` and ``kchaos.host`` labels;
- a watchdog process (``python -m harness.cluster.reaper SESSION``), started in its own
  session so a Ctrl-C or a SIGKILL of the run does not reach it, blocks reading a
  pipe from the run; when the pipe closes (clean exit or SIGKILL alike) it removes
  everything labelled with that session;
- at start-up, and in ``kchaos doctor --fix``, resources whose owning pid on this
  host is gone are removed, in case even the watchdog was killed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass

import docker
from docker.errors import APIError, NotFound

LABEL = "kchaos"
LABEL_SESSION = "kchaos.session"
LABEL_PID = "kchaos.pid"
LABEL_HOST = "kchaos.host"

SESSION_ID = uuid.uuid4().hex[:12]
_watchdog: subprocess.Popen | None = None
_lock = threading.Lock()


def labels(**extra: str) -> dict[str, str]:
    """Labels every kchaos resource carries; ``extra`` adds e.g. the cluster id and role."""
    return {
        LABEL: "1",
        LABEL_SESSION: SESSION_ID,
        LABEL_PID: str(os.getpid()),
        LABEL_HOST: socket.gethostname(),
        **extra,
    }


def start_watchdog() -> None:
    """Start the session's watchdog once; idempotent and cheap after the first call."""
    global _watchdog
    with _lock:
        if _watchdog is not None and _watchdog.poll() is None:
            return
        _watchdog = subprocess.Popen(
            [sys.executable, "-m", "harness.cluster.reaper", SESSION_ID],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        atexit.register(_close_watchdog)


def _close_watchdog() -> None:
    if _watchdog is not None and _watchdog.stdin is not None:
        with contextlib.suppress(OSError):
            _watchdog.stdin.close()


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGHUP into SystemExit so ``finally`` blocks stop clusters cleanly."""

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit)



def die_with_parent() -> None:
    """For ``preexec_fn``: the child is SIGKILLed when the thread that started it ends (the kernel's
    PR_SET_PDEATHSIG), so no child of a run outlives it, even a SIGKILLed run."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Leftover:
    kind: str  # container | network
    name: str
    session: str
    pid: str
    owner_alive: bool


def _pid_alive(pid: str, host: str) -> bool:
    if host != socket.gethostname():
        return True  # another host's run: not ours to judge
    try:
        os.kill(int(pid), 0)
        return True
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True


def _containers(client: docker.DockerClient, label_filter: str) -> list[dict]:
    """Containers matching a label filter, from the list call alone.

    `containers.list()` inspects each listed container in a second call; one removed in between
    (by a run's own watchdog, cleaning up at that moment) raised NotFound out of the listing.
    """
    return client.api.containers(all=True, filters={"label": label_filter})


def inventory(client: docker.DockerClient) -> list[Leftover]:
    """Every kchaos container and network, and whether the run that owns it is still alive."""
    out = []
    for c in _containers(client, LABEL):
        lb = c.get("Labels") or {}
        name = (c.get("Names") or ["/" + c["Id"][:12]])[0].lstrip("/")
        out.append(Leftover("container", name, lb.get(LABEL_SESSION, "?"), lb.get(LABEL_PID, "?"),
                            _pid_alive(lb.get(LABEL_PID, "0"), lb.get(LABEL_HOST, ""))))
    for n in client.networks.list(filters={"label": LABEL}):
        lb = n.attrs.get("Labels") or {}
        out.append(Leftover("network", n.name, lb.get(LABEL_SESSION, "?"), lb.get(LABEL_PID, "?"),
                            _pid_alive(lb.get(LABEL_PID, "0"), lb.get(LABEL_HOST, ""))))
    return out


def remove(client: docker.DockerClient, label_filter: str) -> int:
    """Remove containers, then networks, matching a label filter; returns how many went."""
    n = 0
    for c in _containers(client, label_filter):
        try:
            client.api.remove_container(c["Id"], force=True, v=True)
            n += 1
        except NotFound:
            pass
        except APIError:
            pass
    for net in client.networks.list(filters={"label": label_filter}):
        for attempt in range(5):
            try:
                net.remove()
                n += 1
                break
            except NotFound:
                break
            except APIError:
                time.sleep(0.5 * (attempt + 1))
    return n


def reap_orphans(client: docker.DockerClient) -> int:
    """Remove resources of runs whose process is gone (e.g. killed along with its watchdog)."""
    dead = {x.session for x in inventory(client) if not x.owner_alive}
    return sum(remove(client, f"{LABEL_SESSION}={s}") for s in dead)


def _watch(session: str) -> None:
    # Immune to the terminal's signals: only the pipe's end means "clean up".
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except OSError:
        pass
    client = docker.from_env(timeout=60)
    remove(client, f"{LABEL_SESSION}={session}")


if __name__ == "__main__":
    _watch(sys.argv[1])
