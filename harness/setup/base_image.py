"""The JRE 17 base image, assembled from Debian packages without a chroot.

Every Kafka image stands on a JRE and a few libraries. A chroot's package configuration
(debootstrap: unpack, then run every package's maintainer scripts inside the new root, one after
another) is the slow part of building one, and the image needs almost nothing those scripts do.
So the base is assembled: apt resolves the packages' closure as for an empty system and downloads
it (``apt-get install --download-only`` against an empty dpkg status, so nothing this machine has
installed is left out); each package's files are unpacked side by side (``dpkg-deb
--fsys-tarfile``) into a merged-/usr tree, as Debian 12 lays one out; and the few things the
maintainer scripts would have done that a JVM or the entrypoint needs are done by hand
(``_configure``). The tree goes to ``docker import`` as one tar stream.

The packages come from this machine's apt sources (Debian's registry), so the base is the
machine's Debian release; docker/base/packages.txt lists them.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.setup.tools import run_tool

# Debian 12 merges /usr: these top-level directories are links into it, and packages that still
# ship files under them land in /usr (tar --keep-directory-symlink).
MERGED_USR = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
# What the image does not need of the packages' files: documentation, manuals, translations.
JUNK = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian")
JVM_DIR = "usr/lib/jvm/java-17-openjdk-amd64"
# The commands openjdk-17-jre-headless's maintainer script links into /usr/bin (update-alternatives).
JRE_TOOLS = ("java", "keytool", "rmiregistry")


class BaseImageError(RuntimeError):
    """The base image cannot be assembled: the message names the step and its output."""


@functools.cache
def debian_release() -> str:
    """This machine's Debian release (``bookworm``): the one its apt sources serve, so the base's."""
    try:
        fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    except OSError:
        return "unknown"
    return fields.get("VERSION_CODENAME", "unknown").strip('"')


def download_closure(packages: list[str], into: Path, log: Callable[[str], None]) -> list[Path]:
    """The .deb files of ``packages`` and everything they depend on (not what they recommend), as
    apt resolves them for a system with nothing installed, downloaded into ``into``. Stale package
    lists are refreshed once (a fresh machine may never have read them)."""
    (into / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    status = into / "status"
    status.write_text("")
    cmd = ["apt-get", "install", "-qq", "--download-only", "-y", "--no-install-recommends",
           "-o", f"Dir::State::status={status}", "-o", f"Dir::Cache::archives={into / 'archives'}",
           "-o", "Debug::NoLocking=1", *packages]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        log("reading Debian's package lists (apt-get update)")
        run_tool(["apt-get", "update", "-qq"], "apt-get update", BaseImageError)
        run_tool(cmd, "apt-get download of the base image's packages", BaseImageError)
    return sorted((into / "archives").glob("*.deb"))


def unpack(debs: list[Path], root: Path) -> None:
    """Each package's files into ``root``, a merged-/usr tree, without running any of its scripts.
    Packages are unpacked two at a time: each is a gzip or xz stream, one core's work."""
    for link, target in MERGED_USR.items():
        (root / target).mkdir(parents=True, exist_ok=True)
        (root / link).symlink_to(target)

    def one(deb: Path) -> None:
        data = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        tar = subprocess.run(["tar", "-x", "--keep-directory-symlink", "--no-same-owner", "-C", str(root)],
                             stdin=data.stdout, capture_output=True, text=True)
        data.wait()
        if data.returncode != 0 or tar.returncode != 0:
            raise BaseImageError(f"unpacking {deb.name} failed: {tar.stderr.strip()[-500:]}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, debs))


def _configure(root: Path) -> None:
    """What the packages' maintainer scripts do that the image needs: the accounts base-passwd
    installs, the JRE's commands on the PATH and its preferences directory, the dynamic linker's
    cache (when this process may chroot to build it); and the documentation dropped."""
    passwd = root / "usr/share/base-passwd"
    shutil.copy(passwd / "passwd.master", root / "etc/passwd")
    shutil.copy(passwd / "group.master", root / "etc/group")
    for tool in JRE_TOOLS:
        link = root / "usr/bin" / tool
        if not link.exists():
            link.symlink_to(f"/{JVM_DIR}/bin/{tool}")
    prefs = root / "etc/.java/.systemPrefs"
    prefs.mkdir(parents=True, exist_ok=True)
    for name in (".system.lock", ".systemRootModFile"):
        (prefs / name).touch()
    for d in ("tmp", "var/tmp"):
        (root / d).mkdir(parents=True, exist_ok=True)
        (root / d).chmod(0o1777)
    for junk in JUNK:
        shutil.rmtree(root / junk, ignore_errors=True)
    if os.geteuid() == 0:
        run_tool(["ldconfig", "-r", str(root)], "ldconfig of the base image", BaseImageError)


def import_image(root: Path, tag: str) -> None:
    """``root`` as image ``tag``, every file owned by root."""
    tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "--owner=0", "--group=0", "-c", "."],
                           stdout=subprocess.PIPE)
    imp = subprocess.run(["docker", "import", "--change", "ENV LANG=C.UTF-8", "-", tag], stdin=tar.stdout,
                         capture_output=True, text=True)
    tar.wait()
    if imp.returncode != 0 or tar.returncode != 0:
        raise BaseImageError(f"docker import of {tag} failed: {imp.stderr.strip()}")


def assemble(packages: list[str], tag: str, log: Callable[[str], None]) -> None:
    """Build image ``tag`` from ``packages`` and their dependencies (see the module's text)."""
    with tempfile.TemporaryDirectory(prefix="kchaos-base-") as tmp:
        work = Path(tmp)
        debs = download_closure(packages, work / "apt", log)
        log(f"assembling {tag} from {len(debs)} Debian packages")
        root = work / "rootfs"
        unpack(debs, root)
        _configure(root)
        import_image(root, tag)
