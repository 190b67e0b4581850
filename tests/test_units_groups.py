"""Group logic on data built here: what members hold after eager and incremental rebalances, the
report's spans, member settings per protocol, and the matrix's --set run ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.clients.groups import Group, member_conf
from harness.history.events import as_line, from_dicts
from harness.report.groups import held_spans
from harness.run.matrix import Cell
from harness.scenario import GroupSpec


def member_lines(work: Path, consumer: str, lines: list[dict]) -> None:
    (work / f"{consumer}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"t": "read", "cut')


class _Cluster:
    def client_config(self, client: str = "", **extra) -> dict:
        return {"bootstrap.servers": "127.0.0.1:1", **extra}


def group(tmp_path: Path, members: int = 2, partitions: int = 4) -> Group:
    return Group(GroupSpec(name="g", members=members), _Cluster(), "t", partitions, tmp_path)


def test_assignments_follow_eager_and_incremental_rebalances(tmp_path):
    g = group(tmp_path)
    member_lines(tmp_path, "g-1", [  # eager: all, then revoke all, then half
        {"t": "rebalance", "kind": "assign", "partitions": [0, 1, 2, 3], "generation": 1, "ts_ms": 1},
        {"t": "rebalance", "kind": "revoke", "partitions": [0, 1, 2, 3], "generation": 1, "ts_ms": 2},
        {"t": "rebalance", "kind": "assign", "partitions": [0, 1], "generation": 2, "ts_ms": 3}])
    member_lines(tmp_path, "g-2", [  # incremental: 2 and 3 added, 3 lost
        {"t": "rebalance", "kind": "assign", "partitions": [2], "generation": 1, "ts_ms": 3},
        {"t": "rebalance", "kind": "assign", "partitions": [3], "generation": 2, "ts_ms": 4},
        {"t": "rebalance", "kind": "lost", "partitions": [3], "generation": 2, "ts_ms": 5}])
    assert g.assignments() == {"g-1": {0, 1}, "g-2": {2}}, "a line a SIGKILL cut short is skipped"
    assert g.wait_formed(timeout_s=0.5)


def test_a_group_with_more_members_than_partitions_forms_when_every_partition_is_held(tmp_path):
    g = group(tmp_path, members=3, partitions=2)
    member_lines(tmp_path, "g-1", [{"t": "rebalance", "kind": "assign", "partitions": [0], "generation": 1,
                                    "ts_ms": 1}])
    assert not g.wait_formed(timeout_s=0.3)
    member_lines(tmp_path, "g-2", [{"t": "rebalance", "kind": "assign", "partitions": [1], "generation": 1,
                                    "ts_ms": 1}])
    assert g.wait_formed(timeout_s=0.5)


def test_history_turns_member_lines_into_rows_and_events(tmp_path):
    g = group(tmp_path)
    member_lines(tmp_path, "g-1", [
        {"t": "read", "consumer": "g-1", "seq": 0, "topic": "t", "partition": 0, "offset": 5, "value": "v",
         "poll_ts_ms": 9, "hw": 6, "phase": "live", "isolation": "read_uncommitted", "group": "g", "generation": 1},
        {"t": "commit", "topic": "t", "partition": 0, "offset": 6, "ts_ms": 10},
        {"t": "commit_failed", "error": "UNKNOWN_MEMBER_ID", "generation": 1, "ts_ms": 11}])
    consumed, offsets, events = g.history()
    assert consumed == [{"consumer": "g-1", "seq": 0, "topic": "t", "partition": 0, "offset": 5, "value": "v",
                         "poll_ts_ms": 9, "hw": 6, "phase": "live", "isolation": "read_uncommitted", "group": "g",
                         "generation": 1}]
    assert offsets == [{"group": "g", "topic": "t", "partition": 0, "offset": 6, "ts_ms": 10, "phase": "live"}]
    assert [json.loads(as_line(e)) for e in events] == [{"type": "commit_refused", "group": "g", "consumer": "g-1",
                                                         "error": "UNKNOWN_MEMBER_ID", "generation": 1, "ts_ms": 11}]


def test_held_spans_close_at_revocation_or_at_the_end():
    ev = [{"type": "rebalance", "group": "g", "consumer": "g-1", "kind": "assign", "partitions": [0, 1],
           "generation": 1, "ts_ms": 100},
          {"type": "rebalance", "group": "g", "consumer": "g-1", "kind": "revoke", "partitions": [1],
           "generation": 1, "ts_ms": 200}]
    spans = sorted(held_spans(from_dicts(ev), end_ms=900), key=lambda s: s["partition"])
    assert [(s["partition"], s["start_ms"], s["end_ms"]) for s in spans] == [(0, 100, 900), (1, 100, 200)]


def test_member_settings_follow_the_protocol():
    classic = member_conf(GroupSpec(assignor="cooperative-sticky", session_timeout_ms=6000), {"x": 1})
    assert classic["partition.assignment.strategy"] == "cooperative-sticky" and classic["session.timeout.ms"] == 6000
    kip848 = member_conf(GroupSpec(protocol="consumer", commit="auto"), {})
    assert kip848["group.protocol"] == "consumer" and "session.timeout.ms" not in kip848
    assert kip848["enable.auto.commit"] is True and "partition.assignment.strategy" not in kip848


def test_matrix_overrides_are_part_of_the_run_id():
    cell = Cell("group-churn", "4.1.2", "kraft", 3, sets=("groups.0.protocol=consumer",))
    assert cell.run_id == "group-churn-4.1.2-kraft-groups.0.protocol=consumer-s3"
    assert Cell("group-churn", "4.1.2", "kraft", 3).run_id == "group-churn-4.1.2-kraft-s3"


def test_the_coordinators_commit_log_is_read_in_the_order_it_was_written():
    """Lines as Kafka 3.9's DumpLogSegments --offsets-decoder prints them (taken from a run)."""
    from harness.run.coordinator_log import commits_of, parse

    text = "\n".join([
        "Dumping /var/lib/kafka/data/__consumer_offsets-1/00000000000000000000.log",
        '| offset: 0 CreateTime: 1795607874806 keySize: 5 valueSize: 526 sequence: -1 headerKeys: [] key: '
        '{"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        '"generation":2,"protocol":"cooperative-sticky","members":[]}}',
        '| offset: 55 CreateTime: 1795607885975 keySize: 16 valueSize: 24 sequence: 0 headerKeys: [] key: '
        '{"type":"1","data":{"group":"g","topic":"chaos","partition":1}} payload: {"version":"3","data":'
        '{"offset":550,"leaderEpoch":0,"metadata":"","commitTimestamp":1795607885952}}',
        '| offset: 56 CreateTime: 1795607885976 keySize: 16 valueSize: 24 sequence: 0 headerKeys: [] key: '
        '{"type":"1","data":{"group":"g","topic":"chaos","partition":4}} payload: {"version":"3","data":'
        '{"offset":550,"leaderEpoch":0,"metadata":"","commitTimestamp":1795607885952}}',
        '| offset: 61 CreateTime: 1795607886605 keySize: 16 valueSize: 24 sequence: 0 headerKeys: [] key: '
        '{"type":"1","data":{"group":"g","topic":"chaos","partition":1}} payload: {"version":"3","data":'
        '{"offset":255,"leaderEpoch":0,"metadata":"","commitTimestamp":1795607886014}}',
        '| offset: 62 CreateTime: 1795607886700 keySize: 16 valueSize: 0 sequence: 0 headerKeys: [] key: '
        '{"type":"1","data":{"group":"g","topic":"chaos","partition":1}} payload: ',
    ])
    entries = parse(text)
    assert [(e.log_offset, e.offset, e.generation) for e in entries] == [
        (0, None, 2), (55, 550, 2), (56, 550, 2), (61, 255, 2)], "a tombstone is no commit; each commit its generation"
    p1 = commits_of(entries, "g", "chaos", 1)
    assert [(e.generation, e.offset) for e in p1] == [(2, None), (2, 550), (2, 255)]
    assert commits_of(entries, "other", "chaos", 1) == []


