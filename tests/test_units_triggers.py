"""Triggers on data built here: when each event fires, the validation of [faults.on], cycles,
and that a triggered fault is planned with its trigger and its number."""

from __future__ import annotations

import pytest

from harness.faults.triggers import Observation, Trigger, cycle, fired
from harness.run import schedule
from harness.scenario import ScenarioError, load
from tests.test_scenarios import GOOD, write

ARMED = Observation(acked=10, leader=1, isr=(1, 2, 3), hw=100)


@pytest.mark.parametrize(("trigger", "now", "why"), [
    (Trigger("acked", count=50), Observation(acked=49), None),
    (Trigger("acked", count=50), Observation(acked=50), "50 acknowledged"),
    (Trigger("isr_shrink"), Observation(leader=1, isr=(1, 2, 3)), None),
    (Trigger("isr_shrink"), Observation(leader=1, isr=(1, 3)), "ISR [1, 2, 3] -> [1, 3]"),
    (Trigger("isr_shrink", size=1), Observation(leader=1, isr=(1, 3)), None),
    (Trigger("isr_shrink", size=1), Observation(leader=1, isr=(1,)), "ISR [1, 2, 3] -> [1]"),
    (Trigger("isr_shrink", broker=2), Observation(leader=1, isr=(1, 2)), None),
    (Trigger("isr_shrink", broker=2), Observation(leader=1, isr=(1, 3)), "ISR [1, 2, 3] -> [1, 3]"),
    (Trigger("isr_grow"), Observation(leader=1, isr=(1, 2, 3)), None),
    (Trigger("leader_change"), Observation(leader=1, isr=(1, 2, 3)), None),
    (Trigger("leader_change"), Observation(leader=-1, isr=()), "leader 1 -> -1"),
    (Trigger("hw", offset=150), Observation(hw=149), None),
    (Trigger("hw", offset=150), Observation(hw=151), "high watermark 151"),
    (Trigger("fault_start", fault=2), Observation(started=frozenset({0})), None),
    (Trigger("fault_start", fault=2), Observation(started=frozenset({2})), "fault 2 started"),
    (Trigger("fault_end", fault=0), Observation(ended=frozenset({0})), "fault 0 ended"),
    (Trigger("truncation"), Observation(), None),
    (Trigger("truncation"), Observation(truncations=("broker 2 truncated chaos-0 to offset 7",)),
     "broker 2 truncated chaos-0 to offset 7"),
])
def test_each_event_fires_when_its_condition_holds(trigger, now, why):
    assert fired(trigger, now, ARMED) == why


def test_a_grown_isr_is_measured_from_the_arming_state():
    assert fired(Trigger("isr_grow"), Observation(isr=(1, 2)), Observation(isr=(1,))) == "ISR [1] -> [1, 2]"


def test_a_broker_rejoining_is_measured_from_the_arming_state():
    """Broker 3 rejoins an ISR it was not in; another broker joining does not fire."""
    assert fired(Trigger("isr_grow", broker=3), Observation(isr=(1, 2)), Observation(isr=(1,))) is None
    assert fired(Trigger("isr_grow", broker=3), Observation(isr=(1, 3)), Observation(isr=(1,))) == "ISR [1] -> [1, 3]"
    assert Trigger("isr_grow", broker=3).to_dict() == {"event": "isr_grow", "broker": 3, "delay_s": 0.0}


def test_a_truncation_fires_on_the_first_one_after_arming():
    """What the logs had written when the trigger was armed does not fire it; the next one does."""
    armed = Observation(truncations=("broker 3 truncated chaos-0 to offset 5",))
    assert fired(Trigger("truncation", broker=3), armed, armed) is None
    now = Observation(truncations=(*armed.truncations, "broker 3 truncated chaos-0 to offset 9"))
    assert fired(Trigger("truncation", broker=3), now, armed) == "broker 3 truncated chaos-0 to offset 9"
    assert Trigger("truncation", broker=3).to_dict() == {"event": "truncation", "broker": 3, "delay_s": 0.0}


def test_cycles_are_found():
    assert cycle({0: 1, 1: 2}) is None
    assert cycle({0: 1, 1: 2, 2: 1}) == [1, 2, 1]


