"""kafka_tools' resolution, run by ``sh`` on jars the test builds: the first class of a tool's list
that a jar holds wins, none is MISSING naming the tool, and run() tells a missing tool from one that
ran and failed."""

from __future__ import annotations

import subprocess
import zipfile

import pytest

from harness.cluster import kafka_tools
from harness.cluster.kafka_tools import MISSING


def jar(path, *classes: str) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for c in classes:
            z.writestr(c.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe" + c.encode() * 50)


@pytest.fixture()
def libs(tmp_path, monkeypatch):
    monkeypatch.setattr(kafka_tools, "KAFKA_JARS", f"{tmp_path}/kafka*.jar")
    monkeypatch.setattr(kafka_tools, "ENTRYPOINT", "echo ran")
    jar(tmp_path / "other.jar", "org.apache.kafka.tools.DumpLogSegments")  # not Kafka's: never searched
    return tmp_path


def sh(cmd: list[str]) -> tuple[int, str]:
    res = subprocess.run(cmd, capture_output=True, text=True)
    return res.returncode, res.stdout + res.stderr


def test_the_class_a_jar_holds_is_the_one_run(libs):
    jar(libs / "kafka_2.13-3.9.1.jar", "kafka.tools.DumpLogSegments", "kafka.Kafka")
    assert sh(kafka_tools.resolve_command("kafka-dump-log")) == (0, "kafka.tools.DumpLogSegments\n")
    assert sh(kafka_tools.command("kafka-dump-log", ["--files", "a b.log"])) == \
        (0, "ran tool kafka.tools.DumpLogSegments --files a b.log\n")


def test_the_newest_location_wins_where_a_release_has_both(libs):
    jar(libs / "kafka_2.13-4.3.1.jar", "kafka.tools.DumpLogSegments")
    jar(libs / "kafka-tools-4.3.1.jar", "org.apache.kafka.tools.DumpLogSegments")
    assert sh(kafka_tools.resolve_command("kafka-dump-log"))[1] == "org.apache.kafka.tools.DumpLogSegments\n"


def test_no_class_of_the_tool_is_missing_and_named(libs):
    jar(libs / "kafka_2.13-2.8.2.jar", "kafka.Kafka")
    code, out = sh(kafka_tools.command("kafka-transactions", ["--help"]))
    assert code == MISSING and out.startswith("no class of kafka-transactions (org.apache.kafka.tools.Transactions")
    with pytest.raises(kafka_tools.ToolMissing, match="kafka-transactions on kafka-1: no class of"):
        kafka_tools.run(lambda _, cmd: sh(cmd), "kafka-1", "kafka-transactions", ["--help"])


def test_a_tool_that_ran_and_failed_says_its_exit_code_and_output():
    def failing(_: str, cmd: list[str]) -> tuple[int, str]:
        return 1, "Exception in thread main: bad segment\n"

    with pytest.raises(kafka_tools.ToolError, match=r"failed on kafka-2 \(exit 1\): .*bad segment") as e:
        kafka_tools.run(failing, "kafka-2", "kafka-dump-log", ["--files", "x"])
    assert (e.value.tool, e.value.node, e.value.code) == ("kafka-dump-log", "kafka-2", 1)
