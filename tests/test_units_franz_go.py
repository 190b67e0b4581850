"""The franz-go driver before any broker: its program builds from the Go module proxy, a send's
outcome is read from its promise's error, and a table it cannot make, a property franz-go has no
option for or one the harness sets is refused with the key and what is allowed."""

from __future__ import annotations

import pytest

from harness import clients
from harness.clients import registry
from harness.clients.franz_go import build as franz_build
from harness.clients.franz_go.driver import classify
from harness.scenario import ConsumerSpec, GroupSpec, ProducerSpec


@pytest.fixture(scope="module", autouse=True)
def program():
    return franz_build.program(franz_build.DEFAULT_VERSION)


def test_a_sends_outcome_is_read_from_its_promises_error():
    assert classify(None, 5) == "ok"
    assert classify("MESSAGE_TOO_LARGE: The request included a message larger than ...", 5) == "fail"
    assert classify("NOT_ENOUGH_REPLICAS: Messages are rejected since ...", 0) == "fail"
    assert classify("NOT_ENOUGH_REPLICAS: Messages are rejected ...", 5) == "info", "an earlier try may have landed"
    assert classify("records have timed out before they were able to be produced", 5) == "info"


def test_kafkas_property_names_are_taken_where_franz_go_has_an_option():
    assert clients.refusal("franz-go", ProducerSpec(config={"compression.type": "lz4"}), "3.9.1") is None
    assert clients.refusal("franz-go", ConsumerSpec(config={"fetch.max.wait.ms": "50"}), "3.9.1") is None
    why = clients.refusal("franz-go", ProducerSpec(config={"batch.size": "1000"}), "3.9.1")
    assert why.startswith("config.batch.size: franz-go has no option for it (allowed: ") and "compression.type" in why
    why = clients.refusal("franz-go", ProducerSpec(config={"compression.type": "brotli"}), "3.9.1")
    assert why.startswith("config.compression.type: \"brotli\" is not one of gzip, lz4, none, snappy, zstd")


def test_what_the_harness_sets_and_what_the_driver_lacks_are_refused():
    assert clients.refusal("franz-go", ProducerSpec(config={"acks": "1"}), "3.9.1").startswith(
        "config.acks: use the producer's acks")
    assert clients.refusal("franz-go", ProducerSpec(transactional=True), "3.9.1") is None
    assert clients.refusal("franz-go", GroupSpec(name="g", protocol="consumer"), "3.9.1").startswith("protocol: ")


def test_the_broker_version_is_not_a_franz_go_version_and_a_version_the_proxy_lacks_is_refused():
    d = clients.driver("franz-go", "3.9.1")
    assert d.name == "franz-go" and d.version == f"franz-go {franz_build.DEFAULT_VERSION}"
    assert registry.version_refusal("franz-go", "1.22.3") is None
    assert registry.version_refusal("franz-go", "one").startswith("client_version: 'one' is not a franz-go release")
