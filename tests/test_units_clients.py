"""The client-driver seam: the confluent-kafka driver makes clients that have what the recording,
the nemesis and the triggers ask of every driver's clients (harness/clients/)."""

from __future__ import annotations

import inspect

import pytest

from harness import clients
from harness.clients import ClientDriver, ConsumerClient, CopierClient, GroupClient, GroupMember, ProducerClient
from harness.groups import Group, Member
from harness.transactions import Copier, TransactionalProducer
from harness.workload import RecordingConsumer, RecordingProducer


def methods(protocol: type) -> set[str]:
    return {n for n, v in vars(protocol).items() if inspect.isfunction(v) and not n.startswith("_")}


@pytest.mark.parametrize(("protocol", "classes"), [
    (ProducerClient, [RecordingProducer, TransactionalProducer]),
    (ConsumerClient, [RecordingConsumer]),
    (CopierClient, [Copier]),
    (GroupClient, [Group]),
    (GroupMember, [Member]),
    (ClientDriver, [type(clients.driver("confluent-kafka"))]),
])
def test_the_confluent_driver_makes_what_the_seam_promises(protocol, classes):
    assert methods(protocol)
    for cls in classes:
        missing = [m for m in methods(protocol) if not callable(getattr(cls, m, None))]
        assert not missing, f"{cls.__name__} lacks {missing} of {protocol.__name__}"


def test_a_client_is_named_and_its_config_asked_of_its_library():
    d = clients.driver()
    assert d.name == "confluent-kafka" and d.version.startswith("librdkafka ")
    assert clients.refusal("confluent-kafka", "producer", {"debug": "eos"}) is None
    assert "No such configuration property" in clients.refusal("confluent-kafka", "consumer", {"no.such": "1"})
    with pytest.raises(ValueError, match="client 'java' has no driver"):
        clients.driver("java")
