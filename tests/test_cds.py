"""The Spark driver's runtime and start-up cache: the bundled Java runs Spark, and the cache is
named by what would make it stale, used when it fits, and ignored without a word when it does not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.setup import cds, java

# Starts the driver JVM with the given extra options and runs one small job; prints "ok <n>".
SESSION = """
import sys
from harness.checker.session import spark_session
s = spark_session("local[*]", jvm_options=sys.argv[1])
r = s.range(1000)
print("ok", r.groupBy((r.id % 7).alias("k")).count().count())
"""


def _session(options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SESSION, options], capture_output=True, text=True, timeout=180)


def test_archive_name_changes_with_the_spark_jars(tmp_path, monkeypatch):
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "a.jar").write_bytes(b"x")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = cds.archive_path()
    assert first is not None and first.parent == tmp_path / "cache" / "kchaos"
    assert cds.archive_path() == first  # stable
    (jars / "b.jar").write_bytes(b"y")
    assert cds.archive_path() != first
    assert cds.java_options() == ""  # nothing built for these jars


@pytest.mark.spark
def test_the_driver_runs_on_the_bundled_java_and_maps_the_built_cache():
    """The strict option (-XX:AOTMode=on, or -Xshare:on on older runtimes) makes the JVM refuse to
    start unless it can use the cache for Spark's class path."""
    assert java.binary() is not None and java.feature_version(java.binary()) >= cds.AOT_VERSION
    said: list[str] = []
    p = cds.build(log=said.append)  # set-up's build in the background, waited for (or built here)
    assert p is not None and p.is_file(), said
    out = _session(f"{cds.java_options()} {cds.strict_option(p)}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ok 7" in out.stdout
    assert "incubator" not in out.stderr and "not in java.base" not in out.stderr  # the options the shim drops
    assert "[warning]" not in out.stderr  # 25.0.2 warns of cached stubs it cannot reuse unless aot* logs are off


@pytest.mark.spark
# A Spark session started without a usable cache: a cold start of a minute or more beside the
# suite's clusters, so both kinds (the bundled Java's, and older runtimes' by KCHAOS_JAVA_HOME) run in
# the long tier.
@pytest.mark.chaos_long
@pytest.mark.parametrize("suffix", [".aot", ".jsa"])
def test_an_unusable_cache_is_ignored_silently(tmp_path, monkeypatch, suffix):
    bad = tmp_path / f"bad{suffix}"
    bad.write_bytes(b"not a cache" * 100)
    if suffix == ".jsa":  # the archive kind of older runtimes: checked on one when the machine has it
        old = Path("/usr/lib/jvm/java-17-openjdk-amd64")
        if not (old / "bin" / "java").is_file():
            pytest.skip("no Java 17 here")
        monkeypatch.setenv("KCHAOS_JAVA_HOME", str(old))
    out = _session(cds.options_for(bad))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ok 7" in out.stdout
    err = out.stderr.lower()
    assert "shared archive" not in err and "cds" not in err and "aot" not in err


def test_build_leaves_no_partial_file_when_the_jvm_fails(tmp_path, monkeypatch):
    """A failed build says so and leaves nothing behind: checks then run without an archive."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KCHAOS_JAVA_HOME", str(tmp_path / "jdk"))
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'no JVM here' >&2\nexit 1\n")
    java.chmod(0o755)
    said: list[str] = []
    assert cds.build(log=said.append, timeout_s=120) is None
    assert said and "not built" in said[0]
    left = [p.name for p in Path(tmp_path / "cache" / "kchaos").iterdir()]
    assert left == ["spark-start-up-cache.lock"], "nothing but the lock one build at a time takes"


def test_a_build_removes_only_caches_no_check_has_used_lately(tmp_path, monkeypatch):
    """Installs may share the cache directory: a check marks the cache it uses, and a build removes
    only the caches nobody has used for UNUSED_DAYS, not another install's live one."""
    d = tmp_path / "kchaos"
    d.mkdir()
    mine, live, old = d / "spark-4.3.0-aaaa.aot", d / "spark-3.5.9-bbbb.jsa", d / "spark-4.3.0-cccc.aot"
    for f in (mine, live, old):
        f.write_bytes(b"x")
    month_ago = time.time() - 30 * 86400
    for f in (mine, old):
        os.utime(f, (month_ago, month_ago))
    monkeypatch.setattr(cds, "archive_path", lambda: mine)
    assert cds.java_options().startswith(f"-XX:AOTCache={mine}")
    assert mine.stat().st_mtime > month_ago, "using the cache marks it used"
    assert cds.remove_unused(mine) == [old]
    assert sorted(d.iterdir()) == sorted([mine, live])