TRIGGERED = '''
[[faults]]
at_s = 2
duration_s = 3
kind = "kill"
target = "leader"
[faults.on]
event = "acked"
count = 500
delay_s = 0.5

[[faults]]
at_s = 0
duration_s = 2
kind = "pause"
target = "follower"
[faults.on]
event = "fault_start"
fault = 0
'''


def test_a_triggered_fault_is_planned_with_its_trigger_and_number(tmp_path):
    s = load(write(tmp_path, GOOD + TRIGGERED))
    plan = {f.number: f for f in schedule.plan(s)}
    assert plan[0].on == Trigger("acked", count=500, delay_s=0.5) and plan[0].at_s == 2
    assert plan[1].on == Trigger("fault_start", fault=0)
    assert plan[0].to_dict()["on"] == {"event": "acked", "count": 500, "delay_s": 0.5}
    assert str(plan[0].on) == "acked count=500 +0.5s" and str(plan[1].on) == "fault_start fault=0"


@pytest.mark.parametrize(("extra", "message"), [
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "sunrise"\n',
     r"faults\.0\.on: event: 'sunrise' is not an event \(allowed: acked, isr_shrink"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "acked"\n',
     r"faults\.0\.on: .*acked needs count >= 1"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "acked"\ncount = 5\nproducer = "q"\n',
     r"faults\.0\.on\.producer: 'q' is not a producer of this scenario \(allowed: p\)"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "leader_change"\nsize = 1\n',
     r"faults\.0\.on: .*size: only isr_shrink takes a size, not leader_change"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "hw"\noffset = 5\nbroker = 1\n',
     r"faults\.0\.on: .*broker: only isr_shrink, isr_grow, truncation take a broker, not hw"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "isr_grow"\nbroker = 4\n',
     r"faults\.0\.on\.broker: 4 is not a broker of this scenario \(allowed: 1\.\.3\)"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "isr_shrink"\npartition = 9\n',
     r"faults\.0\.on\.partition: 9 does not exist"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "fault_end"\nfault = 0\n',
     r"faults\.0\.on\.fault: 0 is not another fault \(allowed: none\)"),
    ('[[faults]]\nat_s = 1\nkind = "kill"\n[faults.on]\nevent = "fault_end"\nfault = 1\n'
     '[[faults]]\nat_s = 1\nkind = "pause"\n[faults.on]\nevent = "fault_start"\nfault = 0\n',
     r"faults: 0 -> 1 -> 0 trigger each other in a cycle"),
])
def test_bad_triggers_exit_before_anything_starts(tmp_path, extra, message):
    with pytest.raises(ScenarioError, match=message):
        load(write(tmp_path, GOOD + extra))


class _Cluster:
    """Just enough of a cluster for the nemesis: partition 1's leader changes when ``flip`` is set;
    faults on brokers only record themselves."""

    def __init__(self):
        import threading

        from harness.cluster import ClusterSettings, Topology

        self.settings = ClusterSettings()
        self.topo = Topology(self.settings.broker_ids, "zk", (), tuple(self.settings.coordination_ids))
        self.flip = threading.Event()
        self.paused: list[int] = []

    def describe(self, topic=None, timeout_s=5.0, quorum=None):
        from harness.cluster import ClusterState, PartitionState

        leader = 2 if self.flip.is_set() else 1
        return ClusterState(1, [1, 2, 3], [PartitionState("t", 0, 1, [1, 2, 3], [1, 2, 3]),
                                           PartitionState("t", 1, leader, [1, 2, 3], [1, 2, 3])])

    def pause(self, b):
        self.paused.append(b)

    def resume(self, b):
        pass


def test_a_slow_trigger_does_not_delay_another(tmp_path):
    """Each armed trigger has its own watcher: while every look at a high watermark takes a second
    (a broker slow to answer), a leader change on partition 1 still fires its fault within a few polls."""
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run.nemesis import Nemesis

    c = _Cluster()
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    nem.high_watermark = lambda partition: (time.sleep(1.0), 0)[1]  # type: ignore[method-assign]
    slow = PlannedFault(at_s=0, duration_s=1, kind="pause", target="broker:3", partition=0,
                        on=Trigger("hw", offset=10**9), number=0)
    quick = PlannedFault(at_s=0, duration_s=1, kind="pause", target="broker:2", partition=1,
                         on=Trigger("leader_change", partition=1), number=1)
    nem.start([slow, quick], time.monotonic())
    time.sleep(1.5)  # both armed, and the slow one inside its second look
    c.flip.set()
    flipped = time.monotonic()
    while not c.paused and time.monotonic() - flipped < 3:
        time.sleep(0.01)
    took = time.monotonic() - flipped
    nem.stop()
    events.close()
    assert c.paused[:1] == [2], "the leader change fired its fault"
    assert took < 0.5, f"it took {took:.2f} s: the slow watcher held it up"


