"""Finding, installing and starting the Docker engine.

Machines of this project's kind ship a Docker client but no engine, and every
session (and CI) starts without one; so the harness itself installs Debian's
docker.io and starts dockerd when nothing answers, instead of asking a person to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException

from harness.waiting import until

DOCKERD_LOG = Path(os.environ.get("KCHAOS_DOCKERD_LOG", "/var/log/kchaos-dockerd.log"))
# Debian packages the set-up needs, by a command each installs: the engine, Maven, and libfaketime
# for a Java client's clock_skew (the faketime command's package brings the library). The base
# image needs only apt and dpkg-deb, which every Debian system has.
APT_PACKAGES = {"dockerd": "docker.io", "mvn": "maven", "faketime": "faketime"}


class EngineError(RuntimeError):
    """The Docker engine is missing or will not start; the message says what to do."""


@dataclass
class EngineStatus:
    ok: bool
    detail: str
    server_version: str | None = None


LOCAL_SOCKETS = ("unix:///var/run/docker.sock", "unix:///run/docker.sock")
DOCKERD_PID = Path("/var/run/docker.pid")
PROBE_TIMEOUT_S = 5  # an engine answers a ping in milliseconds, even beside a loaded suite


def running_dockerd() -> int | None:
    """The pid of the dockerd this machine runs (its pid file names a live process), else None."""
    try:
        pid = int(DOCKERD_PID.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def foreign_host() -> str | None:
    """DOCKER_HOST when it names an engine other than this machine's local socket."""
    host = os.environ.get("DOCKER_HOST", "")
    return host if host and host not in LOCAL_SOCKETS else None


def startable() -> bool:
    """Whether starting dockerd here could give an engine that answers."""
    return foreign_host() is None and running_dockerd() is None


def what_fixes_it() -> str:
    """The command or step that gives an engine that answers, for the situation at hand."""
    if (host := foreign_host()) is not None:
        return (f"DOCKER_HOST is {host}: start the engine it names, or unset DOCKER_HOST for this "
                "machine's, which `kchaos doctor --fix` installs and starts")
    if (pid := running_dockerd()) is not None:
        return (f"dockerd (pid {pid}) runs but does not answer: stop it (kill {pid}; its log {DOCKERD_LOG}) "
                "and run `kchaos doctor --fix` to start another")
    return "Run `kchaos doctor --fix` to install and start one."


def client(timeout: int = 120) -> docker.DockerClient:
    """A docker SDK client; raises EngineError with a plain explanation if none answers."""
    try:
        c = docker.from_env(timeout=timeout)
        c.ping()
        return c
    except DockerException as e:
        raise EngineError(f"no Docker engine answers ({e.__class__.__name__}: {e}). {what_fixes_it()}") from e


def status() -> EngineStatus:
    try:
        c = client(timeout=PROBE_TIMEOUT_S)
        v = c.version().get("Version")
        c.close()
        return EngineStatus(True, f"Docker engine {v} answers", v)
    except EngineError as e:
        return EngineStatus(False, str(e))


def missing_packages() -> list[str]:
    """Debian packages whose commands are not on PATH (dockerd may live in /usr/sbin)."""
    missing = []
    for cmd, pkg in APT_PACKAGES.items():
        if not (shutil.which(cmd) or Path("/usr/sbin", cmd).exists()):
            missing.append(pkg)
    return missing


def install_packages(packages: list[str], log=print) -> None:
    """apt-get install what is missing; needs root, which this machine kind gives."""
    if not packages:
        return
    if os.geteuid() != 0:
        raise EngineError(f"missing Debian packages {packages}; run: sudo apt-get install -y {' '.join(packages)}")
    log(f"installing Debian packages: {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env)
    proc = subprocess.run(
        ["apt-get", "install", "-y", "-qq", *packages], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise EngineError(f"apt-get install {' '.join(packages)} failed: {proc.stderr.strip()[-500:]}")


def start_dockerd(log=print, wait_s: float = 60.0) -> None:
    """Start dockerd in the background, detached from this process, and wait until it answers."""
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    if not Path(dockerd).exists():
        raise EngineError("dockerd is not installed; run `kchaos doctor --fix` (installs Debian's docker.io)")
    if os.geteuid() != 0:
        raise EngineError("dockerd must be started as root: sudo dockerd &")
    DOCKERD_LOG.parent.mkdir(parents=True, exist_ok=True)
    log(f"starting dockerd (log: {DOCKERD_LOG})")
    with open(DOCKERD_LOG, "ab") as out:
        subprocess.Popen(
            [dockerd], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    try:
        until(lambda: status().ok, wait_s, "dockerd did not answer", 0.5, error=EngineError)
    except EngineError as e:
        tail = DOCKERD_LOG.read_text(errors="replace").strip().splitlines()[-10:]
        raise EngineError(f"{e}; last log lines:\n" + "\n".join(tail)) from None


def ensure_engine(install: bool = True, log=print) -> docker.DockerClient:
    """Return a client to a running engine, installing and starting one if allowed and if starting
    one can help (not when DOCKER_HOST names another engine, or this machine's dockerd runs but
    does not answer: a second would not start)."""
    st = status()
    if st.ok:
        return client()
    if not startable():
        raise EngineError(st.detail)
    if not install:
        raise EngineError("no Docker engine answers; run `kchaos doctor --fix`")
    install_packages([p for p in missing_packages() if p == "docker.io"], log=log)
    start_dockerd(log=log)
    return client()
