"""An operator's actions as faults, the parts that need no cluster: the assignment a reassignment
asks for, the settings each kind refuses, how a config change weakens what a topic promises, and
how a tool's class is found in a release's jars."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness import scenario as scenario_mod
from harness.checker.excuses import Config, Excuses, weakest_during
from harness.cluster import host_tools
from harness.cluster.errors import ClusterError
from harness.cluster.kafka_tools import ToolMissing
from harness.cluster.operations import Operations, planned_replicas
from harness.history import RunConfig
from harness.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def with_faults(*faults: dict, **extra) -> Scenario:
    base = scenario_mod.load(SCENARIOS / "smoke.toml")
    return Scenario.model_validate({**base.model_dump(mode="json"), "faults": list(faults), "duration_s": 30, **extra})


@pytest.mark.parametrize(("change", "broker", "to", "expected"), [
    ("move", 2, None, [1, 4, 3]),  # the lowest broker with no replica takes the moved one's place
    ("move", 1, 5, [5, 2, 3]),
    ("add", 1, None, [1, 2, 3, 4]),
    ("add", 1, 5, [1, 2, 3, 5]),
    ("remove", 2, None, [1, 3]),
])
def test_a_reassignment_asks_for_the_assignment_its_change_names(change, broker, to, expected):
    assert planned_replicas([1, 2, 3], change, broker, to, [1, 2, 3, 4, 5]) == expected


@pytest.mark.parametrize(("replicas", "change", "broker", "to", "words"), [
    ([1, 2, 3], "move", 4, None, "broker 4 holds no replica"),
    ([1, 2, 3], "move", 1, None, "no broker outside the assignment"),  # 3 brokers, all replicas
    ([1, 2], "add", 1, 2, "no broker outside the assignment"),  # to_broker holds one already
    ([1], "remove", 1, None, "the partition's only replica"),
])
def test_a_reassignment_that_cannot_be_made_says_why(replicas, change, broker, to, words):
    with pytest.raises(ClusterError, match=words):
        planned_replicas(replicas, change, broker, to, [1, 2, 3])


@pytest.mark.parametrize(("fault", "extra", "refused"), [
    ({"kind": "reassign", "to_broker": 7}, {"brokers": 4},
     "faults.0.to_broker: broker 7 does not exist (allowed: 1..4)"),
    ({"kind": "decommission", "target": "follower"}, {},
     "faults.0.kind: decommission unregisters a broker from the KRaft controllers; in ZooKeeper mode"),
    ({"kind": "reassign"}, {}, "faults.0.change: a move needs a broker outside the partition's replicas, and "
                               "brokers = 3 = topic.replication_factor (allowed: brokers >= 4"),
    ({"kind": "reassign", "change": "add"}, {}, "faults.0.change: a add needs a broker outside"),
    ({"kind": "reassign", "change": "shuffle"}, {}, "change\n  Input should be 'move', 'add' or 'remove'"),
    ({"kind": "reassign", "config": "retention.ms"}, {"brokers": 4},
     "config: only alter_config takes config, not reassign"),
    ({"kind": "alter_config"}, {}, "config: alter_config needs the topic config to change (allowed: "
                                   "min.insync.replicas, unclean.leader.election.enable, retention.ms"),
    ({"kind": "alter_config", "config": "min.insync.replicas"}, {}, "value: alter_config needs the value"),
    ({"kind": "alter_config", "config": "cleanup.policy", "value": "compact"}, {},
     "config\n  Input should be 'min.insync.replicas', 'unclean.leader.election.enable', 'retention.ms' or "
     "'retention.bytes'"),
    ({"kind": "alter_config", "config": "min.insync.replicas", "value": "0"}, {},
     "value: '0' is no value of min.insync.replicas (allowed: a whole number from 1)"),
    ({"kind": "alter_config", "config": "unclean.leader.election.enable", "value": "yes"}, {},
     "value: 'yes' is no value of unclean.leader.election.enable (allowed: true, false)"),
    ({"kind": "alter_config", "config": "retention.ms", "value": "1000", "to_broker": 2}, {},
     "to_broker: only reassign takes to_broker, not alter_config"),
])
def test_an_operation_a_cluster_or_topic_cannot_take_is_refused_naming_the_key(fault, extra, refused):
    with pytest.raises(ValidationError, match=re.escape(refused)):
        with_faults({"at_s": 2, **fault}, **extra)


def test_operations_that_fit_are_taken():
    s = with_faults({"at_s": 2, "kind": "reassign", "target": "follower", "throttle_kbps": 256},
                    {"at_s": 4, "kind": "reassign", "change": "remove", "target": "leader"},
                    {"at_s": 6, "kind": "alter_config", "config": "min.insync.replicas", "value": "1"}, brokers=4)
    assert [f.kind for f in s.faults] == ["reassign", "reassign", "alter_config"]
    assert with_faults({"at_s": 2, "kind": "reassign", "change": "remove"}).faults[0].change == "remove", \
        "a remove needs no spare broker"


def _run(*faults: dict) -> RunConfig:
    return RunConfig.model_validate({"faults": list(faults)})


SAFE = Config("all", True, 2)


def test_a_config_change_judges_the_topic_by_the_weakest_setting_it_had():
    lowered = weakest_during(_run({"kind": "alter_config", "topic": "t", "config": "min.insync.replicas",
                                   "value": "1"}), SAFE, "t")
    assert lowered.min_insync == 1 and "min.insync=1" in lowered.label()
    assert Excuses.of(lowered).loss and not Excuses.of(SAFE).loss, "min.insync=1 excuses loss, 2 does not"
    unclean = weakest_during(_run({"kind": "alter_config", "topic": "t", "config": "unclean.leader.election.enable",
                                   "value": "true"}), SAFE, "t")
    assert unclean.unclean_election and Excuses.of(unclean).part


@pytest.mark.parametrize("fault", [
    {"kind": "alter_config", "topic": "t", "config": "min.insync.replicas", "value": "3"},  # raised, not lowered
    {"kind": "alter_config", "topic": "t", "config": "unclean.leader.election.enable", "value": "false"},
    {"kind": "alter_config", "topic": "t", "config": "retention.ms", "value": "1000"},  # reported apart from loss
    {"kind": "alter_config", "topic": "other", "config": "min.insync.replicas", "value": "1"},  # another topic's
    {"kind": "reassign", "topic": "t"},
])
def test_a_change_that_weakens_nothing_of_the_topic_changes_no_promise(fault):
    assert weakest_during(_run(fault), SAFE, "t") == SAFE


def _jar(path: Path, *entries: str) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for e in entries:
            z.writestr(e, b"")


def test_a_tools_class_is_the_first_its_release_holds(tmp_path):
    _jar(tmp_path / "kafka-tools-4.4.0.jar", "org/apache/kafka/tools/reassign/ReassignPartitionsCommand.class")
    _jar(tmp_path / "kafka_2.13-4.4.0.jar", "kafka/admin/ReassignPartitionsCommand.class")
    _jar(tmp_path / "scala-library.jar", "org/apache/kafka/tools/StorageTool.class")
    assert host_tools.tool_class(tmp_path, "kafka-reassign-partitions") == \
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    with pytest.raises(ToolMissing, match="no class of kafka-storage"):
        host_tools.tool_class(tmp_path, "kafka-storage")  # only Kafka's own jars are read


def _fault_event(offsets: str, answer: str, group: str = "g") -> object:
    from harness.history.events import Fault

    return Fault(name="reset_offsets group_coordinator:g", kind="reset_offsets", target="group_coordinator:g",
                 partition=0, brokers=[1], nodes=["kafka-1"], tag="f1", links=[], start_ms=1, end_ms=2,
                 planned_at_s=1, planned_duration_s=0, group=group, offsets=offsets, offsets_reset=answer)


def test_only_a_reset_kafka_carried_out_moves_a_groups_offsets():
    from harness.checker.excuses import offsets_reset_by_hand

    assert offsets_reset_by_hand([_fault_event("earliest", "reset"), _fault_event("latest", "refused: Stable"),
                                  _fault_event("delete", "reset", group="h")]) == \
        {"g": frozenset({"earliest"}), "h": frozenset({"delete"})}


@pytest.mark.parametrize(("moved", "regression", "unseen"), [
    (frozenset(), True, True),  # nothing moved (a refused reset): both promised, as without the fault
    (frozenset({"earliest"}), False, True),
    (frozenset({"latest"}), True, False),
    (frozenset({"delete"}), False, False),  # the group starts where auto.offset.reset says: either way
])
def test_offsets_reset_by_hand_excuse_what_they_explain_and_nothing_else(moved, regression, unseen):
    from dataclasses import replace

    from harness.checker.promises import group_promises

    p = group_promises(replace(SAFE, offsets_moved=moved), "sync")
    assert (p["offset_regression"].promised, p["group_unseen"].promised) == (regression, unseen)
    if moved:
        assert "an operator reset the group's offsets by hand" in (p["offset_regression"].why + p["group_unseen"].why)


def test_a_reset_aimed_at_anything_but_a_groups_coordinator_is_refused():
    with pytest.raises(ValidationError, match=re.escape("faults.0.target: reset_offsets acts on a group, named by its "
                                                        "coordinator, not on leader")):
        with_faults({"at_s": 2, "kind": "reset_offsets", "target": "leader"})


def test_a_moved_away_replicas_directory_is_no_partition_of_the_topic():
    from harness.run.replicas import parse_epoch_caches

    text = ("== chaos-0\n0\n2\n0 0\n3 120\n"
            "== chaos-1.94921eca0ba94d459412d6ba3a2b48f9-delete\n0\n1\n0 0\n"  # a reassignment moved it away
            "== chaos-10\n0\n1\n5 7\n"
            "== chaos-copy-0\n0\n1\n0 0\n")  # another topic whose name starts with this one's
    assert parse_epoch_caches(text, "chaos") == {"chaos-0": [[0, 0], [3, 120]], "chaos-10": [[5, 7]]}


def test_one_commands_checkpoint_files_split_back_into_each_file_and_directory():
    """A broker's checkpoint files come back as one command's output: each offset file of each log
    directory under its path, then the partitions' epoch caches. A file that could not be read (a
    failed directory) has no lines; another topic's partitions and a topic whose name starts with
    this one's are left out."""
    from harness.run.replicas import parse_checkpoints

    text = ("=== /var/lib/kafka/data/replication-offset-checkpoint\n0\n3\nchaos 0 120\nchaos-copy 0 9\n"
            "__consumer_offsets 1 4\n"
            "=== /var/lib/kafka/data-2/replication-offset-checkpoint\n0\n1\nchaos 1 77\n"
            "=== /var/lib/kafka/data/recovery-point-offset-checkpoint\n0\n1\nchaos 0 100\n"
            "=== /var/lib/kafka/data-2/recovery-point-offset-checkpoint\n"  # unreadable: no lines
            "=== /var/lib/kafka/data/log-start-offset-checkpoint\n0\n1\nchaos 0 0\n"
            "=== /var/lib/kafka/data-2/log-start-offset-checkpoint\n0\n0\n"
            "=== leader-epoch-checkpoints\n== chaos-0\n0\n2\n0 0\n3 120\n== chaos-copy-0\n0\n1\n0 0\n"
            "== chaos-1\n0\n1\n2 5\n")
    assert parse_checkpoints(text, "chaos") == {
        "high_watermark": {"chaos-0": 120, "chaos-1": 77}, "recovery_point": {"chaos-0": 100},
        "log_start": {"chaos-0": 0}, "leader_epochs": {"chaos-0": [[0, 0], [3, 120]], "chaos-1": [[2, 5]]}}
    assert parse_checkpoints("", "chaos") == {"high_watermark": {}, "recovery_point": {}, "log_start": {},
                                               "leader_epochs": {}}


