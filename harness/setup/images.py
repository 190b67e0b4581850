"""Building every image kchaos runs, locally, without a container registry.

Each recipe is tagged by a hash of its inputs, so a second build is a no-op:
- the JRE 17 base: Debian's packages unpacked side by side, then ``docker import``
  (harness/setup/base_image.py; or a pullable image named by KCHAOS_BASE_IMAGE, on machines
  that can pull);
- Kafka per version: Apache Kafka's own jars resolved on Maven Central by ``mvn``;
  the same image runs ZooKeeper, brokers, KRaft controllers and Kafka's tools;
- Toxiproxy: ``go install`` of its server from its Go module, in a scratch image;
- a cluster with faultable disks: its Kafka image with the disk faults' file system (a Go build of
  docker/diskfs) added on top, built the first time a cluster needs one (``with_diskfs``).

Set-up builds the base, Toxiproxy, and the Kafka images of the default version and the catalogue's
(``set_up_versions``); any other version's image is built the first time a command needs it
(``ensure``). Each build holds a
machine-wide lock, so two processes that need one image at once build it once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

from harness.setup import base_image
from harness.setup.tools import build_lock, resolve_jars, run_tool
from harness.versions import CATALOGUE_VERSION, DEFAULT_VERSION, KafkaVersion, all_versions, get_version

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = Path(os.environ.get("KCHAOS_DOCKER_DIR", REPO_ROOT / "docker"))
DISKFS_DIR = DOCKER_DIR / "diskfs"  # the disk faults' pass-through file system (Go)
EPOCHS_DIR = DOCKER_DIR / "epochs"  # drives a transactional.id's producer epoch up before a run (Go)
TOXIPROXY_SERVER_DIR = DOCKER_DIR / "toxiproxy" / "server"  # Toxiproxy's server with kchaos's Kafka toxics (Go)
TOXIPROXY_VERSION = "v2.12.0"  # the Toxiproxy module its go.mod requires
RECIPE_REVISION = "2"  # bump to force every image to rebuild

Log = Callable[[str], None]


class ImageError(RuntimeError):
    """An image cannot be built; the message names the step and its output."""


@dataclass(frozen=True)
class ImageRef:
    kind: str  # "base" | "toxiproxy" | "kafka" | "upgrade" | "diskfs"
    tag: str
    version: str | None = None


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def _files_digest(directory: Path) -> bytes:
    out = []
    for f in sorted(directory.rglob("*")):
        if f.is_file():
            out.append(f.relative_to(directory).as_posix().encode() + b"\0" + f.read_bytes())
    return b"\0".join(out)


def _base_packages() -> list[str]:
    lines = (DOCKER_DIR / "base" / "packages.txt").read_text().splitlines()
    return [x.strip() for x in lines if x.strip() and not x.startswith("#")]


def base_ref() -> ImageRef:
    pulled = os.environ.get("KCHAOS_BASE_IMAGE")
    if pulled:
        return ImageRef("base", pulled)
    h = _digest(RECIPE_REVISION, base_image.debian_release(), ",".join(_base_packages()))
    return ImageRef("base", f"kchaos/jre17:{h}")


def toxiproxy_ref() -> ImageRef:
    h = _digest(RECIPE_REVISION, TOXIPROXY_VERSION, _files_digest(DOCKER_DIR / "toxiproxy"))
    return ImageRef("toxiproxy", f"kchaos/toxiproxy:{TOXIPROXY_VERSION.lstrip('v')}-{h}", TOXIPROXY_VERSION)


def kafka_ref(version: str | KafkaVersion) -> ImageRef:
    kv = version if isinstance(version, KafkaVersion) else get_version(version)
    h = _digest(
        RECIPE_REVISION, base_ref().tag, kv.version, ",".join(kv.maven_artifacts()), _files_digest(DOCKER_DIR / "kafka")
    )
    return ImageRef("kafka", f"kchaos/kafka:{kv.version}-{h}", kv.version)


def upgrade_ref(version: str, later: list[str]) -> ImageRef:
    """The image of a cluster that starts on ``version`` and is rolled to each of ``later``."""
    h = _digest(RECIPE_REVISION, kafka_ref(version).tag, *(kafka_ref(v).tag for v in later),
                _files_digest(DOCKER_DIR / "upgrade"))
    return ImageRef("upgrade", f"kchaos/kafka-upgrade:{version}-to-{'-'.join(later)}-{h}", version)


def diskfs_ref(under: str) -> ImageRef:
    """Image ``under`` (a Kafka or upgrade image's tag) with kchaos-diskfs added."""
    repo, _, tag = under.rpartition(":")
    h = _digest(RECIPE_REVISION, under, _files_digest(DISKFS_DIR))
    return ImageRef("diskfs", f"{repo}-diskfs:{tag.rsplit('-', 1)[0]}-{h}")


def all_refs(versions: list[str] | None = None) -> list[ImageRef]:
    kvs = [get_version(v) for v in versions] if versions else all_versions()
    return [base_ref(), toxiproxy_ref(), *(kafka_ref(kv) for kv in kvs)]


def exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def missing(client: docker.DockerClient, versions: list[str] | None = None) -> list[ImageRef]:
    return [r for r in all_refs(versions) if not exists(client, r.tag)]


def _run(cmd: list[str], what: str, cwd: Path | None = None, env: dict | None = None) -> None:
    run_tool(cmd, what, ImageError, cwd=cwd, env=env)


def _docker_build(client: docker.DockerClient, ctx: Path, tag: str, buildargs: dict[str, str]) -> None:
    try:
        client.images.build(path=str(ctx), tag=tag, buildargs=buildargs, pull=False, rm=True, forcerm=True)
    except BuildError as e:
        lines = [str(x.get("stream", x.get("error", ""))).strip() for x in e.build_log]
        raise ImageError(f"docker build of {tag} failed: {e.msg}\n" + "\n".join(lines[-15:])) from e


def set_up_versions() -> list[str]:
    """The Kafka versions set-up builds before any command asks: the default one and the
    catalogue's (the main job and the test suite run both)."""
    return list(dict.fromkeys([DEFAULT_VERSION, CATALOGUE_VERSION]))


def _once(client: docker.DockerClient, ref: ImageRef, build: Callable[[], None]) -> str:
    """``ref``'s tag, built by ``build`` unless it exists, under the lock for that image."""
    if exists(client, ref.tag):
        return ref.tag
    with build_lock(f"image-{ref.kind}{'-' + ref.version if ref.kind == 'kafka' else ''}"):
        if not exists(client, ref.tag):  # another process may have built it while this one waited
            build()
    return ref.tag


def build_base(client: docker.DockerClient, log: Log) -> str:
    return _once(client, base_ref(), lambda: _build_base(client, log))


def _build_base(client: docker.DockerClient, log: Log) -> None:
    ref = base_ref()
    if os.environ.get("KCHAOS_BASE_IMAGE"):
        log(f"pulling base image {ref.tag}")
        client.images.pull(ref.tag)
        return
    log(f"building base {ref.tag} from Debian's packages ({', '.join(_base_packages()[:3])}, ...)")
    try:
        base_image.assemble(_base_packages(), ref.tag, log)
    except base_image.BaseImageError as e:
        raise ImageError(str(e)) from e


def build_toxiproxy(client: docker.DockerClient, log: Log) -> str:
    return _once(client, toxiproxy_ref(), lambda: _build_toxiproxy(client, log))


def _build_toxiproxy(client: docker.DockerClient, log: Log) -> None:
    """Toxiproxy's server with kchaos's Kafka-protocol toxics (docker/toxiproxy/server): a static Go
    binary built against Toxiproxy's module, in an image of its own."""
    ref = toxiproxy_ref()
    log(f"building {ref.tag} (go build of docker/toxiproxy/server, Toxiproxy {TOXIPROXY_VERSION})")
    with tempfile.TemporaryDirectory(prefix="kchaos-toxi-") as tmp:
        ctx = Path(tmp)
        shutil.copy2(DOCKER_DIR / "toxiproxy" / "Dockerfile", ctx / "Dockerfile")
        _run(["go", "build", "-trimpath", "-o", str(ctx / "toxiproxy-server"), "."], "go build toxiproxy",
             cwd=TOXIPROXY_SERVER_DIR, env={**os.environ, "CGO_ENABLED": "0"})
        _docker_build(client, ctx, ref.tag, {})


def diskfs_binary(log: Log) -> Path:
    """The disk faults' pass-through file system (docker/diskfs, docs/disks-and-clocks.md), a static
    Go binary: built once per machine and source, the first time a cluster with faultable disks
    needs it (no quick matrix cell does, so a new machine's set-up does not build it)."""
    return _go_binary("kchaos-diskfs", DISKFS_DIR, log)


def epochs_binary(log: Log) -> Path:
    """kchaos-epochs (docker/epochs), which drives a transactional.id's producer epoch up before a run
    (a producer's ``epoch_from``): built once per machine and source, the first time a run needs it."""
    return _go_binary("kchaos-epochs", EPOCHS_DIR, log)


def _go_binary(name: str, src: Path, log: Log) -> Path:
    """A static Go binary of the module in ``src``, built into the machine's cache once per source."""
    from harness.setup.java import cache_dir

    out = cache_dir() / f"{name}-{_digest(RECIPE_REVISION, _files_digest(src))}"
    if out.exists():
        return out
    with build_lock(name):
        if not out.exists():
            log(f"building {name} (go build of {src.relative_to(REPO_ROOT) if src.is_relative_to(REPO_ROOT) else src})")
            tmp = out.with_name(out.name + ".tmp")
            _run(["go", "build", "-trimpath", "-o", str(tmp), "."], f"go build {name}", cwd=src,
                 env={**os.environ, "CGO_ENABLED": "0"})
            tmp.rename(out)
    return out


def with_diskfs(client: docker.DockerClient, under: str, log: Log) -> str:
    """Image ``under`` with kchaos-diskfs at /usr/local/bin, where the entrypoint starts it under each
    log directory of a node with faultable disks: one layer on top, built on first use."""
    ref = diskfs_ref(under)

    def build() -> None:
        log(f"building {ref.tag}: {under} with the disk faults' file system")
        with tempfile.TemporaryDirectory(prefix="kchaos-diskfs-") as tmp:
            ctx = Path(tmp)
            shutil.copy2(diskfs_binary(log), ctx / "kchaos-diskfs")
            (ctx / "Dockerfile").write_text(
                f"FROM {under}\nCOPY kchaos-diskfs /usr/local/bin/kchaos-diskfs\n"
                "LABEL org.kchaos.diskfs=1\n")
            _docker_build(client, ctx, ref.tag, {})

    return _once(client, ref, build)


def build_kafka(client: docker.DockerClient, version: str, log: Log) -> str:
    return _once(client, kafka_ref(version), lambda: _build_kafka(client, version, log))


def _build_kafka(client: docker.DockerClient, version: str, log: Log) -> None:
    """Kafka's jars resolved while the base image is built (on a new machine both are downloads),
    then the image on that base."""
    kv = get_version(version)
    ref = kafka_ref(kv)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kchaos-base") as pool:
        base = pool.submit(build_base, client, log)
        log(f"building {ref.tag} from Maven Central ({', '.join(kv.maven_artifacts())})")
        with tempfile.TemporaryDirectory(prefix=f"kchaos-kafka-{kv.version}-") as tmp:
            ctx = Path(tmp)
            shutil.copytree(DOCKER_DIR / "kafka", ctx, dirs_exist_ok=True)
            resolve_jars(kv.maven_artifacts(), "kafka-runtime", ctx, ctx / "libs", f"mvn resolve Kafka {kv.version}",
                         ImageError)
            _docker_build(client, ctx, ref.tag, {"BASE": base.result(), "KAFKA_VERSION": kv.version})


def build_upgrade(client: docker.DockerClient, version: str, later: list[str], log: Log) -> str:
    """The rolling-upgrade image from ``version`` to ``later`` (each version's own image first)."""
    ref = upgrade_ref(version, later)
    if exists(client, ref.tag):
        return ref.tag
    tags = {v: build_kafka(client, v, log) for v in [version, *later]}
    with build_lock(f"image-upgrade-{version}-{'-'.join(later)}"):
        if not exists(client, ref.tag):
            log(f"building {ref.tag}: Kafka {version} with the jars of {', '.join(later)} beside it")
            with tempfile.TemporaryDirectory(prefix="kchaos-upgrade-") as tmp:
                ctx = Path(tmp)
                shutil.copytree(DOCKER_DIR / "upgrade", ctx, dirs_exist_ok=True)
                (ctx / "Dockerfile").write_text(upgrade_dockerfile(tags[version], {v: tags[v] for v in later}))
                _docker_build(client, ctx, ref.tag, {})
    return ref.tag


def upgrade_dockerfile(first: str, later: dict[str, str]) -> str:
    """One node image for a rolling upgrade: image ``first`` with each later version's jars beside
    its own under /opt/kafka-versions/V/libs, and /opt/kafka/libs a link to the version the node
    runs: its own until the harness names another in /var/lib/kafka/kchaos-version of the stopped
    container (harness/cluster/upgrades.py). The data directories stay: the same container, its own
    files. Every FROM is a local tag; nothing is pulled."""
    stages = [f"FROM {tag} AS v{i}" for i, tag in enumerate(later.values())]
    copies = [f"COPY --from=v{i} /opt/kafka/libs/ /opt/kafka-versions/{v}/libs/" for i, v in enumerate(later)]
    return "\n".join([
        *stages, f"FROM {first}", *copies,
        "COPY kchaos-upgrade-entrypoint.sh /opt/kafka/bin/kchaos-upgrade-entrypoint.sh",
        "RUN mkdir -p /opt/kafka-versions/${KAFKA_VERSION}"
        " && mv /opt/kafka/libs /opt/kafka-versions/${KAFKA_VERSION}/libs"
        " && ln -s /opt/kafka-versions/${KAFKA_VERSION}/libs /opt/kafka/libs"
        " && chmod 0755 /opt/kafka/bin/kchaos-upgrade-entrypoint.sh",
        f"LABEL org.kchaos.upgrade-to={','.join(later)}",
        'ENTRYPOINT ["/opt/kafka/bin/kchaos-upgrade-entrypoint.sh"]', 'CMD ["broker"]', ""])


def build_all(client: docker.DockerClient, versions: list[str] | None = None, log: Log = print) -> list[ImageRef]:
    """Build what is missing of the images for ``versions`` (every version when None); return every
    ref. Already-present tags cost one inspect each."""
    refs = all_refs(versions)
    todo = [r for r in refs if not exists(client, r.tag)]
    if not todo:
        log("all images up to date")
        return refs
    for r in todo:
        if r.kind == "base":
            build_base(client, log)
        elif r.kind == "toxiproxy":
            build_toxiproxy(client, log)
        else:
            assert r.version is not None
            build_kafka(client, r.version, log)
    return refs


class Prefetch:
    """Kafka images built in a thread while a command's first runs go on: a matrix needs only its
    first cell's image before it starts, and each later version's when that version's first cell
    comes (``wait``). On a new machine the quick matrix's second version builds during its first
    run instead of before it."""

    def __init__(self, client: Callable[[], docker.DockerClient], versions: list[str], log: Log = print):
        self._built = {v: threading.Event() for v in versions}
        self._errors: dict[str, Exception] = {}
        self._thread = threading.Thread(target=self._build, args=(client, list(versions), log),
                                        name="image-prefetch", daemon=True)
        self._thread.start()

    def _build(self, client: Callable[[], docker.DockerClient], versions: list[str], log: Log) -> None:
        for v in versions:
            try:
                ensure(client(), [v], log)
            except Exception as e:  # kept for the cell that needs the image: it is recorded as not carried out
                self._errors[v] = e
            finally:
                self._built[v].set()

    def wait(self, version: str) -> None:
        """Return once ``version``'s image is built (at once for a version not prefetched); raise
        ImageError when its build failed."""
        if version in self._built:
            self._built[version].wait()
        if version in self._errors:
            raise ImageError(f"Kafka {version}'s image could not be built: {self._errors[version]}")


def ensure(client: docker.DockerClient, versions: list[str], log: Log = print) -> None:
    """Build the images a cluster of each of ``versions`` runs that this machine does not have yet:
    what a command does before its first container, the first time it needs a version."""
    todo = missing(client, versions)
    for r in todo:
        if r.kind == "kafka":
            log(f"first use of Kafka {r.version} on this machine: building its image")
    if todo:
        build_all(client, versions, log)
