"""Protocol coverage (harness/checker/coverage.py) on event histories the tests build: each state is
entered where the samples say it is, and counted once per entry, not once per sample."""

from __future__ import annotations

from harness.checker.coverage import DEFINITIONS, STATES, Logged, coverage
from harness.history import RunConfig
from harness.history.events import CommitRefused, Fault, Formation, QuorumSample, Rebalance, State

RUN = RunConfig.model_validate({"topics": [{"name": "t", "partitions": 2, "replication_factor": 3,
                                            "config": {"min.insync.replicas": "2"}}]})


def state(ts: int, leader: int, isr: list[int], controller: int = 1, other_leader: int = 2,
          majority: bool = True) -> State:
    """A sample of partition 0 (replicas 1, 2, 3) as given, and partition 1 led by ``other_leader``
    with a full ISR."""
    return State(ts_ms=ts, controller=controller, brokers=[1, 2, 3], partitions=[
        {"partition": 0, "leader": leader, "replicas": [1, 2, 3], "isr": isr},
        {"partition": 1, "leader": other_leader, "replicas": [2, 3, 1], "isr": [2, 3, 1]}],
        quorum=QuorumSample(leader=101, epoch=1, voters=[101, 102, 103], majority=majority))


def test_a_history_that_moved_nothing_reached_no_state():
    quiet = [state(t, 1, [1, 2, 3]) for t in range(0, 2000, 250)]
    assert set(coverage(RUN, quiet, []).values()) == {0} and list(coverage(RUN, quiet, [])) == \
        [f.__name__ for f in STATES]


def test_each_state_is_counted_once_per_entry():
    events = [
        state(0, 1, [1, 2, 3]),
        state(250, 1, [1, 2]),          # a follower left the ISR
        state(500, 1, [1]),             # down to the leader alone: below min.insync=2 too
        state(750, 1, [1]),             # the same state again: not a new entry
        state(1000, -1, [1], controller=2),  # the leader died: offline; the controller moved
        state(1250, 3, [3], controller=2, majority=False),  # 3 leads from outside the last ISR; no majority
        state(1400, 3, [3], controller=2, majority=False),  # for two samples in a row, but 250 ms: a probe
        state(1500, 3, [3, 1, 2], controller=2),
        state(1600, 3, [3, 1, 2], controller=2, majority=False),  # one sample alone: a probe that timed out
        state(1750, 1, [1, 2, 3], controller=2, other_leader=3),  # preferred leader back on 0; partition 1 moved too
        Rebalance(ts_ms=300, group="g", consumer="g-1", kind="assign", partitions=[0], generation=1),
        Rebalance(ts_ms=310, group="g", consumer="g-2", kind="assign", partitions=[1], generation=1),
        Rebalance(ts_ms=900, group="g", consumer="g-2", kind="lost", partitions=[1], generation=1),
        Rebalance(ts_ms=1300, group="g", consumer="g-1", kind="assign", partitions=[0, 1], generation=2),
        CommitRefused(ts_ms=950, group="g", consumer="g-2", error="ILLEGAL_GENERATION", generation=1),
        Fault(name="elect_preferred leader (p0)", kind="elect_preferred", target="leader", partition=0, brokers=[3],
              nodes=["kafka-3"], tag="f1", links=[], start_ms=1700, end_ms=1701, planned_at_s=1.7,
              planned_duration_s=0),
        Fault(name="kill leader (p0)", kind="kill", target="leader", partition=0, brokers=[1], nodes=["kafka-1"],
              tag="f2", links=[], start_ms=990, end_ms=1400, planned_at_s=1, planned_duration_s=0.4),
        Fault(name="lose_answers leader (p0)", kind="lose_answers", target="leader", partition=0, brokers=[2],
              tag="f3", links=[], start_ms=100, end_ms=200, planned_at_s=0.1, planned_duration_s=0.1,
              answers_to="produce", answers_lost=0),  # armed, nothing lost: not the state
        Fault(name="lose_answers leader (p0)", kind="lose_answers", target="leader", partition=0, brokers=[2],
              tag="f4", links=[], start_ms=1500, end_ms=1600, planned_at_s=1.5, planned_duration_s=0.1,
              answers_to="produce", answers_lost=3),
    ]
    record = [{"partition": 0, "ts_ms": 1250, "old_leader": 1, "new_leader": 3, "kind": "unclean"},
              {"partition": 0, "ts_ms": 1750, "old_leader": 3, "new_leader": 1, "kind": "preferred"}]
    assert coverage(RUN, events, record) == {
        "isr_leader_alone": 2,  # 1 alone at 500; 3 alone at 1250
        "below_min_insync": 2,
        "partition_offline": 1,
        "leader_change": 3,  # 1 -> 3 on partition 0, 3 -> 1 on partition 0, 2 -> 3 on partition 1
        "unclean_election": 1,  # as the election record says
        "elr_election": 0,
        "controller_failover": 1,
        "quorum_no_majority": 0,  # no majority for 250 ms only (1250 to 1500): probes that timed out
        "group_rebalance": 2,  # generations 1 and 2
        "partitions_lost": 1,
        "commit_refused": 1,
        "operator_action": 1,  # the election, not the kill
        "coordinator_lost": 0, "unflushed_data_lost": 0, "disk_failing": 0, "topic_recreated": 0,
        "answer_lost": 1, "formation_leader_lost": 0, "replica_truncated": 0, "truncated_below_hw": 0,
        "producer_epoch_bumped": 0, "leader_epoch_bumped": 0, "successor_lagging": 0, "commit_across_rebalance": 0,
        "share_partition_leader_change": 0,
    }