def test_dump_log_segments_records_of_a_moved_away_replica_are_no_partitions():
    from harness.run.replicas import parse_dump

    text = ("Dumping /var/lib/kafka/data/chaos-0/00000000000000000000.log\n"
            "baseOffset: 0 lastOffset: 0 count: 1 partitionLeaderEpoch: 2\n"
            "| offset: 0 CreateTime: 1 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: a\n"
            "Dumping /var/lib/kafka/data/chaos-1.94921eca0ba94d459412d6ba3a2b48f9-delete/00000000000000000000.log\n"
            "baseOffset: 0 lastOffset: 0 count: 1 partitionLeaderEpoch: 1\n"
            "| offset: 0 CreateTime: 1 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: b\n")
    assert [(r["partition"], r["value"]) for r in parse_dump(text, 3, "chaos")] == [(0, "a")]


REFUSED = """
Error: Assignments can only be reset if the group 'g' is inactive, but the current state is Stable.

GROUP                          TOPIC                          PARTITION  NEW-OFFSET     log4j:WARN No appenders
"""
RESET = """
GROUP                          TOPIC                          PARTITION  NEW-OFFSET
g                              t                              0          0
"""
DELETED = """
Request succeed for deleting offsets with topic t group g

TOPIC                          PARTITION       STATUS
t                              0               Successful
"""


