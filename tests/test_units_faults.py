"""The fault-kind registry: each entry carries what the scenario, the nemesis and the promise table
ask of its kind."""

from __future__ import annotations

from harness.checker.excuses import Config, partition_excuse
from harness.clients.groups import Member
from harness.faults import CLIENT_ROLES, FAULTS
from harness.mechanisms import CUT_TOXIC, LATENCY_TOXIC


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


def _kind_branches(source: str, kinds: set[str]) -> list[int]:
    """The lines of ``source`` that compare something with a fault kind's name (``== "kill"``,
    ``in ("kill", "pause")``): code that branches on a kind instead of reading its record."""
    import ast

    def names(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return {v for e in node.elts for v in names(e)}
        return set()

    return sorted(node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Compare)
                  and any(names(side) & kinds for side in [node.left, *node.comparators]))


def test_kind_branches_finds_a_planted_one():
    kinds = {"kill", "pause"}
    assert _kind_branches('if f.kind == "kill":\n    pass\nok = f.kind in ("pause",)\n', kinds) == [1, 3]
    assert _kind_branches('x = FAULTS["kill"]\ndefault = ["kill"]\n', kinds) == []


def test_no_module_outside_the_registry_branches_on_a_fault_kinds_name():
    """A fault kind is one record: what it takes, requires, draws and does is read from
    ``FAULTS[kind]``, so a new kind changes no other module."""
    from pathlib import Path

    from harness.faults import FAULTS

    root = Path(__file__).resolve().parent.parent / "harness"
    found = {str(f.relative_to(root)): lines for f in sorted(root.rglob("*.py")) if "faults" not in f.parts
             if (lines := _kind_branches(f.read_text(), set(FAULTS)))}
    assert not found, f"branches on a fault kind's name (file: lines): {found}"


def test_losing_answers_needs_a_request_type_and_a_cluster_that_reads_kafkas_protocol():
    import pytest
    from pydantic import ValidationError

    from harness.cluster.topology import Topology
    from harness.scenario import Scenario
    from harness.scenario.fault_tables import FaultSpec

    with pytest.raises(ValidationError, match=r"api: lose_answers needs the request type .*allowed: produce, fetch"):
        FaultSpec.model_validate({"at_s": 1, "kind": "lose_answers", "target": "leader"})
    with pytest.raises(ValidationError, match=r"'write_txn_marker'"):
        FaultSpec.model_validate({"at_s": 1, "kind": "lose_answers", "target": "leader", "api": "write_txn_marker"})
    base = {"name": "s", "duration_s": 10, "producers": [{"name": "p"}]}
    assert not Scenario.model_validate(base).cluster_settings().losable_answers
    lossy = {**base, "faults": [{"at_s": 1, "kind": "lose_answers", "target": "leader", "api": "produce"}]}
    assert Scenario.model_validate(lossy).cluster_settings().losable_answers
    links = Topology([1, 2], "zk", quorum=(201,)).kafka_links()
    assert "client-1" in links and "repl-1-2" in links and not [x for x in links if x.startswith(("zk-", "admin-"))]
    kraft = Topology([1, 2], "kraft", quorum=(101, 102)).kafka_links()
    assert "ctl-1-1" in kraft and "cc-1-2" in kraft and "admin-1" not in kraft
