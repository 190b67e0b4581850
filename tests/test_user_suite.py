"""A user's suite as a user runs it (examples/user-suite/, copied to a folder outside the
repository): several tests in one module on one topic name, both clients parametrised, a catalogue
scenario by name and a hunt, through pytest with the installed plugin. And a fixture's failure as a
user reads it: the test's name and what to change, no traceback from inside kchaos."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.checker import warm
from tests.conftest import require_docker

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "user-suite"
SUITE_SPARK_STATE = str(warm.state_dir())  # found before pytester moves HOME: the suite's warm server


def _as_a_user(pytester, monkeypatch, *args: str):
    monkeypatch.setenv("KCHAOS_SPARK_STATE", SUITE_SPARK_STATE)
    monkeypatch.setenv("LIBC_FATAL_STDERR_", "1")  # glibc's own abort messages on stderr, not the terminal
    # -s: a native library that aborts the process (librdkafka's assertions, glibc's heap checks) writes
    # its reason to fd 2 just before; under pytest's capture that text would die with the process.
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--durations=0", "-s", *args, timeout=1800)


def _what_it_said(res) -> str:
    """The ends of the user's pytest's stdout and stderr, for a failure message: an abort's reason is on stderr."""
    return f"stdout ...{res.stdout.str()[-3000:]}\nstderr ...{res.stderr.str()[-3000:]}"


def test_a_bad_scenario_name_fails_the_test_by_name_with_the_allowed_values(pytester, monkeypatch):
    """Refused before any container starts: the test's node id, the fixture's call and the catalogue's names."""
    pytester.makepyfile(test_typo='def test_typo(chaos_run):\n    chaos_run("safe-fault")\n')
    res = _as_a_user(pytester, monkeypatch, "--kafka-version", "4.4.0")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert re.search(r"test_typo\.py::test_typo\[4\.4\.0-kraft\]: chaos_run\('safe-fault'\): safe-fault: no "
                     r"such scenario file \(allowed: a path to a \.toml file, or a name in the catalogue: "
                     r".*safe-faults", out)
    assert "Traceback" not in out and "harness/" not in out, "no traceback from inside kchaos"
    assert "During handling" not in out, "the message alone, not the error it replaced"


@pytest.mark.docker
@pytest.mark.chaos_long  # a module cluster, four workloads, two scenario runs and a hunt: several minutes
def test_a_users_suite_outside_the_repository_passes_on_a_shared_cluster(pytester, monkeypatch):
    require_docker(["4.4.0", "3.9.1"])
    for f in EXAMPLE.glob("*.py"):
        shutil.copy(f, pytester.path / f.name)
    res = _as_a_user(pytester, monkeypatch, "--kafka-version", "4.4.0", "--kchaos-client", "librdkafka,java")
    out = res.stdout.str()
    assert res.ret == 0 and re.search(r"\b7 passed\b", out), _what_it_said(res)
    for client in ("librdkafka", "java"):
        for test in ("test_orders_survive_their_group_coordinator_isolated", "test_orders_survive_a_leader_kill"):
            assert f"test_orders.py::{test}[4.4.0-kraft-{client}] PASSED" in out or \
                re.search(rf"call .*{test}\[4\.4\.0-kraft-{client}\]", out), _what_it_said(res)


@pytest.mark.docker
@pytest.mark.chaos_long  # a cluster of its own
def test_a_topic_kafka_refuses_fails_the_test_by_name(pytester, monkeypatch):
    require_docker(["4.4.0"])
    pytester.makepyfile(test_rf='def test_rf(workload):\n    workload("orders", replication_factor=5)\n')
    res = _as_a_user(pytester, monkeypatch, "--kafka-version", "4.4.0", "--kafka-quorum", "1")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "test_rf.py::test_rf[4.4.0-kraft]: workload('orders'): topic orders: replication factor 5 is greater " \
           "than the 3 brokers of this cluster (allowed: 1..3)" in out
    assert "Traceback" not in out and "harness/" not in out and "During handling" not in out