def test_the_tools_answer_to_an_offsets_reset_says_whether_it_moved_them():
    from harness.cluster.operations import reset_answer

    assert reset_answer(REFUSED, "g", "earliest").startswith("refused: Error: Assignments can only be reset")
    assert reset_answer(RESET, "g", "earliest") == "reset"
    # as the tool prints it: a newline before each row, none after the last, its log after that
    assert reset_answer("\nGROUP    TOPIC    PARTITION  NEW-OFFSET     \ng    t    0    0              \nlog4j:WARN x",
                        "g", "earliest") == "reset"
    assert reset_answer(DELETED, "g", "delete") == "reset"
    assert reset_answer("GROUP TOPIC PARTITION NEW-OFFSET\n", "g", "latest").startswith("refused: ")


def test_a_tools_last_line_is_its_own_not_its_loggers():
    from harness.cluster.operations import last_line

    said = "Broker 1 is no longer registered.\n\nlog4j:WARN No appenders could be found\nlog4j:WARN See http://x\n"
    assert last_line(said) == "Broker 1 is no longer registered." and last_line("log4j:WARN x\n") == ""


GROUPS_PARTLY_DELETED = """
Error: Deletion of some consumer groups failed:
* Group 'busy' could not be deleted due to: java.util.concurrent.ExecutionException: \
org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.

These consumer groups were deleted successfully: 'empty', 'done'
"""