def fault(kind: str, target: str, start_ms: int, **detail) -> Fault:
    return Fault(name=f"{kind} {target}", kind=kind, target=target, partition=0, brokers=[1], nodes=["kafka-1"],
                 tag="f", links=[], start_ms=start_ms, end_ms=start_ms + 100, **detail)


def test_what_faults_did_to_coordinators_disks_power_and_the_topic_is_covered_as_they_say_it_was():
    events = [
        fault("kill", "group_coordinator:g", 100),
        fault("pause", "txn_coordinator:t", 200),
        fault("latency", "group_coordinator", 250),  # slows it; its leadership stays
        fault("cut_client", "group_coordinator:g", 255),  # its members' connections to it break
        fault("kill", "leader", 260),  # not a coordinator
        fault("power_loss", "leader", 300, power_loss={"1": [{"file": "t-0/0.log", "kept_until": 100,
                                                               "removed": False}]}),
        fault("power_loss", "follower", 320, power_loss={"2": []}),  # nothing past the sync: nothing lost
        fault("log_dir_failure", "leader", 400),
        fault("recreate_topic", "leader", 500, recreated="recreated", topic="t", deleted_ms=500, created_ms=560),
        fault("recreate_topic", "leader", 600, recreated="refused: still listed", topic="t", deleted_ms=600),
    ]
    got = coverage(RUN, events, [])
    assert (got["coordinator_lost"], got["unflushed_data_lost"], got["disk_failing"], got["topic_recreated"]) == \
        (3, 1, 1, 1), got
    assert got["operator_action"] == 2, "both recreations were an operator's action, done or refused"


def test_a_sample_the_brokers_did_not_answer_is_no_state():
    events = [state(0, 1, [1, 2, 3]), State(ts_ms=250, error="no broker answered"), state(500, 1, [1, 2, 3])]
    assert coverage(RUN, events, [])["partition_offline"] == 0


def test_every_state_has_its_definition():
    assert all(DEFINITIONS[f.__name__].startswith(f.__name__ + ":") for f in STATES)


def test_the_terminal_says_what_a_run_reached_or_that_it_reached_nothing():
    from harness.report.terminal import reached
    from tests.test_units_tables import verdict

    v = verdict("r", [], {}).model_copy(update={"coverage": {"leader_change": 2, "isr_leader_alone": 1,
                                                             "commit_refused": 0}})
    assert reached(v) == "leader_change 2, isr_leader_alone 1"
    assert reached(v.model_copy(update={"coverage": {"leader_change": 0}})) == "none of the protocol states"


