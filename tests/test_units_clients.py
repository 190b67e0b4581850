"""The client-driver seam: the confluent-kafka driver makes clients that have what the recording,
the nemesis and the triggers ask of every driver's clients (harness/clients/)."""

from __future__ import annotations

import inspect
import threading

import pytest

from harness import clients
from harness.clients import ClientDriver, ConsumerClient, CopierClient, GroupClient, GroupMember, ProducerClient
from harness.clients.groups import Group, Member
from harness.clients.java.driver import JavaConsumer, JavaDriver, JavaProducer
from harness.clients.librdkafka.transactions import Copier, TransactionalProducer
from harness.clients.librdkafka.workload import RecordingConsumer, RecordingProducer
from harness.run.recording import acknowledged_ends, read_to
from harness.scenario import ConsumerSpec, CopierSpec, GroupSpec, ProducerSpec


def methods(protocol: type) -> set[str]:
    return {n for n, v in vars(protocol).items() if inspect.isfunction(v) and not n.startswith("_")}


@pytest.mark.parametrize(("protocol", "classes"), [
    (ProducerClient, [RecordingProducer, TransactionalProducer]),
    (ConsumerClient, [RecordingConsumer]),
    (CopierClient, [Copier]),
    (GroupClient, [Group]),
    (GroupMember, [Member]),
    (ClientDriver, [type(clients.driver("librdkafka"))]),
    (ProducerClient, [JavaProducer]),
    (ConsumerClient, [JavaConsumer]),
    (ClientDriver, [JavaDriver]),
])
def test_each_driver_makes_what_the_seam_promises(protocol, classes):
    assert methods(protocol)
    for cls in classes:
        missing = [m for m in methods(protocol) if not callable(getattr(cls, m, None))]
        assert not missing, f"{cls.__name__} lacks {missing} of {protocol.__name__}"


def test_a_client_is_named_and_its_config_asked_of_its_library():
    d = clients.driver()
    assert d.name == "librdkafka" and clients.driver("confluent-kafka") is d and d.version.startswith("librdkafka ")
    assert clients.refusal("librdkafka", ProducerSpec(config={"debug": "eos"}), "3.9.1") is None
    assert "No such configuration property" in clients.refusal("librdkafka", ConsumerSpec(config={"no.such": "1"}),
                                                               "3.9.1")
    with pytest.raises(ValueError, match="client 'no-such-library' has no driver"):
        clients.driver("no-such-library")
    java = clients.driver("java", "4.1.2")
    assert java.name == "java" and java.version == "kafka-clients 4.1.2"


def test_the_java_driver_takes_every_kind_of_client_and_refuses_what_the_harness_sets():
    """Before any JVM: every kind of client is built; a property the harness sets for a kind is refused
    with the key to use, a copier's as either of its two clients'."""
    assert clients.refusal("java", ProducerSpec(transactional=True, acks="all", idempotence=True), "3.9.1") is None
    assert clients.refusal("java", CopierSpec(), "3.9.1") is None
    assert clients.refusal("java", GroupSpec(), "3.9.1") is None
    for table, key in [(CopierSpec(config={"max.poll.records": "5"}), "max.poll.records"),
                       (CopierSpec(config={"value.serializer": "x"}), "value.serializer"),
                       (GroupSpec(config={"interceptor.classes": "x"}), "interceptor.classes")]:
        assert clients.refusal("java", table, "3.9.1").startswith(f"config.{key}: ")


def _process(monkeypatch, program: str):
    """A driver process whose program is ``program`` (Python standing in for a JVM or a Go program)."""
    import sys
    import threading

    from harness.clients.process import ClientProcess

    class Stand(ClientProcess):
        role = "producer"
        library = "Java"

        def command_line(self) -> list[str]:
            return [sys.executable, "-c", program]

    return Stand("p", None, "3.9.1", threading.Event(), {})


def test_a_driver_process_that_dies_fails_the_run_with_its_name_and_log(monkeypatch):
    p = _process(monkeypatch, "import sys; print('no such broker', file=sys.stderr); sys.exit(3)")
    p.start()  # it never says ready: start returns when it ended
    p.join(30)
    assert isinstance(p.failure, Exception) and "Java producer p exited 3" in str(p.failure)
    assert "no such broker" in str(p.failure) and p.proc.poll() == 3