class BrokersThatHold:
    """A stand-in for a cluster's ``exec``: broker b's files of ``__consumer_offsets-1`` are
    ``held[b]`` (None: no files), and DumpLogSegments prints ``printed[b]`` for them."""

    def __init__(self, held: dict[int, bool], printed: dict[int, str]):
        self.held, self.printed, self.asked = held, printed, []

    def exec(self, node: str, cmd: list[str]) -> tuple[int, str]:
        b = int(node.split("-")[1])
        self.asked.append(b)
        if cmd[-1].startswith("ls "):
            return (0, "/var/lib/kafka/data/__consumer_offsets-1/00000000000000000000.log\n") if self.held[b] \
                else (2, "ls: cannot access: No such file or directory")
        return 0, self.printed[b]


def test_a_coordinator_partition_the_leader_gives_nothing_of_is_read_on_another_in_sync_replica():
    """Read on the leader first; a leader whose files are not found, or whose tool prints no segment,
    is named in the file and the next in-sync replica is read; none giving anything is a failure
    that says so (a ToolFailed event), never an empty record."""
    from harness.run.coordinator_log import NothingRead, read_partition

    dumped = "Dumping /var/lib/kafka/data/__consumer_offsets-1/00000000000000000000.log\n| offset: 0 ..."
    leader_fine = BrokersThatHold({1: True, 2: True}, {1: dumped, 2: ""})
    assert read_partition(leader_fine, "__consumer_offsets-1", [1, 2]) == (dumped, [])
    assert leader_fine.asked == [1, 1], "the leader's files listed, then dumped; no other broker asked"

    elsewhere = BrokersThatHold({1: False, 2: True, 3: True}, {2: "", 3: dumped})
    text, said = read_partition(elsewhere, "__consumer_offsets-1", [1, 2, 3])
    assert text == dumped
    assert said == ["# broker 1: no segment of __consumer_offsets-1 to read",
                    "# broker 2: no segment of __consumer_offsets-1 to read",
                    "# read on broker 3, in the partition's ISR"]

    nowhere = BrokersThatHold({1: False, 2: True}, {2: "some warning, no segment"})
    with pytest.raises(NothingRead) as e:
        read_partition(nowhere, "__consumer_offsets-1", [1, 2])
    assert (e.value.tool, e.value.node) == ("kafka-dump-log", "kafka-1,2") and "[1, 2]" in str(e.value)


