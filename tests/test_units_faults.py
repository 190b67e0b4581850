"""The fault-kind registry: each entry carries what the scenario, the nemesis and the promise table
ask of its kind."""

from __future__ import annotations

from harness.checker.excuses import Config, partition_excuse
from harness.clients.groups import Member
from harness.cluster.toxiproxy import CUT_TOXIC, LATENCY_TOXIC
from harness.faults import CLIENT_ROLES, FAULTS


def test_every_entry_is_consistent():
    for name, f in FAULTS.items():
        assert f.name == name and f.help and f.colour.startswith("#")
        assert f.clients <= set(CLIENT_ROLES)
        if f.directional:
            assert f.toxic in (CUT_TOXIC, LATENCY_TOXIC), name
        if f.on_member is not None:
            assert "member" in f.clients or "any" in f.clients, name
            assert all(callable(getattr(Member, m, None)) for m in f.on_member), name
        if f.client_links:
            assert f.on_clients, name


def test_a_kinds_excuse_comes_from_its_entry():
    loss = Config("all", True, 2, faults=frozenset({"power_loss", "kill"}))
    assert partition_excuse(loss) == FAULTS["power_loss"].excuse
    assert partition_excuse(Config("all", True, 2, eligible_leader_replicas=True,
                                   faults=frozenset({"power_loss"}))) is None, "ELR covers a power loss"
    assert partition_excuse(Config("all", True, 2, faults=frozenset({"kill", "isolate", "pause"}))) is None
    assert "+power_loss" in loss.label()