def test_a_trigger_on_a_faults_start_keeps_its_delay_from_that_start_not_from_the_end_of_acting(tmp_path):
    """A fault that takes seconds to act (a clean stop of each follower in turn, longer while the leader
    is frozen) started when it began to act: a fault chained on its start fires its delay after that.
    Counted from when acting returned, a hunt's ZooKeeper restart chained 0.5 s after the followers'
    restart came 21 s late, after the workload, in one run and never in its re-run."""
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run.nemesis import Nemesis

    c = _Cluster()
    hit: list[int] = []

    def slow_pause(b):  # broker 3's fault takes 1.5 s to act
        if b == 3:
            time.sleep(1.5)
        hit.append(b)

    c.pause = slow_pause  # type: ignore[method-assign]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    slow = PlannedFault(at_s=0, duration_s=3, kind="pause", target="broker:3", partition=0, number=0)
    chained = PlannedFault(at_s=0, duration_s=1, kind="pause", target="broker:2", partition=0,
                           on=Trigger("fault_start", fault=0, delay_s=0.2), number=1)
    nem.start([slow, chained], time.monotonic())
    deadline = time.monotonic() + 5
    while len(hit) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    nem.stop()
    events.close()
    assert hit == [2, 3], "the chained fault acted while the one it follows was still acting"


def test_a_triggered_fault_in_flight_when_the_run_stops_is_finished_and_healed_before_stop_returns(tmp_path):
    """A trigger's delayed fault whose application is still under way when the schedule ends (a
    clean stop takes seconds) must not outlive stop(): on a cluster kept for the next run it would
    act on that run (a hunt saw broker 1 stopped during the next draw, and the fault's own record
    written to a closed event log)."""
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run.nemesis import Nemesis

    c = _Cluster()
    resumed: list[int] = []

    def slow_pause(b):  # an application that takes a while, as a broker's clean stop does
        time.sleep(0.6)
        c.paused.append(b)

    c.pause, c.resume = slow_pause, resumed.append  # type: ignore[method-assign]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    f = PlannedFault(at_s=0, duration_s=5, kind="pause", target="broker:2", partition=1,
                     on=Trigger("leader_change", partition=1, delay_s=0.2), number=0)
    nem.start([f], time.monotonic())
    time.sleep(0.4)
    c.flip.set()
    deadline = time.monotonic() + 3
    while not (tmp_path / "events.jsonl").read_text().count('"trigger"') and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.35)  # the delay is over: the fault is being applied
    nem.stop()
    events.close()
    assert c.paused == [2] and resumed == [2], "applied, then healed, before stop() returned"
    time.sleep(1.0)
    assert c.paused == [2] and resumed == [2], "nothing acts after stop()"


def test_a_run_ending_early_leaves_no_fault_to_apply_or_heal_after_its_cluster_is_gone(tmp_path):
    """An interrupted run removes its cluster at once: a heal timer or a delayed trigger still pending
    then would act on containers that are gone (a SIGTERM'd hunt printed KeyError 'kafka-1' from a
    heal after teardown). abandon() cancels them and heals nothing."""
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run.nemesis import Nemesis

    c = _Cluster()
    resumed: list[int] = []
    c.resume = resumed.append  # type: ignore[method-assign]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    timed = PlannedFault(at_s=0, duration_s=2.0, kind="pause", target="broker:3", partition=0, number=0)
    delayed = PlannedFault(at_s=0, duration_s=0.5, kind="pause", target="broker:2", partition=1,
                           on=Trigger("leader_change", partition=1, delay_s=0.6), number=1)
    nem.start([timed, delayed], time.monotonic())
    deadline = time.monotonic() + 3
    while not c.paused and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.4)  # the trigger armed on leader 1
    c.flip.set()
    while '"trigger"' not in (tmp_path / "events.jsonl").read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    nem.abandon()
    took = time.monotonic() - t0
    time.sleep(2.5)  # past the timed fault's heal and the delayed one's start
    events.close()
    assert c.paused == [3], "the timed fault was applied; the delayed one never was"
    assert resumed == [], "nothing healed after abandon(): the cluster is being removed"
    assert took < 1.0, took