def test_a_members_numbered_acknowledgements_are_taken_in_call_order(tmp_path):
    """The Java member's lines of a run where the client reported commit 829 (call 7) before 738
    (call 6); __consumer_offsets wrote 738 first. Taken in call order there is no regression; a
    member's own regression in call order, and unnumbered lines (librdkafka's), stay as they came."""
    from harness.checker.anomaly import offset_regression
    from harness.checker.reference import Tables
    from harness.clients.groups import acknowledged_in_call_order

    def commit(offset: int, ts: int, call: int | None = None, member: str = "g-1") -> dict:
        return {"t": "commit", "topic": "chaos", "partition": 1, "offset": offset, "ts_ms": ts, "member_file": member,
                **({"call": call} if call is not None else {})}

    def regressions(lines: list[dict]) -> int:
        rows = [{"group": "g", "phase": "live", **{k: r[k] for k in ("topic", "partition", "offset", "ts_ms")}}
                for r in acknowledged_in_call_order(lines)]
        return offset_regression.reference(Tables(produced=[], consumed=[], replicas=[], offsets=rows))

    java = [commit(496, 111509, 5), commit(829, 112145, 7), commit(738, 112149, 6), commit(876, 112307, 8)]
    assert regressions([{k: v for k, v in r.items() if k != "call"} for r in java]) == 1, "as the callbacks came"
    assert regressions(java) == 0
    assert [(r["offset"], r["ts_ms"]) for r in acknowledged_in_call_order(java)] == [
        (496, 111509), (829, 112145), (738, 112144), (876, 112307)]
    assert regressions([commit(829, 100, 1), commit(738, 100, 2)]) == 1, "a regression in call order is kept"
    assert regressions([commit(829, 100), commit(738, 105)]) == 1, "librdkafka's lines as they came"
    assert regressions([commit(829, 100, 1), commit(738, 105, 1, member="g-2")]) == 1, "members apart"