def test_a_driver_process_that_hangs_is_killed_and_fails_the_run(monkeypatch):
    p = _process(monkeypatch, "import time; print('{\"t\": \"ready\"}', flush=True); time.sleep(600)")
    p.start()
    p.stop_event.set()  # "stop" goes to a process that does not read it
    p.join(1)
    assert "Java producer p did not stop within 1 s" in str(p.failure)
    assert p.proc.poll() is not None, "killed, not left running"


def test_a_driver_process_never_started_is_stopped_with_the_run(monkeypatch, tmp_path):
    """A run that ends before its workload (its topic could not be made) sets the stop events: a
    process waiting for "go" is told to stop, and ends."""
    said = tmp_path / "said"
    p = _process(monkeypatch, "import sys; print('{\"t\": \"ready\"}', flush=True); "
                              f"open({str(said)!r}, 'w').write(sys.stdin.readline()); sys.exit(0)")
    assert p.proc.poll() is None, "waiting for go"
    p.stop_event.set()
    p.proc.wait(30)
    assert said.read_text() == "stop\n"


def test_a_java_sends_status_follows_what_its_exception_says_of_the_write():
    """"fail" only where the record was definitely not written; a timeout or a refusal after a
    retry leaves it unknown ("info"), never counted as lost."""
    from harness.clients.java_errors import classify

    assert classify(None, 3) == "ok"
    assert classify("RecordTooLargeException: The message is 2000000 bytes", 3) == "fail"
    assert classify("NotEnoughReplicasException: Messages are rejected", 0) == "fail"
    assert classify("NotEnoughReplicasException: Messages are rejected", 3) == "info"
    assert classify("TimeoutException: Expiring 5 record(s) for t-0", 3) == "info"


def test_no_grpc_fork_handler_runs_when_kchaos_forks_a_client():
    """A kchaos process forks client processes while gRPC's threads (the Spark Connect client) run:
    with gRPC's fork support on, its handlers ran at every fork (and once killed a member's child
    before its program started). Importing harness turns it off unless the user set it."""
    script = (
        "import harness, grpc, subprocess, threading\n"
        "ch = grpc.insecure_channel('127.0.0.1:1')\n"
        "stop = []\n"
        "def call():\n"
        "    while not stop:\n"
        "        try: grpc.channel_ready_future(ch).result(timeout=0.05)\n"
        "        except Exception: pass\n"
        "for _ in range(2): threading.Thread(target=call, daemon=True).start()\n"
        "for _ in range(20): subprocess.run(['true'], preexec_fn=lambda: None)\n"
        "stop.append(1)\n")
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("GRPC_")} | {"GRPC_VERBOSITY": "INFO"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-1000:]
    assert "fork" not in out.stderr, out.stderr[-1000:]


def test_the_live_read_after_the_heal_ends_once_every_reader_has_read_what_was_acknowledged():
    sends = [{"topic": ["t", "t", "t", "t", "u"], "partition": [0, 0, 1, 1, 0],
              "status": ["ok", "ok", "ok", "err", "ok"], "offset": [4, 9, 2, None, 50]},
             {"topic": ["t"], "partition": [1], "status": ["info"], "offset": [None]}]
    ends = acknowledged_ends(sends, "t")
    assert ends == {0: 9, 1: 2}  # the other topic's, and sends not acknowledged, are not waited for
    assert read_to({0: 9, 1: 3}, ends)
    assert not read_to({0: 8, 1: 3}, ends)  # partition 0's last acknowledged record not read yet
    assert not read_to({0: 9}, ends)  # nothing read on partition 1
    assert not read_to(None, ends)  # a reader that tells only at its end is waited for


class Message:
    """A consumed message as confluent-kafka returns it."""

    def __init__(self, partition: int, offset: int):
        self.p, self.o = partition, offset

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return self.o

    def value(self) -> bytes:
        return b"v"


def test_a_consumer_tells_the_highest_offset_it_has_read_on_each_partition():
    c = RecordingConsumer.__new__(RecordingConsumer)  # its polls as the thread keeps them, without a cluster
    c._polls_lock, c._rows, c._highest = threading.Lock(), [], {}
    c.cname, c.topic, c.phase, c.isolation = "c0", "t", "live", "read_uncommitted"
    c._polls = [(1, [10, 10], [Message(0, 3), Message(1, 7)]), (2, [10, 10], [Message(0, 5)])]
    assert c.highest_read() == {0: 5, 1: 7}
    assert [r["offset"] for r in c.rows] == [3, 7, 5]
