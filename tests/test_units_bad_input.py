"""Bad input a user can give is refused with exit 2, one line naming the file or option and what is
allowed, before any container starts, and nothing half-written is left. Each case runs the command
line in this process (typer's runner), with Docker's address pointing nowhere: none reaches it."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.setup import engine
from tests.histories import History

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "scenarios" / "smoke.toml"


def kchaos(*args: str):
    return CliRunner().invoke(app, list(args), env={"DOCKER_HOST": "unix:///nonexistent/kchaos-test.sock",
                                                     "COLUMNS": "200"})


def refused(res, *words: str) -> str:
    """The one line of a refusal, after checking it is exit 2 without a traceback and names ``words``."""
    text = res.output
    assert (res.exit_code == 2 and res.exception is None) or isinstance(res.exception, SystemExit), \
        f"{res.exit_code} {res.exception!r} {text[-2000:]}"
    assert res.exit_code == 2, text[-2000:]
    assert "Traceback" not in text, text[-2000:]
    line = next(x for x in text.splitlines() if "bad input" in x or "Error" in x or "Invalid" in x)
    for w in words:
        assert w in text, f"{w!r} not in: {text[-1000:]}"
    return line


def test_a_scenario_that_is_a_directory_is_refused(tmp_path):
    refused(kchaos("run", str(tmp_path)), str(tmp_path), "is a directory")


def test_a_scenario_that_is_not_utf8_is_refused_naming_the_file(tmp_path):
    f = tmp_path / "x.toml"
    f.write_bytes(b"name = \"\xff\xfe\"\n")
    refused(kchaos("run", str(f)), str(f), "not UTF-8")


@pytest.mark.parametrize("name", ["a b", "", ".", "..", "x" * 250, "caf\u00e9"])
def test_a_topic_name_kafka_refuses_is_refused(name):
    refused(kchaos("run", str(SMOKE), "--set", f'topic.name="{name}"'), "topic.name", "is not a Kafka topic name")


@pytest.mark.parametrize(("setting", "words"), [
    ("topic.config.retention.mss=1000", ["topic.config.retention.mss", "no topic config", "retention.ms"]),
    ("broker_config.num.network.threads=lots", ["broker_config.num.network.threads", "'lots' is not an integer"]),
    ("topic.config.cleanup.policy=compakt", ["topic.config.cleanup.policy", "allowed: compact, delete"]),
    ("broker_config.num.network.threads=0", ["broker_config.num.network.threads", "out of range", "[1,...]"]),
    ("topic.config.retention.ms=forever", ["topic.config.retention.ms", "not an integer"]),
    ("broker_config.auto.create.topics.enable=yes", ["allowed: true, false"]),
])
def test_a_topic_config_or_broker_property_kafka_refuses_is_refused(setting, words):
    """Against the version's own config definitions (harness/scenario/config_defs.json), before any
    container: a name it does not define (with the names it is close to), a value it would not parse
    or its validator would refuse."""
    refused(kchaos("run", str(SMOKE), "--set", setting), *words)


@pytest.mark.parametrize("setting", ["topic.config.retention.ms=60000", 'topic.config.cleanup.policy="compact,delete"',
                                     'broker_config.inter.broker.protocol.version="3.9"',
                                     "broker_config.listener.name.internal.foo=x"])
def test_a_topic_config_or_broker_property_kafka_takes_is_taken(setting):
    from harness.scenario.loading import load

    assert load(SMOKE, [setting])


def test_the_config_checks_follow_what_each_validator_says():
    """value_problem on built definitions: a type's parse, a Range's bounds, a list of allowed values
    (case-insensitive when it says so, each element of a list type), and a validator whose text
    does not say all it allows (an API version) left to the broker."""
    from harness.scenario.config_defs import value_problem

    assert value_problem("7", "INT", "Range", "[1,...,5]") == "7 is out of range (allowed: [1,...,5])"
    assert value_problem("-1", "LONG", "Range", "[...,10]") is None
    assert value_problem("2147483648", "INT", None, None).endswith("is not an integer (a int)")
    assert value_problem("0.5", "DOUBLE", "Range", "[0.0,...,1.0]") is None
    assert value_problem("DELETE", "LIST", "ValidList", "[compact, delete]") is not None
    assert value_problem("DISABLED", "STRING", "CaseInsensitiveValidString", "(case insensitive) [disabled, x]") is None
    assert value_problem("0.10.2", "STRING", "ApiVersionValidator", "[0.10.2-IV0, 0.11.0-IV0]") is None
    assert value_problem("TRUE", "BOOLEAN", None, None) is None


def test_run_out_that_exists_is_refused_before_any_image_is_looked_at(tmp_path):
    refused(kchaos("run", str(SMOKE), "--out", str(tmp_path)), "--out", "already exists")


def test_run_out_under_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    refused(kchaos("run", str(SMOKE), "--out", str(tmp_path / "f" / "run")), "--out", "cannot be created")


@pytest.mark.parametrize("budget", ["0", "0m", "-5m", "nan"])
def test_a_hunt_budget_that_leaves_no_time_is_refused(budget, tmp_path):
    refused(kchaos("hunt", "smoke", "--budget", budget, "--out", str(tmp_path / "h")), "--budget")
    assert not (tmp_path / "h").exists(), "nothing written"


def test_a_refusal_that_holds_brackets_is_printed_whole(tmp_path):
    """The terminal's markup must not eat a message's own brackets (``[min, max]``, a list of values)."""
    line = refused(kchaos("hunt", str(SMOKE), "--runs", "1", "--set", "hunt.faults=[3, 1]",
                          "--out", str(tmp_path / "h")))
    assert "faults: [3, 1] is not [min, max] with 0 <= min <= max" in line, line


def test_a_hunt_of_no_runs_is_refused(tmp_path):
    refused(kchaos("hunt", "smoke", "--runs", "0", "--out", str(tmp_path / "h")), "--runs", "1 or more")


@pytest.mark.parametrize("seeds", ["0", "-2"])
def test_a_matrix_of_no_seeds_is_refused(seeds, tmp_path):
    refused(kchaos("matrix", "--scenarios", "smoke", "--seeds", seeds, "--out", str(tmp_path / "m")), "--seeds")


def test_a_matrix_of_no_clusters_at_a_time_is_refused(tmp_path):
    refused(kchaos("matrix", "--quick", "--side-by-side", "0", "--out", str(tmp_path / "m")), "--side-by-side",
            "1 or more")


def test_a_matrix_whose_options_leave_no_run_is_refused(tmp_path):
    refused(kchaos("matrix", "--scenarios", "smoke", "--versions", "2.8.2", "--modes", "kraft",
                   "--out", str(tmp_path / "m")), "leave no run")


def test_report_to_a_directory_is_refused_and_leaves_nothing(tmp_path):
    d = History().clean(5).write(tmp_path / "run")
    out = tmp_path / "out"
    out.mkdir()
    refused(kchaos("report", str(d), "-o", str(out)), "-o", "is a directory")
    assert not list(tmp_path.glob("**/*.partial")), "no half-written report"


def _run_with(tmp_path: Path, **run) -> Path:
    h = History()
    h.clean(6, partition=0)
    h.clean(4, partition=2)
    h.run.update(run)
    return h.write(tmp_path / "run")


def test_a_run_json_that_names_another_topic_than_the_data_is_refused(tmp_path):
    from harness.history import HistoryError, validate

    d = _run_with(tmp_path, topics=[{"name": "renamed", "replication_factor": 3,
                                     "config": {"min.insync.replicas": "2"}}])
    with pytest.raises(HistoryError, match=r"run\.json: topics: lists \['renamed'\], but produced\.parquet holds "
                                           r"writes to \['t'\]"):
        validate(d)
    refused(kchaos("check", str(d)), "topics", "renamed")


@pytest.mark.parametrize(("partitions", "message"), [
    (-3, r"topics\.0\.partitions.*greater than or equal to 1"),
    (2, r"topics\.0\.partitions: 2, but produced\.parquet holds writes to partition 2 of t")])
def test_a_run_json_partition_count_the_data_contradicts_is_refused(tmp_path, partitions, message):
    from harness.history import HistoryError, validate

    d = _run_with(tmp_path, topics=[{"name": "t", "partitions": partitions, "replication_factor": 3}])
    with pytest.raises(HistoryError, match=message):
        validate(d)


def test_a_run_json_that_agrees_with_the_data_is_taken(tmp_path):
    from harness.history import validate

    d = _run_with(tmp_path, topics=[{"name": "t", "partitions": 3, "replication_factor": 3}])
    assert validate(d).config.topics[0].partitions == 3


def test_a_group_commit_mode_outside_the_contract_is_refused(tmp_path):
    from harness.history import HistoryError, validate

    d = _run_with(tmp_path, groups=[{"name": "g", "commit": "sometimes"}])
    with pytest.raises(HistoryError, match=r"run\.json: key 'groups\.0\.commit': Input should be 'auto', 'sync' or "
                                           r"'async'"):
        validate(d)


def test_a_null_group_commit_is_judged_as_sync_and_said():
    """run.json's null commit is its absence: the group is judged as committing after processing, and
    the assumptions say so (not a commit mode called "None")."""
    from harness.checker.judge import declared_groups
    from harness.history import RunConfig

    notes: list[str] = []
    groups = declared_groups(RunConfig.model_validate({"groups": [{"name": "g", "commit": None}]}), notes, {"g"})
    assert groups["g"]["commit"] is None and notes == [
        "group g: run.json's commit is null: assumed to commit after processing (commit=sync)"]


def test_a_missing_run_directory_is_named_as_missing(tmp_path):
    refused(kchaos("check", str(tmp_path / "nope")), "no such run directory")


def test_a_spark_endpoint_nothing_answers_at_fails_within_seconds(tmp_path):
    d = History().clean(5).write(tmp_path / "run")
    t0 = time.monotonic()
    res = kchaos("check", str(d), "--spark-master", "sc://127.0.0.1:1")
    assert res.exit_code == 3, res.output[-2000:]
    assert "nothing answers at 127.0.0.1:1" in res.output and "leave out --spark-master" in res.output
    assert time.monotonic() - t0 < 30


@contextlib.contextmanager
def silent_listener(family: int, address) -> Iterator[None]:
    """A server at ``address`` that accepts every connection and never answers: a hung engine."""
    server = socket.socket(family)
    server.bind(address)
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                held.append(server.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        for c in [*held, server]:
            c.close()


def test_a_spark_endpoint_that_never_answers_fails_within_its_probe_time(tmp_path, monkeypatch):
    from harness.checker import warm

    monkeypatch.setattr(warm, "PROBE_S", 3.0)
    d = History().clean(5).write(tmp_path / "run")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with silent_listener(socket.AF_INET, ("127.0.0.1", port)):
        t0 = time.monotonic()
        res = kchaos("check", str(d), "--spark-master", f"sc://127.0.0.1:{port}")
        waited = time.monotonic() - t0
    assert res.exit_code == 3, res.output[-2000:]
    assert f"sc://127.0.0.1:{port}: accepts connections but ran no Spark job within 3 s" in res.output
    assert waited < 20 and not (d / "verdict.json").exists()


def test_a_docker_engine_that_never_answers_fails_within_seconds_naming_docker_host(tmp_path):
    sock = tmp_path / "docker.sock"
    with silent_listener(socket.AF_UNIX, str(sock)):
        t0 = time.monotonic()
        res = CliRunner().invoke(app, ["run", str(SMOKE), "--out", str(tmp_path / "r")],
                                 env={"DOCKER_HOST": f"unix://{sock}", "COLUMNS": "200"})
        waited = time.monotonic() - t0
    assert res.exit_code == 3 and "Traceback" not in res.output, res.output[-2000:]
    assert "Read timed out" in res.output and f"DOCKER_HOST is unix://{sock}: start the engine it names" in res.output
    assert waited < engine.PROBE_TIMEOUT_S + 10 and not (tmp_path / "r").exists()


def test_a_local_dockerd_that_does_not_answer_is_named_and_not_started_again(tmp_path, monkeypatch):
    """dockerd runs (its pid file names a live process) but its socket does not answer: a second
    dockerd would not start, so the set-up says which process to stop instead of starting one."""
    sock, pid_file = tmp_path / "docker.sock", tmp_path / "docker.pid"
    pid_file.write_text(str(os.getpid()))
    monkeypatch.setattr(engine, "DOCKERD_PID", pid_file)
    monkeypatch.setattr(engine, "LOCAL_SOCKETS", (f"unix://{sock}",))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    monkeypatch.setattr(engine, "start_dockerd", lambda **_: pytest.fail("a second dockerd was started"))
    with silent_listener(socket.AF_UNIX, str(sock)), pytest.raises(engine.EngineError) as e:
        engine.ensure_engine(install=True, log=lambda m: None)
    assert f"dockerd (pid {os.getpid()}) runs but does not answer: stop it (kill {os.getpid()}" in str(e.value)


@pytest.mark.parametrize(("option", "value"), [("--unavailable-ms", "-5"), ("--examples", "-1")])
def test_check_options_out_of_range_are_named(tmp_path, option, value):
    d = History().clean(5).write(tmp_path / "run")
    refused(kchaos("check", str(d), option, value), option)


def test_a_verdict_json_kchaos_did_not_write_is_named_by_report(tmp_path):
    d = History().clean(5).write(tmp_path / "run")
    (d / "verdict.json").write_text('{"run_id": "x"}')
    refused(kchaos("report", str(d), "-o", str(tmp_path / "r.html")), "verdict.json: not a verdict kchaos wrote")
    assert not list(tmp_path.glob("**/*.partial"))


def test_an_isr_wait_too_short_to_tell_a_frozen_isr_is_refused():
    refused(kchaos("run", str(SMOKE), "--set", "isr_wait_s=1"), "isr_wait_s", "5")


def test_a_defect_of_kchaos_exits_3_with_its_traceback_not_1_which_is_a_broken_promise(monkeypatch, capsys):
    """A hunt whose kept cluster never answered a topic creation ended with a traceback and exit 1,
    which a benchmark (and a CI job) read as "findings". An exception no verb handled exits 3; a
    verb's own exit code passes through."""
    from harness import cli

    def crash() -> None:
        raise RuntimeError("something kchaos did not expect")

    monkeypatch.setattr(cli, "app", crash)
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == cli.EXIT_NOT_RUN == 3
    out = capsys.readouterr()
    assert "something kchaos did not expect" in out.err and "kchaos failed" in out.out

    def broken() -> None:
        raise SystemExit(cli.EXIT_BROKEN)

    monkeypatch.setattr(cli, "app", broken)
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == 1
