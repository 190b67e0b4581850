"""Every Kafka tool kchaos runs (harness/cluster/kafka_tools.py), on every version kchaos has: one
container per version, no cluster. A release that moves or renames a tool fails here, naming the
tool and the version, instead of in a user's run.

The default tier runs the versions set-up builds (the default version and the catalogue's: one
before and one after DumpLogSegments moved); the long tier every version in harness/versions.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cluster import kafka_tools
from harness.cluster.kafka_tools import MISSING, TOOLS
from harness.setup import engine, images
from harness.versions import CATALOGUE_VERSION, DEFAULT_VERSION, KAFKA_VERSIONS
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

DOCKER = Path(__file__).resolve().parents[1] / "docker"
# What each tool's usage says, whatever the release: the tool ran, not a JVM that found no class.
USAGE = {"kafka-dump-log": "--files", "kafka-metadata-quorum": "--bootstrap-server", "kafka-features": "--bootstrap",
         "kafka-transactions": "--bootstrap-server", "kafka-configs": "--bootstrap-server", "kafka-storage": "format",
         "kafka-reassign-partitions": "--reassignment-json-file", "kafka-cluster": "unregister",
         "kafka-consumer-groups": "--reset-offsets"}


def the_tools_of(version: str, run: tuple[str, ...] = tuple(TOOLS)) -> dict[str, tuple[str, str]]:
    """Each tool resolved in a container of ``version``'s image, and those named in ``run`` run with
    their usage arguments: the class it resolved to (or "" when none) and what it printed."""
    require_docker([version])
    client = engine.client()
    c = client.containers.run(images.kafka_ref(version).tag, ["sleep", "600"], entrypoint=[], detach=True,
                              network_mode="none", labels={"org.kchaos.test": "kafka-tools"})
    try:
        def exec_in(_: str, cmd: list[str]) -> tuple[int, str]:
            res = c.exec_run(cmd)
            return res.exit_code, (res.output or b"").decode(errors="replace")

        out = {}
        for name, tool in TOOLS.items():
            code, cls = exec_in("", kafka_tools.resolve_command(name))
            ran = exec_in("", kafka_tools.command(name, tool.usage))[1] if code == 0 and name in run else ""
            out[name] = (cls.strip() if code == 0 else "", ran) if code in (0, MISSING) else ("?", cls)
        return out
    finally:
        c.remove(force=True)


def assert_every_tool_runs(version: str, run: tuple[str, ...] = tuple(TOOLS)) -> None:
    """Every tool resolves to one of its classes where ``version`` ships it, and none where not; those
    in ``run`` print their usage (a JVM each)."""
    for name, (cls, said) in the_tools_of(version, run).items():
        tool = TOOLS[name]
        if not tool.shipped_by(version):
            assert cls == "", f"{name}: kafka_tools says {version} lacks it, but {cls} is in its jars (move `since`)"
            continue
        assert cls in tool.classes, f"{name}: none of {tool.classes} in Kafka {version}'s jars ({cls!r})"
        if name not in run:
            continue
        assert "Could not find or load main class" not in said and USAGE[name] in said, \
            f"{name} ({cls}) on Kafka {version} did not print its usage: {said[-600:]}"


def assert_the_images_scripts_name_the_resolved_class(version: str) -> None:
    """The image's own scripts (entrypoint, class-data training) run the storage tool by class name:
    it must be the class this version resolves to."""
    cls = the_tools_of(version)["kafka-storage"][0]
    for script in ("kchaos-entrypoint.sh", "kchaos-cds-train.sh"):
        named = set(re.findall(r"[\w.]+\.StorageTool\b", (DOCKER / "kafka" / script).read_text()))
        assert named == {cls}, f"docker/kafka/{script} runs {named}; Kafka {version} has {cls}"


@pytest.mark.parametrize("version", sorted({DEFAULT_VERSION, CATALOGUE_VERSION}))
def test_every_tool_resolves_on_the_set_up_versions_and_the_one_that_moved_runs(version):
    """The default tier resolves every tool and runs DumpLogSegments (in core on 3.9.1, in kafka-tools
    on 4.4.0); the long tier runs each tool on every version."""
    assert_every_tool_runs(version, run=("kafka-dump-log",))


@pytest.mark.chaos_long
@pytest.mark.parametrize("version", [v for v in KAFKA_VERSIONS if v not in (DEFAULT_VERSION, CATALOGUE_VERSION)])
def test_every_tool_resolves_and_runs_on_every_version(version):
    assert_every_tool_runs(version)
    assert_the_images_scripts_name_the_resolved_class(version)