def test_a_faulted_formation_is_covered_once_per_formation_event():
    formed = Formation(ts_ms=50, kind="kill", leader=101, epoch=1, elected_after_s=4.2, delay_s=0.3, duration_s=2.0,
                       heal_ms=2050, leader_after=102, epoch_after=2, formed_ms=6000)
    assert coverage(RUN, [formed, state(7000, 1, [1, 2, 3])], [])["formation_leader_lost"] == 1
    assert coverage(RUN, [state(7000, 1, [1, 2, 3])], [])["formation_leader_lost"] == 0


def test_a_quorum_without_a_majority_counts_once_it_lasts_a_second_not_for_two_slow_probes():
    lost = [state(t, 1, [1, 2, 3], majority=False) for t in (0, 250, 500, 750, 1000)] + [state(1250, 1, [1, 2, 3])]
    slow = [state(t, 1, [1, 2, 3], majority=False) for t in (2000, 2220)] + [state(2400, 1, [1, 2, 3])]
    ending = [state(t, 1, [1, 2, 3], majority=False) for t in (3000, 3500, 4100)]  # the run ends without one
    assert coverage(RUN, lost + slow + ending, [])["quorum_no_majority"] == 2
    assert coverage(RUN, slow, [])["quorum_no_majority"] == 0


def _broker_log(tmp_path, broker: int, lines: list[str]) -> None:
    (tmp_path / "logs").mkdir(exist_ok=True)
    (tmp_path / "logs" / f"kafka-{broker}.log").write_text("\n".join(lines) + "\n")


def _truncating(stamp: str, topic: str, partition: int, offset: int) -> str:
    return (f"[2026-11-29 10:00:{stamp}] INFO [UnifiedLog partition={topic}-{partition}, dir=/var/lib/kafka/data] "
            f"Truncating to offset {offset} (kafka.log.UnifiedLog)")