def test_a_groups_coordinator_partition_is_kafkas():
    """Against Java's own ``String.hashCode`` and Kafka's ``Utils.abs(h) % 50`` (values printed by a
    Java 17 program): UTF-16 code units, a surrogate pair, and the hash that is Integer.MIN_VALUE."""
    from harness.run.coordinator_log import java_hash, partition_for

    java = {"g": (103, 3), "g-java": (-1301351480, 30), "kchaos-copier-librdkafka": (1541157394, 44),
            "grüppe-😀": (-1039948164, 14), "polygenelubricants": (-2147483648, 0)}
    assert {g: (java_hash(g), partition_for(g, 50)) for g in java} == java


def test_each_commit_carries_the_consumer_groups_epoch_it_was_written_in():
    """KIP-848 groups' records name the group ``groupId`` and carry an ``epoch`` (key type 3)."""
    from harness.run.coordinator_log import parse

    text = "\n".join([
        '| offset: 3 CreateTime: 10 keySize: 5 valueSize: 9 key: {"type":"3","data":{"groupId":"k"}} payload: '
        '{"version":"0","data":{"epoch":4,"metadataHash":0}}',
        '| offset: 4 CreateTime: 11 keySize: 16 valueSize: 24 key: {"type":"1","data":{"group":"k","topic":"t",'
        '"partition":0}} payload: {"version":"3","data":{"offset":7,"leaderEpoch":0,"metadata":""}}',
    ])
    assert [(e.group, e.offset, e.generation) for e in parse(text)] == [("k", None, 4), ("k", 7, 4)]


def test_the_reports_context_of_a_coordinators_regression_is_its_log_in_the_order_written(tmp_path):
    """The rows around a coordinator_regression are the coordinator's written commits in log order
    (not the order of their time stamps, which a coordinator's failover to a skewed clock can reorder),
    the one that went back marked; an offset_regression's, the acknowledged commits by time."""
    from types import SimpleNamespace

    from harness.history import OFFSETS, OFFSETS_WRITTEN_SCHEMA, write_table
    from harness.report.groups import group_context

    row = {"group": "g", "topic": "t", "partition": 0}
    written = [(10, 100, 1000), (11, 200, 990), (12, 150, 995)]  # (log_offset, offset, ts_ms): 150 written last
    write_table(tmp_path / OFFSETS, [
        *({**row, "offset": o, "ts_ms": ts, "phase": "written", "log_offset": lo} for lo, o, ts in written),
        {**row, "offset": 200, "ts_ms": 1001, "phase": "live", "log_offset": None}], OFFSETS_WRITTEN_SCHEMA)
    example = {**row, "offset": 150, "log_offset": 12, "ts_ms": 995, "prev_offset": 200, "prev_log_offset": 11}
    out = group_context(tmp_path, SimpleNamespace(examples={"coordinator_regression": [example]}))
    (table,) = out["coordinator_regression"]
    assert table["title"] == "g: commits the coordinator wrote to t-0 around the one that went back"
    assert [(r["log_offset"], r["offset"], r["went back"]) for r in table["rows"]] == [
        (10, 100, False), (11, 200, False), (12, 150, True)]
