"""`kchaos doctor`: what is missing, in plain words, and the command that fixes it."""

from __future__ import annotations

import importlib.util
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from harness.cluster import reaper
from harness.cluster.disks import FUSE_DEVICE
from harness.setup import engine, images

PY_MODULES = {
    "confluent_kafka": "confluent-kafka",
    "testcontainers": "testcontainers",
    "docker": "docker",
    "pyspark": "pyspark",
    "pyarrow": "pyarrow",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def check_python() -> Check:
    missing = [pkg for mod, pkg in PY_MODULES.items() if importlib.util.find_spec(mod) is None]
    if missing:
        return Check("python packages", False, f"missing: {', '.join(missing)}", "pip install -e '.[test]'")
    return Check("python packages", True, "all present")


def check_tools() -> Check:
    missing = engine.missing_packages()
    no_go = shutil.which("go") is None
    no_java = shutil.which("java") is None
    parts = [f"Debian packages {', '.join(missing)}"] if missing else []
    if no_go:
        parts.append("go (builds Toxiproxy)")
    if no_java:
        parts.append("java (Spark runs in it)")
    if parts:
        fix = f"kchaos doctor --fix (apt-get install {' '.join(missing)})" if missing else "install the Go toolchain"
        return Check("build tools", False, "missing: " + "; ".join(parts), fix)
    return Check("build tools", True, "dockerd, mvn, go and java are installed")


def check_engine() -> Check:
    st = engine.status()
    return Check("docker engine", st.ok, st.detail, "" if st.ok else "kchaos doctor --fix (starts dockerd)")


def check_images(versions: list[str] | None = None) -> Check:
    """The images set-up builds (base, Toxiproxy, the default Kafka version's); other versions'
    images are built when a command first needs them, so their absence is only reported."""
    try:
        c = engine.client(timeout=10)
    except engine.EngineError:
        return Check("images", False, "cannot tell without an engine", "kchaos doctor --fix")
    wanted = versions or images.set_up_versions()
    miss = images.missing(c, wanted)
    if miss:
        return Check("images", False, "not built: " + ", ".join(r.tag for r in miss), "kchaos images")
    later = sorted({r.version for r in images.missing(c) if r.version})
    detail = f"{len(images.all_refs(wanted))} images built and current"
    if later:
        detail += f"; built on first use: Kafka {', '.join(later)}"
    return Check("images", True, detail)


def check_fuse() -> Check:
    """The disk faults serve a log directory through FUSE inside the broker's container: the host must
    have the FUSE device to hand it in. Only scenarios with a disk fault need it, and a run of one
    without it stops before its cluster starts (setup.cluster_images), so set-up does not require it."""
    if os.path.exists(FUSE_DEVICE):
        return Check("disk faults", True, f"{FUSE_DEVICE} is there for the pass-through log directories")
    return Check("disk faults", False, f"no {FUSE_DEVICE} on this machine: scenarios with disk_full, disk_error, "
                 "slow_disk or log_dir_failure cannot run (every other fault can)",
                 "modprobe fuse (the kernel's FUSE module)")


def check_leftovers() -> Check:
    try:
        c = engine.client(timeout=10)
    except engine.EngineError:
        return Check("leftovers", True, "no engine, so nothing can be left running")
    inv = reaper.inventory(c)
    dead = [x for x in inv if not x.owner_alive]
    live = [x for x in inv if x.owner_alive]
    if dead:
        names = ", ".join(f"{x.kind} {x.name}" for x in dead[:8])
        more = f" and {len(dead) - 8} more" if len(dead) > 8 else ""
        return Check("leftovers", False, f"{len(dead)} left by runs that are gone: {names}{more}",
                     "kchaos doctor --fix (removes them)")
    detail = "no leftover containers or networks"
    if live:
        detail += f" ({len(live)} belong to runs still in progress)"
    return Check("leftovers", True, detail)


def check_spark_archive() -> Check:
    """Optional: without the start-up cache every check is about 5 s slower (setup.cds)."""
    from harness.setup import cds, java

    p = cds.archive_path()
    if p is None:
        return Check("spark start-up", True, "no java found, so no start-up cache")
    binary = java.binary()  # not None: the cache is named after it
    runtime = f"java {java.feature_version(binary)} at {binary}"
    if p.is_file():
        return Check("spark start-up", True, f"{runtime}, start-up cache {p}")
    return Check("spark start-up", True, f"{runtime}, no start-up cache yet: each check is about 5 s slower",
                 "kchaos doctor --fix (builds it, about 45 s)")


def check_warm_spark() -> Check:
    """Informational: whether the warm check server is up (it starts on the first check)."""
    from harness.checker import warm

    info = warm.read_info()
    if info is None or not warm.alive(info):
        return Check("warm spark", True, "not running; the next check starts it")
    return Check("warm spark", True, f"Spark {info.spark_version} at {info.url}, pid {info.pid}",
                 "kchaos spark stop (or kchaos doctor --fix) stops it")


def check_client_builds() -> list[Check]:
    """Each client library that needs a build (its record's ``build`` in clients/registry.py), built
    per Kafka version the first time a scenario uses it there: set-up builds none, since the default
    library needs none and a first run should not wait for one it does not use."""
    from harness.clients.registry import builds
    from harness.versions import KAFKA_VERSIONS

    checks = []
    for name, build in builds().items():
        have = [v for v in KAFKA_VERSIONS if build.built(v)]
        built = f"built for Kafka {', '.join(have)}" if have else "not built yet"
        checks.append(Check(f"{name} driver", True, f"{built}; a version is built the first time a scenario uses it"))
    return checks


def run_checks(required_only: bool = False) -> list[Check]:
    """Every check, in the order the table shows them. ``required_only``: only those every command
    needs to pass, which a quiet set-up asks: not the informational ones, which never fail (the client
    builds, whose check alone imports every client library's module, the Spark start-up cache, the
    warm server), nor FUSE, which only the disk faults need and whose runs refuse without it."""
    required = [check_python(), check_tools(), check_engine(), check_images(), check_leftovers()]
    if required_only:
        return required
    return [*required[:4], *check_client_builds(), required[4], check_spark_archive(), check_warm_spark(),
            check_fuse()]


def fix(log=print, stop_spark: bool = True) -> None:
    """Install, start, build and clean whatever the checks found missing; stop the warm Spark
    server unless told to keep it (``./kchaos`` sets up on every call and keeps it).

    After the Debian packages, the independent steps run side by side: the engine, then the Kafka
    images of the default and the catalogue's versions with the base under them (built beside
    Kafka's jar downloads); Toxiproxy (its Go build needs no engine until its image). Each is idle
    much of its time (downloads, the engine), which is what two cores can overlap. A client
    library's build (the Java driver) and the disk faults' file system wait for the first scenario
    that uses them, and the Spark start-up cache, which only speeds checks up, is built in the
    background (cds.build_in_background): the first runs need none of it."""
    from harness.checker import warm
    from harness.setup import cds

    engine.install_packages(engine.missing_packages(), log=log)
    if stop_spark and warm.stop():
        log("stopped the warm Spark server (the next check starts a new one)")
    with ThreadPoolExecutor(max_workers=5, thread_name_prefix="kchaos-setup") as pool:
        client = pool.submit(_engine, log)
        steps = [
            pool.submit(lambda: _base_and_kafka(client.result(), log)),
            pool.submit(lambda: images.build_toxiproxy(client.result(), log)),
        ]
        for step in steps:
            step.result()  # the first failure, as it would have been one step at a time
    cds.build_in_background(log)


def _base_and_kafka(client, log) -> None:
    """The Kafka images set-up builds, side by side (their jar downloads beside each other and
    beside the base's, which both wait for)."""
    with ThreadPoolExecutor(max_workers=len(images.set_up_versions()), thread_name_prefix="kchaos-kafka") as pool:
        for built in [pool.submit(images.build_kafka, client, v, log) for v in images.set_up_versions()]:
            built.result()


def _engine(log) -> object:
    """A client to a running engine (installed and started if need be), leftovers removed."""
    client = engine.ensure_engine(install=True, log=log)
    n = reaper.reap_orphans(client)
    if n:
        log(f"removed {n} leftover containers/networks")
    return client