def test_the_tools_answer_to_a_groups_deletion_names_each_group():
    from harness.cluster.operations import deletion_answers

    said = deletion_answers(GROUPS_PARTLY_DELETED, ["busy", "empty", "done", "unasked"])
    assert said["busy"].startswith("refused: java.util.concurrent.ExecutionException") and \
        said["busy"].endswith("GroupNotEmptyException: The group is not empty."), said
    assert said["empty"] == said["done"] == "deleted"
    assert said["unasked"] == "no answer: These consumer groups were deleted successfully: 'empty', 'done'"
    assert deletion_answers("Deletion of requested consumer groups ('a', 'b') was successful.\n", ["a", "b"]) == \
        {"a": "deleted", "b": "deleted"}
    assert deletion_answers("", ["a"]) == {"a": "no answer: nothing"}


# confluent-kafka's Admin calls librdkafka sends to a group's coordinator (rd_kafka_coord_req).
COORDINATOR_ADMIN_CALLS = {"delete_consumer_groups", "describe_consumer_groups", "list_consumer_group_offsets",
                           "alter_consumer_group_offsets"}


def test_kchaos_sends_no_admin_request_to_a_groups_coordinator_from_its_own_process():
    """librdkafka #4605: such a request that times out while the coordinator is unreachable leaves
    librdkafka's coordinator lookup pending with no timeout of its own; when the coordinator answers
    again the lookup calls back into the freed request and the process aborts
    (``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0' failed``). kchaos's
    process is the user's pytest process, so kchaos does these through Kafka's tool instead
    (KafkaCluster.delete_groups)."""
    import ast

    harness = Path(__file__).resolve().parent.parent / "harness"
    calls = [f"{py.relative_to(harness.parent)}:{node.lineno} {node.attr}"
             for py in sorted(harness.rglob("*.py"))
             for node in ast.walk(ast.parse(py.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in COORDINATOR_ADMIN_CALLS]
    assert calls == []


PRODUCERS = """ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\t\
CurrentTransactionStartOffset
1000\t0\t-1\t4\t1795880000000\tNone
2001\t3\t7\t11\t1795880000100\t42
2002\t0\t7\t2\t1795880000200\t17
"""


def test_the_tools_list_of_producers_gives_each_open_transactions_first_offset():
    from harness.cluster.operations import OpenTransaction, open_transactions

    assert open_transactions(PRODUCERS) == [OpenTransaction(2001, 3, 42, 7), OpenTransaction(2002, 0, 17, 7)]
    # an older table without LatestCoordinatorEpoch, with spaces, and the logger's complaints
    older = "log4j:WARN x\nProducerId  ProducerEpoch  LastSequence  LastTimestamp  CurrentTransactionStartOffset\n" \
            "5  1  0  1795880000000  9\n"
    assert open_transactions(older) == [OpenTransaction(5, 1, 9)]
    assert open_transactions("ProducerId ProducerEpoch CurrentTransactionStartOffset\n") == []
    assert open_transactions("Error: the partition has no leader") == []


def txn_scenario(**extra) -> Scenario:
    base = scenario_mod.load(SCENARIOS / "smoke.toml").model_dump(mode="json")
    base["producers"] = [{**base["producers"][0], "transactional": True}] if base.get("producers") else \
        [{"name": "p", "transactional": True}]
    return Scenario.model_validate({**base, "duration_s": 30, **extra})


def test_an_abort_is_refused_where_kafka_has_no_tool_or_the_scenario_no_transaction():
    abort = {"kind": "abort_transaction", "at_s": 5}
    assert txn_scenario(faults=[abort]).faults[0].kind == "abort_transaction"
    with pytest.raises(ValidationError, match=r"faults\.0\.kind: abort_transaction runs kafka-transactions, which "
                                              r"Kafka 2\.8\.2 does not ship \(allowed: kafka_version 3\.9\.1"):
        txn_scenario(faults=[abort], kafka_version="2.8.2", mode="zk")
    with pytest.raises(ValidationError, match=r"faults\.0\.kind: abort_transaction .* no transactional writer"):
        with_faults(abort)


def test_an_abort_kafka_carried_out_excuses_the_transactional_writes_only():
    from harness.checker.excuses import loss_excuse, transactions_aborted_by_hand
    from harness.history.events import Fault

    def fault(answer: str) -> Fault:
        return Fault(kind="abort_transaction", start_ms=1, end_ms=2, transaction_aborted=answer)

    assert transactions_aborted_by_hand([fault("aborted")])
    assert not transactions_aborted_by_hand([fault("none open"), fault("refused: no leader")])
    safe = Config(acks="all", min_insync=2, idempotence=True)
    assert "aborted an open transaction" in loss_excuse(Config(**{**safe.__dict__, "transactional": True,
                                                                  "txn_aborted_by_hand": True}))
    assert loss_excuse(Config(**{**safe.__dict__, "txn_aborted_by_hand": True})) is None, "plain writes: nothing"
    assert loss_excuse(Config(**{**safe.__dict__, "transactional": True})) is None
    assert "txn-aborted-by-hand" in Config(transactional=True, txn_aborted_by_hand=True).label()


class RecreatingCluster(Operations):
    """Operations with just what recreate_topic asks of a cluster, with a step that fails when told: ``fail`` names
    the method that raises, ``ids`` the topic ids its describe answers, in turn."""

    def __init__(self, fail: str = "", ids: tuple = ("old", "new")) -> None:
        from confluent_kafka.admin import ConfigSource

        self.fail, self.ids, self.done = fail, list(ids), []
        self.own = ConfigSource.DYNAMIC_TOPIC_CONFIG

    @property
    def admin(self):
        from types import SimpleNamespace

        meta = SimpleNamespace(topics={"t": SimpleNamespace(partitions={0: SimpleNamespace(replicas=[2, 3, 1])})})
        entry = SimpleNamespace(value="2", source=self.own)
        future = SimpleNamespace(result=lambda timeout: {"min.insync.replicas": entry})
        return SimpleNamespace(list_topics=lambda *a, **k: meta, describe_configs=lambda rs: {rs[0]: future})

    def topic_id(self, topic):
        from confluent_kafka import KafkaError, KafkaException

        found = self.ids.pop(0)
        if found is None:
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        return found

    def _step(self, name, *args):
        self.done.append(name)
        if self.fail == name:
            raise ClusterError(f"{name} failed")

    def delete_topics(self, names, timeout_s):
        self._step("delete_topics")

    def _create_anew(self, topic, assignment, config, old_id, timeout_s):
        assert (assignment, config, old_id) == ([[2, 3, 1]], {"min.insync.replicas": "2"}, "old")
        self._step("_create_anew")

    def wait_topic_leaders(self, topic, partitions, timeout_s):
        self._step("wait_topic_leaders")


def _recreate(cluster: RecreatingCluster) -> dict:
    account: dict = {}
    cluster.recreate_topic("t", account)
    return account


def test_a_recreation_that_fails_after_the_deletion_still_says_the_deletion_was_asked():
    """What the checker tells the two topics apart by is in the account whatever fails after it: a
    refusal after the deletion keeps its time, and the run counts every write before it as deleted."""
    from harness.checker.excuses import Recreation, topics_recreated
    from harness.history.events import Fault

    account = _recreate(RecreatingCluster(fail="wait_topic_leaders"))
    assert account["recreated"] == "refused: wait_topic_leaders failed" and account["deleted_ms"] > 0
    assert (account["topic"], account["topic_id_before"]) == ("t", "old") and "created_ms" not in account
    fault = Fault(name="recreate", kind="recreate_topic", start_ms=1, end_ms=2, **account)
    assert topics_recreated([fault]) == {"t": [Recreation(account["deleted_ms"], None)]}


def test_a_recreated_topics_id_is_asked_again_until_the_broker_knows_it():
    cluster = RecreatingCluster(ids=("old", None, "old", "new"))
    account = _recreate(cluster)
    assert account["recreated"] == "recreated" and account["topic_id_after"] == "new"
    assert account["created_ms"] >= account["deleted_ms"]
    assert cluster.done == ["delete_topics", "_create_anew", "wait_topic_leaders"]