def _live_reads(tmp_path, rows: list[tuple[str, int, int, int | None, str]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.history import CONSUMED
    topic, partition, ts, hw, phase = (list(c) for c in zip(*rows, strict=True))
    pq.write_table(pa.table({"phase": phase, "topic": topic, "partition": partition, "poll_ts_ms": ts, "hw": hw}),
                   tmp_path / CONSUMED)


def test_a_replica_truncated_below_what_readers_had_seen_committed_is_told_from_one_that_dropped_its_tail(tmp_path):
    """The brokers' own `Truncating to offset N` lines, for the run's topic only (a kept cluster's logs
    hold earlier runs'), against the highest high watermark a live read had returned before each."""
    from harness.checker.replicas_logged import logged_truncations

    t0 = 1795946400000  # 2026-11-29 10:00:00 UTC
    _broker_log(tmp_path, 1, [_truncating("02,000", "chaos-7", 0, 120),  # above the 100 seen: its own tail
                              _truncating("01,000", "chaos-6", 0, 5)])  # an earlier run's topic
    _broker_log(tmp_path, 2, ["[2026-11-29 10:00:03,000] INFO unrelated line",
                              _truncating("04,000", "chaos-7", 1, 40)])  # below the 90 seen before it
    _live_reads(tmp_path, [("chaos-7", 0, t0 + 1500, 100, "live"), ("chaos-7", 1, t0 + 3500, 90, "live"),
                           ("chaos-7", 1, t0 + 3900, 60, "live"),  # an older high watermark: the highest counts
                           ("chaos-7", 1, t0 + 4500, 200, "live"),  # after the truncation: not before it
                           ("chaos-7", 0, t0 + 1000, 500, "final")])  # the final read's are not live reads
    found = logged_truncations(tmp_path, ["chaos-7"], clocks_moved=False)
    assert [(t.truncation.broker, t.truncation.partition, t.truncation.offset, t.hw_seen, t.below_hw)
            for t in found] == [(1, 0, 120, 100, False), (2, 1, 40, 90, True)]
    counts = coverage(RunConfig(), [], [], Logged(truncations=found))
    assert counts["replica_truncated"] == 2 and counts["truncated_below_hw"] == 1
    moved = logged_truncations(tmp_path, ["chaos-7"], clocks_moved=True)
    assert [t.below_hw for t in moved] == [False, False], "clocks moved: a truncation and a read cannot be ordered"
    assert logged_truncations(tmp_path, ["other"], clocks_moved=False) == []


def test_a_producers_new_epoch_is_read_from_its_own_librarys_line(tmp_path):
    """librdkafka's drain line that ends in a bump and the Java client's producer id set at an epoch
    above 0 are bumps; the drain's beginning, a first epoch and other epochs are not."""
    from datetime import datetime

    from harness.checker.clients_logged import epoch_bumps

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "clients.log").write_text("\n".join([
        "2026-11-29 12:44:51,106 DEBUG kchaos.workload DRAIN [rdkafka#producer-529] [thrd:127.0.0.1:32771/3]: "
        "Beginning partition drain in state Assigned for PID{Id:45000,Epoch:0} epoch bump for 0 partition(s)",
        "2026-11-29 12:44:51,107 DEBUG kchaos.workload DRAIN [rdkafka#producer-529] [thrd:127.0.0.1:32771/3]: "
        "All partitions drained, bumped epoch to PID{Id:45000,Epoch:1}",
        "2026-11-29 12:18:53,372 INFO kchaos.java safe [kafka-producer-network-thread | producer-1] INFO "
        "org.apache.kafka.clients.producer.internals.TransactionManager - [Producer clientId=producer-1] "
        "ProducerId set to 1000 with epoch 0",
        "2026-11-29 12:19:03,500 INFO kchaos.java safe [kafka-producer-network-thread | producer-1] INFO "
        "org.apache.kafka.clients.producer.internals.TransactionManager - [Producer clientId=producer-1] "
        "ProducerId set to 1000 with epoch 1",
        "2026-11-29 12:19:04,000 INFO kchaos.java c0 [main] INFO Fetcher - leader epoch 3 for partition chaos-0",
    ]) + "\n")
    local = [int(datetime(2026, 11, 29, 12, 44, 51, 107000).timestamp() * 1000),
             int(datetime(2026, 11, 29, 12, 19, 3, 500000).timestamp() * 1000)]
    assert epoch_bumps(tmp_path) == local
    assert coverage(RunConfig(), [], [], Logged(epoch_bumps=epoch_bumps(tmp_path)))["producer_epoch_bumped"] == 2
    assert epoch_bumps(tmp_path / "nothing") == []


def test_a_new_leader_that_lacked_acknowledged_records_is_told_from_one_that_had_them(tmp_path):
    """The brokers' own `starts at leader epoch E from offset O` lines (the 2.8 form and the 3.x form
    with a topic id), for the run's topic, against the offsets producers had been acknowledged at
    before each: a new leader whose log ended at or below one of them lagged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.checker.replicas_logged import logged_leaderships
    from harness.history import PRODUCED

    t0 = 1795946400000  # 2026-11-29 10:00:00 UTC
    _broker_log(tmp_path, 1, [
        "[2026-11-29 10:00:00,100] INFO [Broker id=1] Leader chaos-7-0 with topic id Some(ZYWUjUEo) starts at leader "
        "epoch 0 from offset 0 with partition epoch 0, high watermark 0, ISR [1,2,3], adding replicas [] and removing "
        "replicas [] . Previous leader None and previous leader epoch was -1. (state.change.logger)",
        "[2026-11-29 10:00:05,000] INFO [Broker id=1] Follower chaos-7-0 starts at leader epoch 1 from offset 140 with "
        "partition epoch 1 and high watermark 130. Current leader is 2. (state.change.logger)"])
    _broker_log(tmp_path, 2, [
        "[2026-11-29 10:00:04,000] INFO [Broker id=2] Leader chaos-7-0 starts at leader epoch 1 from offset 120 with "
        "high watermark 118 ISR [2,3] addingReplicas [] removingReplicas []. Previous leader epoch was 0. "
        "(state.change.logger)",
        "[2026-11-29 10:00:09,000] INFO [Broker id=2] Leader chaos-7-0 with topic id Some(ZYWUjUEo) starts at leader "
        "epoch 2 from offset 400 with partition epoch 3, high watermark 400, ISR [2,3]. (state.change.logger)",
        "[2026-11-29 10:00:09,500] INFO [Broker id=2] Leader chaos-6-0 starts at leader epoch 4 from offset 0 with "
        "high watermark 0 ISR [2]. (state.change.logger)"])  # an earlier run's topic
    acked = {"topic": ["chaos-7"] * 4, "partition": [0, 0, 0, 0], "status": ["ok", "ok", "err", "ok"],
             "offset": [100, 125, None, 390], "ack_ts_ms": [t0 + 3000, t0 + 3900, t0 + 3950, t0 + 8000]}
    pq.write_table(pa.table(acked), tmp_path / PRODUCED)
    leads = logged_leaderships(tmp_path, ["chaos-7"], clocks_moved=False)
    assert [(x.broker, x.epoch, x.start_offset, x.acked_before, x.lagging) for x in leads] == [
        (1, 0, 0, None, False), (2, 1, 120, 125, True), (2, 2, 400, 390, False)]
    counts = coverage(RunConfig(), [], [], Logged(leaderships=leads))
    assert counts["leader_epoch_bumped"] == 2 and counts["successor_lagging"] == 1
    assert not any(x.lagging for x in logged_leaderships(tmp_path, ["chaos-7"], clocks_moved=True))


def test_a_commit_acknowledged_while_its_partition_had_no_member_is_a_commit_across_the_rebalance(tmp_path):
    """Between a member giving a partition up (revoked or lost) and the next member's assignment of it,
    a commit of that partition was in flight across the rebalance; before the revoke, after the
    assignment, or of another partition or group, it was not."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.checker.clients_logged import group_commits
    from harness.history import OFFSETS

    rebalances = [Rebalance(ts_ms=100, group="g", consumer="g-1", kind="assign", partitions=[0, 1], generation=1),
                  Rebalance(ts_ms=1000, group="g", consumer="g-1", kind="revoke", partitions=[0], generation=1),
                  Rebalance(ts_ms=1500, group="g", consumer="g-2", kind="assign", partitions=[0], generation=2),
                  Rebalance(ts_ms=3000, group="g", consumer="g-2", kind="lost", partitions=[0], generation=2)]
    rows = {"group": ["g", "g", "g", "g", "g", "h", "g"], "topic": ["t"] * 7, "partition": [0, 0, 1, 0, 0, 0, 0],
            "offset": [10, 20, 30, 40, 50, 60, 70], "ts_ms": [900, 1200, 1200, 1600, 3100, 1200, 1300],
            "phase": ["live", "live", "live", "live", "live", "live", "final"]}
    pq.write_table(pa.table(rows), tmp_path / OFFSETS)
    commits = group_commits(tmp_path)
    assert len(commits) == 6, "the final row is the group's offset read after healing, not a commit"
    counts = coverage(RunConfig(), rebalances, [], Logged(commits=commits))
    assert counts["commit_across_rebalance"] == 2  # at 1200 (revoked at 1000, assigned at 1500) and 3100 (lost)
    assert group_commits(tmp_path / "nothing") == []


def test_a_leader_change_is_a_share_partitions_only_where_a_share_group_reads_the_topic():
    events = [state(0, 1, [1, 2, 3]), state(500, 3, [3, 2]), state(1000, 2, [2, 3])]
    shared = RunConfig.model_validate({**RUN.model_dump(), "share_groups": [{"name": "sg", "topics": ["t"]}]})
    assert coverage(RUN, events, [])["share_partition_leader_change"] == 0
    changes = coverage(RUN, events, [])["leader_change"]
    assert coverage(shared, events, [])["share_partition_leader_change"] == changes == 2
