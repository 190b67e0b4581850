"""The Go libraries' drivers (franz-go, sarama) before any broker: each program builds from the Go
module proxy, a send's outcome is read from its promise's error, and a table it cannot make, a
property its library has no setting for or one the harness sets is refused with the key and what is
allowed; a group whose library reports no commit of its own takes them from the coordinator's record."""

from __future__ import annotations

import os
import subprocess

import pytest

from harness import clients
from harness.clients import registry
from harness.clients.franz_go import build as franz_build
from harness.clients.go_program import PROTOCOL_SRC, classify
from harness.clients.kafka_go import build as kafka_go_build
from harness.clients.sarama import build as sarama_build
from harness.run import coordinator_log
from harness.scenario import ConsumerSpec, GroupSpec, ProducerSpec

GO_LIBRARIES = {"franz-go": (franz_build, "franz-go has no option for it"),
                "sarama": (sarama_build, "sarama has no setting for it"),
                "kafka-go": (kafka_go_build, "kafka-go has no setting for it")}


@pytest.fixture(scope="module", params=list(GO_LIBRARIES))
def library(request) -> str:
    build, _ = GO_LIBRARIES[request.param]
    build.program(build.DEFAULT_VERSION)
    return request.param


def test_a_sends_outcome_is_read_from_its_promises_error():
    assert classify(None, 5) == "ok"
    assert classify("MESSAGE_TOO_LARGE: The request included a message larger than ...", 5) == "fail"
    assert classify("NOT_ENOUGH_REPLICAS: Messages are rejected since ...", 0) == "fail"
    assert classify("NOT_ENOUGH_REPLICAS: Messages are rejected ...", 5) == "info", "an earlier try may have landed"
    assert classify("records have timed out before they were able to be produced", 5) == "info"


def test_kafkas_property_names_are_taken_where_the_library_has_a_setting(library):
    assert clients.refusal(library, ProducerSpec(config={"compression.type": "lz4"}), "3.9.1") is None
    assert clients.refusal(library, ConsumerSpec(config={"fetch.max.wait.ms": "50"}), "3.9.1") is None
    why = clients.refusal(library, ProducerSpec(config={"batch.size": "1000"}), "3.9.1")
    assert why.startswith(f"config.batch.size: {GO_LIBRARIES[library][1]} (allowed: ") and "compression.type" in why
    why = clients.refusal(library, ProducerSpec(config={"compression.type": "brotli"}), "3.9.1")
    assert why.startswith("config.compression.type: \"brotli\" is not one of gzip, lz4, none, snappy, zstd")


def test_what_the_harness_sets_and_what_the_driver_lacks_are_refused(library):
    assert clients.refusal(library, ProducerSpec(config={"acks": "1"}), "3.9.1").startswith(
        "config.acks: use the producer's acks")
    assert clients.refusal(library, ProducerSpec(transactional=True), "3.9.1") is None or library == "kafka-go"
    if library == "franz-go":  # KIP-848 through kgo.ServerSideBalancer
        assert clients.refusal(library, GroupSpec(name="g", protocol="consumer"), "4.4.0") is None
    else:
        assert clients.refusal(library, GroupSpec(name="g", protocol="consumer"), "3.9.1").startswith(
            f"protocol: the {library} driver runs no consumer groups (allowed: classic)")


@pytest.mark.parametrize("library", ["sarama", "kafka-go"])
def test_a_library_without_a_delivery_timeout_says_what_to_use(library):
    why = clients.refusal(library, ProducerSpec(config={"delivery.timeout.ms": "5000"}), "3.9.1")
    assert why.startswith(f"config.delivery.timeout.ms: {library} has no delivery timeout: a record is")


def test_what_kafka_go_cannot_do_is_refused_naming_what_it_can():
    assert clients.refusal("kafka-go", ProducerSpec(idempotence=True), "3.9.1") == \
        "idempotence: kafka-go has no idempotent producer (allowed: false)"
    assert clients.refusal("kafka-go", ProducerSpec(transactional=True), "3.9.1").startswith(
        "transactional: kafka-go has no transactional producer (allowed: false;")
    assert clients.refusal("kafka-go", GroupSpec(name="g", commit="auto"), "3.9.1") == \
        "commit: kafka-go's ConsumerGroup has no auto-commit (allowed: sync, async)"
    assert clients.refusal("kafka-go", GroupSpec(name="g", commit="async"), "3.9.1") is None


def test_the_broker_version_is_not_a_library_version_and_a_version_the_proxy_lacks_is_refused(library):
    build = GO_LIBRARIES[library][0]
    d = clients.driver(library, "3.9.1")
    assert d.name == library and d.version == f"{library} {build.DEFAULT_VERSION}"
    assert registry.version_refusal(library, build.DEFAULT_VERSION) is None
    assert registry.version_refusal(library, "one").startswith(f"client_version: 'one' is not a {library} release")


def test_a_groups_live_commits_can_come_from_the_coordinators_record():
    """The coordinator's dump, as kafka-dump-log's offsets decoder prints it: the group's commits,
    in the order written, become offsets.parquet's live rows; another group's and metadata don't."""
    line = ('| offset: {o} CreateTime: {t} keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] '
            'key: {{"type":"1","data":{{"group":"{g}","topic":"t","partition":0}}}} '
            'payload: {{"version":"3","data":{{"offset":{v},"leaderEpoch":0,"metadata":"","commitTimestamp":{t}}}}}')
    meta = ('| offset: 3 CreateTime: 1003 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] '
            'key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"generation":2}}')
    text = "\n".join([line.format(o=1, t=1001, g="g", v=40), line.format(o=2, t=1002, g="h", v=7), meta,
                      line.format(o=4, t=1004, g="g", v=30)])
    rows = coordinator_log.live_offsets(coordinator_log.parse(text), "g")
    assert rows == [{"group": "g", "topic": "t", "partition": 0, "offset": 40, "ts_ms": 1001, "phase": "live"},
                    {"group": "g", "topic": "t", "partition": 0, "offset": 30, "ts_ms": 1004, "phase": "live"}]


def test_the_shared_go_protocol_packages_own_tests_pass():
    """goprotocol's Go tests (member_test.go: an empty assignment is written as [], which a group's
    assignments read as a set; null broke the harness on a group with more members than partitions)."""
    proc = subprocess.run(["go", "test", "./..."], cwd=PROTOCOL_SRC, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GOFLAGS": "-mod=mod"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