def test_a_triggered_faults_heal_that_fails_fails_the_run_as_a_timed_ones_does(tmp_path):
    """A heal on a timer that raised was a thread's traceback on the terminal and nothing more (a
    campaign's voter changes refused at the heal): the run went on as if healed."""
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run.nemesis import Nemesis

    c = _Cluster()

    def refuses(b):
        raise RuntimeError("the heal was refused")

    c.resume = refuses  # type: ignore[method-assign]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    f = PlannedFault(at_s=0, duration_s=0.2, kind="pause", target="broker:2", partition=1,
                     on=Trigger("leader_change", partition=1, delay_s=0.0), number=0)
    nem.start([f], time.monotonic())
    time.sleep(0.4)  # armed on leader 1
    c.flip.set()
    deadline = time.monotonic() + 5
    while nem.error is None and time.monotonic() < deadline:
        time.sleep(0.02)
    nem.stop()
    events.close()
    assert c.paused == [2] and isinstance(nem.error, RuntimeError), nem.error


def test_an_undo_the_cluster_does_not_answer_is_asked_again_while_the_other_heals_go_on(tmp_path, monkeypatch):
    """A hunt's run was set aside as could-not-run: an alter_config's heal (retention.ms back) timed
    out while a latency fault was on. The undo is asked again, as an operator would, on a thread of its
    own: the other fault heals on time, and then the undo is answered."""
    import json
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run import nemesis
    from harness.run.nemesis import Nemesis

    monkeypatch.setattr(nemesis, "HEAL_RETRY_PAUSE_S", 0.05)
    c = _Cluster()
    configs: list[tuple[str, str | None]] = []
    resumed: list[float] = []

    def alter_topic_config(topic, config, value):
        if c.paused and not resumed:
            raise TimeoutError("KafkaError{code=_TIMED_OUT}: Failed while waiting for response from broker")
        configs.append((config, value))

    c.topic_config = lambda topic, config: None  # type: ignore[attr-defined]
    c.alter_topic_config = alter_topic_config  # type: ignore[attr-defined]
    c.resume = lambda b: resumed.append(time.monotonic())  # type: ignore[method-assign]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    pause = PlannedFault(at_s=0.1, duration_s=0.6, kind="pause", target="broker:2", partition=0, number=0)
    alter = PlannedFault(at_s=0.0, duration_s=0.3, kind="alter_config", target="broker:1", partition=0,
                         config="retention.ms", value="10000", number=1)
    t0 = time.monotonic()
    nem.start([pause, alter], t0)
    time.sleep(1.2)
    nem.stop()
    events.close()
    assert nem.error is None
    assert resumed and resumed[0] - t0 < 0.9, "the pause healed on time, not held back by the undo's retries"
    assert configs == [("retention.ms", "10000"), ("retention.ms", None)], "applied, then undone once answered"
    healed = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    retries = next(e for e in healed if e["type"] == "fault" and e["kind"] == "alter_config")["heal_retries"]
    assert retries and "_TIMED_OUT" in retries[0]


def test_an_undo_never_answered_fails_the_run_with_its_error(tmp_path, monkeypatch):
    import time

    from harness.faults import PlannedFault
    from harness.history.events import EventLog
    from harness.run import nemesis
    from harness.run.nemesis import Nemesis

    monkeypatch.setattr(nemesis, "HEAL_RETRY_PAUSE_S", 0.05)
    monkeypatch.setattr(nemesis, "HEAL_RETRY_S", 0.3)
    c = _Cluster()
    c.topic_config = lambda topic, config: "5"  # type: ignore[attr-defined]
    answered = iter([True])

    def alter_topic_config(topic, config, value):
        if not next(answered, False):
            raise TimeoutError("never answered")

    c.alter_topic_config = alter_topic_config  # type: ignore[attr-defined]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, "t", events)  # type: ignore[arg-type]
    nem.start([PlannedFault(at_s=0, duration_s=0.1, kind="alter_config", target="broker:1", partition=0,
                            config="retention.ms", value="10000", number=0)], time.monotonic())
    time.sleep(0.8)
    nem.stop()
    events.close()
    assert isinstance(nem.error, TimeoutError) and "never answered" in str(nem.error)
