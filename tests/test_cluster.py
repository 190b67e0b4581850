"""The cluster against real brokers: round trips, ISR behaviour, election order, min.insync."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time

import docker
import pytest
from confluent_kafka import KafkaError

from harness.cluster import ClusterSettings, KafkaCluster, TopicError
from harness.cluster.links import STREAMS, toxic_name
from harness.cluster.toxiproxy import CUT_TOXIC
from harness.faults import PlannedFault
from harness.history.events import EventLog
from harness.run.nemesis import Nemesis
from harness.run.replicas import replica_log
from harness.setup import cluster_images
from harness.versions import version_mode_pairs
from tests.conftest import DEFAULT_SETTINGS, consume_all, produce, require_docker, unique_topic

pytestmark = pytest.mark.docker

LAG_S = DEFAULT_SETTINGS.replica_lag_time_max_ms / 1000
FETCH_WAIT_MAX_S = 0.5  # replica.fetch.wait.max.ms, which kchaos leaves at Kafka's default
DEFAULT_PAIR = (DEFAULT_SETTINGS.kafka_version, DEFAULT_SETTINGS.mode)


def round_trip(cluster: KafkaCluster, n: int = 200) -> None:
    """RF=3, min.insync=2: every acks level delivers, and everything sent is read back.

    acks=0 goes last: a broker answers an acks=0 produce it cannot take (its leadership of a
    partition not yet in place right after the topic is created) by closing the connection, and the
    client, told nothing, loses what it had sent. Kafka promises acks=0 nothing, so it is sent only
    once acks=all and acks=1 have shown every partition's leader taking writes."""
    topic = unique_topic("rt")
    cluster.create_topic(topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    cluster.wait_full_isr(topic)
    sent: list[str] = []
    for acks in ("all", "1", "0"):
        reports = produce(cluster, topic, n, acks, prefix=f"a{acks}")
        errors = [(v, e) for v, e in reports if e is not None]
        assert not errors, f"acks={acks}: delivery errors {errors[:3]}"
        assert len(reports) == n
        sent += [v for v, _ in reports]
    got = consume_all(cluster, topic, partitions=3, expect=len(sent))
    assert sorted(got) == sorted(sent)


def test_round_trip_all_acks(cluster):
    round_trip(cluster)


def _others(cluster: KafkaCluster, *exclude: int) -> list[int]:
    return [b for b in cluster.settings.broker_ids if b not in exclude]


def _topic_led_by_controller(c: KafkaCluster, prefix: str) -> tuple[str, int, int, int]:
    """A one-partition RF=3 topic, min.insync=2, whose leader is the controller, so cutting a
    follower never cuts the link the leader reports ISR changes over. Returns (topic, leader, f1, f2)."""
    leader = c.describe().controller
    f1, f2 = _others(c, leader)
    topic = unique_topic(prefix)
    c.create_topic(topic, replica_assignment=[[leader, f1, f2]], config={"min.insync.replicas": "2"})
    c.wait_full_isr(topic)
    return topic, leader, f1, f2


def test_follower_cut_leaves_isr_and_returns(healed):
    c = healed
    topic, leader, follower, other = _topic_led_by_controller(c, "isr")

    # The leader times a follower's lag from when it was last caught up: its last fetch that reached the
    # log end, or, before its first fetch, when the leader took the partition. A record every ISR
    # member must fetch (acks=all) makes that a fetch from just before the cut.
    assert all(e is None for _, e in produce(c, topic, 1, "all", prefix="before-cut"))
    t0 = time.monotonic()
    c.cut(c.topo.replication_links(follower))
    # A follower lags only if the leader's log end moves: an idle partition never shrinks its ISR.
    produce(c, topic, 1, "1", prefix="after-cut")
    left = c.wait_for(lambda st: follower not in st.partition(topic, 0).isr, LAG_S * 3 + 10,
                      f"broker {follower} did not leave the ISR")
    # The leader checks lag every replica.lag.time.max.ms / 2, then the change must reach metadata.
    assert left <= LAG_S * 1.5 + 5, f"left the ISR after {left:.1f} s (lag time {LAG_S} s)"
    # That last fetch may have waited up to replica.fetch.wait.max.ms in the leader's purgatory, so it
    # may have arrived that long before the cut.
    earliest = LAG_S - FETCH_WAIT_MAX_S
    assert time.monotonic() - t0 >= earliest, f"left the ISR before {earliest:.1f} s could pass"
    st = c.describe(topic).partition(topic, 0)
    assert st.leader == leader and set(st.isr) == {leader, other}

    c.restore(c.topo.replication_links(follower))
    back = c.wait_full_isr(topic, timeout_s=60)
    assert follower in c.describe(topic).partition(topic, 0).isr
    print(f"left ISR in {left:.1f} s, rejoined {back:.1f} s after heal")


def test_leader_kill_elects_first_live_isr_member_in_ar_order(healed):
    c = healed
    controller = c.describe().controller
    a, b = _others(c, controller)
    # AR = [leader, high id, low id]: the first live ISR member in AR order is the higher id,
    # so an election by lowest id (or any other order) would show up as a failure.
    leader, second, third = a, max(b, controller), min(b, controller)
    topic = unique_topic("elect")
    c.create_topic(topic, replica_assignment=[[leader, second, third]])
    c.wait_full_isr(topic)
    assert c.describe(topic).partition(topic, 0).leader == leader

    c.kill(leader)
    c.wait_for(lambda st: st.partition(topic, 0).leader not in (leader, -1), 30, "no new leader")
    st = c.describe(topic).partition(topic, 0)
    assert st.leader == second, f"AR {st.replicas}, ISR {st.isr}: expected {second}, got {st.leader}"
    assert st.replicas == [leader, second, third]

    c.start_broker(leader)
    c.wait_full_isr(topic, timeout_s=60)


def test_isr_of_one_refuses_acks_all_but_not_acks_1(healed):
    c = healed
    topic, leader, f1, f2 = _topic_led_by_controller(c, "minisr")

    c.cut(c.topo.between(leader, f1) + c.topo.between(leader, f2))
    produce(c, topic, 1, "1", prefix="after-cut")  # the leader's end must move for followers to lag
    c.wait_for(lambda st: st.partition(topic, 0).isr == [leader], LAG_S * 3 + 15, "ISR did not shrink to the leader")

    refused = produce(c, topic, 5, "all", prefix="all", timeout_s=10, retries=0)
    codes = {e.code() if e else None for _, e in refused}
    assert codes == {KafkaError.NOT_ENOUGH_REPLICAS}, f"acks=all with ISR of 1 gave {codes}"

    # acks=1 needs only the leader: it must succeed (with the client's ordinary retries).
    accepted = produce(c, topic, 5, "1", prefix="one", timeout_s=30)
    assert all(e is None for _, e in accepted), f"acks=1 failed: {accepted}; state {c.describe(topic)}"


def test_replication_factor_above_broker_count_is_a_clear_error(cluster):
    with pytest.raises(TopicError, match=r"replication factor 4 is greater than the 3 brokers"):
        cluster.create_topic(unique_topic("rf"), replication_factor=4)
    # Kafka's own refusal, when the request reaches it.
    with pytest.raises(TopicError, match=r"refused replication factor 4"):
        cluster.create_topic(unique_topic("rf"), replication_factor=4, validate=False)



def test_every_node_maps_its_images_class_data_archive(cluster):
    """Each JVM starts from the archive its image was trained with (docker/kafka/kchaos-cds-train.sh):
    the JVM maps it only after checking it against the node's own jars and flags, and drops it
    without a word otherwise, so a change to the entrypoint's flags or the image's jars that
    silently voids it would only show as slower runs. Kept apart from the round trips: this is
    about the image, not Kafka."""
    for key in cluster.container_keys():
        code, maps = cluster.exec(key, ["sh", "-c", "ls -l /proc/1/map_files"])
        assert code == 0, maps
        assert "/opt/kafka/kafka.jsa" in maps, f"{key}'s JVM runs without the image's class-data archive"

def test_a_loggers_level_set_for_the_cluster_reaches_every_broker(cluster):
    """ClusterSettings.log_levels (what `kchaos evidence` sets for a finding's components) reaches each
    broker's log4j configuration through the entrypoint: the shared cluster's ZooKeeper client logs at
    DEBUG, which the image's own configuration would not show."""
    from harness.waiting import until

    assert DEFAULT_SETTINGS.log_levels == {"org.apache.zookeeper.ClientCnxn": "DEBUG"}
    for b in DEFAULT_SETTINGS.broker_ids:
        until(lambda b=b: any(" DEBUG " in line and line.endswith("(org.apache.zookeeper.ClientCnxn)")
                              for line in cluster.logs(f"kafka-{b}", tail=2000).splitlines()),
              30, f"a DEBUG line of the ZooKeeper client in kafka-{b}'s log")


# 3.9.1 in ZooKeeper mode is the shared cluster's (test_round_trip_all_acks). A new release that
# cannot start fails the default tier in tests/test_share_groups.py, which runs on the newest version
# in KRaft; every other pair (KRaft on 3.9.1 and 4.1.2 also boot in tests/test_quorum.py and the
# transactional catalogue run) round-trips in the long tier, beside the matrix that runs the
# catalogue on them.


@pytest.mark.parametrize(("version", "mode"), [
    pytest.param(*p, marks=pytest.mark.chaos_long) for p in version_mode_pairs() if p != DEFAULT_PAIR], ids=lambda x: x)
def test_round_trip_on_every_version(version, mode):
    require_docker([version])
    with KafkaCluster(ClusterSettings(kafka_version=version, mode=mode), cluster_images(version)) as c:
        round_trip(c, n=100)


def test_power_loss_drops_what_was_never_flushed(healed):
    """A partition on broker 1 alone: after a power loss only data below its recovery point stays."""
    topic = unique_topic("pl")
    healed.create_topic(topic, 1, 1, {}, replica_assignment=[[1]])
    healed.wait_full_isr(topic, timeout_s=60)
    sent = produce(healed, topic, 50, "all", "before")
    assert [e for _, e in sent] == [None] * 50
    cuts = healed.power_loss(1)
    assert any(c.path.endswith(f"/{topic}-0/00000000000000000000.log") for c in cuts), "the unflushed log is cut"
    healed.start_broker(1)
    healed.wait_ready(90)
    healed.wait_full_isr(topic, timeout_s=60)
    assert consume_all(healed, topic, 1, expect=0, timeout_s=8) == [], \
        "nothing was flushed (Kafka does not fsync per write), so nothing survives"
    after = [v for v, e in produce(healed, topic, 5, "all", "after") if e is None]
    assert consume_all(healed, topic, 1, expect=5) == after, "the broker works again from offset 0"


def test_a_frozen_broker_that_is_killed_meanwhile_is_started_by_the_kills_heal(healed):
    """A drawn schedule froze a broker and killed it before the freeze's heal, which then thawed a
    container that was not running (the engine refused: the run could not be carried out)."""
    healed.pause(3)
    healed.kill(3)
    healed.resume(3)  # the freeze's heal: the kill ended the freeze
    healed.start_broker(3)
    healed.wait_ready(90)  # raises unless every broker is up and registered
    node = healed._node(3)
    node.reload()
    assert node.status == "running" and not node.attrs["State"]["Paused"]


def test_a_frozen_node_stopped_meanwhile_is_not_thawed_again_by_the_freezes_heal():
    """A drawn schedule froze the leader and restarted it before the freeze's heal. The engine thaws
    a frozen container as its stop begins, and the broker's controlled shutdown took seconds: the
    freeze's heal came meanwhile, asked the engine to thaw it again and was answered "is not
    paused", which failed the run. Here the node is a container whose process ignores SIGTERM, so
    its stop lasts its whole timeout (a broker of this suite's small clusters stops within the half
    second the heal waits)."""
    from harness.cluster import nodes
    from harness.setup import engine, images

    require_docker(["3.9.1"])
    container = engine.client().containers.run(images.base_ref().tag, ["sleep", "30"], entrypoint=[], detach=True,
                                               auto_remove=True)
    try:
        node = nodes.NodeFaults.__new__(nodes.NodeFaults)
        node._paused, node._stopped = set(), set()
        node._node = lambda n: container
        node.pause(1)
        stop = threading.Thread(target=node.stop_broker, args=(1, 3))
        stop.start()
        time.sleep(0.5)
        container.reload()
        assert container.status == "running" and not container.attrs["State"]["Paused"], "thawed, still stopping"
        node.resume(1)  # the freeze's heal, while the stop runs
        stop.join(30)
        assert node._paused == set() and node._stopped == {1}
    finally:
        with contextlib.suppress(docker.errors.APIError):  # stopped, it is removing itself (auto_remove)
            container.remove(force=True)


def test_a_broker_that_died_on_its_own_before_a_clean_stop_starts_again(healed):
    """A heal found a broker running whose process was ending on its own (Kafka halts a broker whose
    every log directory failed), stopped it cleanly and started it again at once. The dead process
    never closed its ZooKeeper session, so the new one exited with NodeExists and the run could not
    go on. The start now asks ZooKeeper whether the old registration is there, after any stop."""
    node = healed._node(3)
    node.kill()  # the process ends behind kchaos's back, its session open
    healed.stop_broker(3)
    waited = healed.start_broker(3)
    assert waited > 0.5, "the start waited for the dead process's registration to go"
    healed.wait_ready(90)  # raises unless every broker is up and registered
    node.reload()
    assert node.status == "running", healed.logs("kafka-3", tail=30)


def test_healing_one_network_fault_leaves_an_overlapping_one(healed):
    link = healed.topo.repl(2, 1)
    healed.latency([link], 50)
    healed.cut([link])
    healed.restore([link], only="kchaos-latency")
    names = {t["name"] for t in healed.toxi.toxics(link)}
    assert names == {"kchaos-cut-upstream", "kchaos-cut-downstream"}
    healed.restore([link])
    assert healed.toxi.toxics(link) == []


def test_overlapping_faults_of_one_kind_each_heal_their_own(healed, tmp_path):
    """A scenario's faults may overlap: two cuts over the same link both apply (the second used to
    be refused, its name taken), and healing the first leaves the link cut until the second heals."""
    topic = unique_topic("overlap")
    healed.create_topic(topic, partitions=1, replication_factor=3)
    events = EventLog(tmp_path / "events.jsonl")
    nem, other = Nemesis(healed, topic, events), Nemesis(healed, topic, events)  # as the pytest plugin does
    link = healed.topo.client(1)
    first = nem.apply(PlannedFault(at_s=0, duration_s=1, kind="cut_client", target="broker:1"))
    second = other.apply(PlannedFault(at_s=0, duration_s=1, kind="isolate", target="broker:1"))
    assert link in first.links and link in second.links and first.tag != second.tag
    nem.heal(first)
    assert {t["name"] for t in healed.toxi.toxics(link)} == {toxic_name(CUT_TOXIC, st, second.tag) for st in STREAMS}
    other.heal(second)
    assert {x: healed.toxi.toxics(x) for x in second.links} == {x: [] for x in second.links}
    events.close()
    # Each fault's lines carry its tag, the suffix of its toxics' names: a reader can tell which
    # fault put a toxic on a link, and match each start to its end.
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e["kind"], e["tag"]) for e in lines] == [
        ("fault_start", "cut_client", first.tag), ("fault_start", "isolate", second.tag),
        ("fault", "cut_client", first.tag), ("fault", "isolate", second.tag)]


def test_a_cut_on_one_stream_holds_the_fetch_responses_and_lets_the_requests_through(healed, tmp_path):
    """cut_fetch with stream = "downstream" black-holes only what the leader sends back on the
    follower's fetch link (the responses that carry the high watermark); its requests still flow."""
    topic = unique_topic("stream")
    healed.create_topic(topic, partitions=1, replication_factor=3)
    healed.wait_full_isr(topic)
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(healed, topic, events)
    a = nem.apply(PlannedFault(at_s=0, duration_s=1, kind="cut_fetch", target="follower", stream="downstream"))
    (link,) = a.links
    assert {t["name"]: t["stream"] for t in healed.toxi.toxics(link)} == {
        toxic_name(CUT_TOXIC, "downstream", a.tag): "downstream"}
    nem.heal(a)
    assert healed.toxi.toxics(link) == []
    events.close()
    (start, end) = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert start["stream"] == end["stream"] == "downstream"


def test_a_cut_of_both_followers_cuts_the_link_between_them_once(healed, tmp_path):
    """cut_replication on ``followers`` cuts each follower's replication links, and the link between
    the two followers is one of each's: it is cut once, not refused the second time (the fault used
    to be skipped whole, "toxic already exists")."""
    topic = unique_topic("both")
    healed.create_topic(topic, partitions=1, replication_factor=3)
    healed.wait_full_isr(topic)
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(healed, topic, events)
    a = nem.apply(PlannedFault(at_s=0, duration_s=1, kind="cut_replication", target="followers"))
    f1, f2 = a.brokers
    assert len(a.links) == len(set(a.links)) and healed.topo.repl(f1, f2) in a.links
    assert all(healed.toxi.toxics(x) for x in a.links), "every link of either follower is cut"
    nem.heal(a)
    assert {x: healed.toxi.toxics(x) for x in a.links} == {x: [] for x in a.links}
    events.close()


def test_a_fault_refused_halfway_takes_back_the_toxics_it_put_on(healed, tmp_path, monkeypatch):
    """An isolation puts toxics on its links one by one. When Toxiproxy refuses one on the last link
    (409: a toxic of that name is there, planted through its API first), the links already cut are
    healed before the error is raised, and no fault_start is logged for a fault that did not happen."""
    import harness.run.nemesis as nemesis
    from harness.cluster.toxiproxy import ToxiproxyError

    topic = unique_topic("halfway")
    healed.create_topic(topic, partitions=1, replication_factor=3)
    monkeypatch.setattr(nemesis, "_TAGS", itertools.count(900))  # the fault's tag is f900
    links = healed.topo.isolation_links(1)
    assert len(links) >= 3
    st = STREAMS[0]
    healed.toxi.add_toxic(links[-1], toxic_name(CUT_TOXIC, st, "f900"), "timeout", st, {"timeout": 0})
    events = EventLog(tmp_path / "events.jsonl")
    with pytest.raises(ToxiproxyError, match="409"):
        Nemesis(healed, topic, events).apply(PlannedFault(at_s=0, duration_s=1, kind="isolate", target="broker:1"))
    events.close()
    assert {x: healed.toxi.toxics(x) for x in links} == {x: [] for x in links}
    assert "fault_start" not in (tmp_path / "events.jsonl").read_text()


def test_a_clients_own_links_carry_its_faults_alone(healed, tmp_path):
    """client_cut and client_pause act on one client's own links: a producer that has them is cut
    while one on the shared links goes on, and what a held producer sent is delivered at the heal."""
    from confluent_kafka import Producer

    topic = unique_topic("own")
    healed.create_topic(topic, partitions=1, replication_factor=3)
    healed.wait_full_isr(topic)
    solo = {"bootstrap.servers": healed.client_config("solo")["bootstrap.servers"]}
    assert [e for _, e in produce(healed, topic, 3, "all", "warm", **solo)] == [None] * 3
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(healed, topic, events)
    cut = nem.apply(PlannedFault(at_s=0, duration_s=1, kind="client_cut", target="client:solo"))
    assert cut.links == [healed.topo.private_client(b, "solo") for b in healed.settings.broker_ids]
    assert [e for _, e in produce(healed, topic, 3, "all", "shared", timeout_s=10)] == [None] * 3
    refused = produce(healed, topic, 3, "all", "cut", timeout_s=3, **solo)
    assert len(refused) == 3 and all(e is not None for _, e in refused)
    nem.heal(cut)

    held = nem.apply(PlannedFault(at_s=0, duration_s=1, kind="client_pause", target="client:solo"))
    p = Producer(healed.client_config("solo", **{"acks": "all", "message.timeout.ms": 30000}))
    acked: list[float] = []
    p.produce(topic, b"held", on_delivery=lambda err, msg: acked.append(time.monotonic()) if err is None else None)
    p.flush(3)
    assert acked == [], "nothing gets through while the client's links are held"
    healed_at = time.monotonic()
    nem.heal(held)
    assert p.flush(20) == 0 and len(acked) == 1
    print(f"held record acknowledged {acked[0] - healed_at:.2f} s after the heal")
    events.close()


def test_segment_reader_reads_what_dump_log_segments_reads(healed):
    """The replica logs read in Python from the brokers' segment files are Kafka's own tool's rows:
    plain, gzip-compressed and transactional batches (committed and aborted, their markers skipped)."""
    from confluent_kafka import Producer

    from harness.run.replicas import dumped_log, replica_log

    topic = unique_topic("seg")
    healed.create_topic(topic, partitions=2, replication_factor=3)
    healed.wait_full_isr(topic)
    produce(healed, topic, 50, "all", "plain")
    produce(healed, topic, 50, "all", "gzip", **{"compression.type": "gzip"})
    p = Producer(healed.client_config(**{"transactional.id": f"{topic}-t", "linger.ms": 5}))
    p.init_transactions(30)
    for outcome in ("commit", "abort"):
        p.begin_transaction()
        for i in range(20):
            p.produce(topic, f"txn-{outcome}-{i}".encode(), partition=i % 2)
        p.flush(30)
        (p.commit_transaction if outcome == "commit" else p.abort_transaction)(30)
    for b in healed.settings.broker_ids:
        ours, kafkas = replica_log(healed, b, topic), dumped_log(healed, b, topic)
        assert len(ours) == 140
        assert sorted(ours, key=lambda r: (r["partition"], r["offset"])) == \
            sorted(kafkas, key=lambda r: (r["partition"], r["offset"]))


def test_elections_by_hand_move_the_leader_as_kafka_documents(healed, tmp_path):
    """An operator's elections through the Admin API, as faults: a preferred election gives the
    partition back to the first replica of its assignment once it is in the ISR again; an unclean
    one, with the only ISR member dead, makes a live replica outside the ISR the leader (and is
    refused while an ISR member can lead)."""
    c = healed
    first, second, third = c.settings.broker_ids
    topic = unique_topic("elect-pref")
    c.create_topic(topic, replica_assignment=[[first, second, third]])
    c.wait_full_isr(topic)
    c.kill(first)
    c.wait_for(lambda st: st.partition(topic, 0).leader not in (first, -1), 30, "no new leader")
    c.start_broker(first)
    c.wait_full_isr(topic, timeout_s=60)
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, topic, events)
    moved = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="elect_preferred", target="leader", partition=0))
    nem.heal(moved)
    assert moved.detail["answer"] == "ok" and moved.detail["leader_before"] != first, moved.detail
    assert moved.detail["leader_after"] == first == c.describe(topic).partition(topic, 0).leader
    again = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="elect_preferred", target="leader", partition=0))
    assert again.detail["answer"] == "ELECTION_NOT_NEEDED", "the preferred replica leads already"
    nem.heal(again)

    unclean = unique_topic("elect-unclean")
    c.create_topic(unclean, replica_assignment=[[first, second, third]], config={"min.insync.replicas": "1"})
    c.wait_full_isr(unclean)
    nem = Nemesis(c, unclean, events)
    refused = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="elect_unclean", target="leader", partition=0))
    assert refused.detail["answer"] == "ELECTION_NOT_NEEDED" and refused.detail["leader_after"] == first
    nem.heal(refused)
    # Only the leader takes the next records: its followers die, so the ISR is the leader alone; then
    # the leader dies and the followers come back, live but out of the ISR, and no one may lead.
    c.kill(second)
    c.kill(third)
    c.wait_for(lambda st: st.partition(unclean, 0).isr == [first], 30, "the dead followers leave the ISR")
    assert not [e for _, e in produce(c, unclean, 20, "1", prefix="only-on-the-leader") if e is not None]
    c.kill(first)
    c.start_broker(second)
    c.start_broker(third)
    c.wait_for(lambda st: st.partition(unclean, 0).leader == -1 and {second, third} <= set(st.brokers), 60,
               "the followers back, no leader")
    elected = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="elect_unclean", target=f"broker:{second}",
                                     partition=0))
    nem.heal(elected)
    events.close()
    assert elected.detail["answer"] == "ok" and elected.detail["leader_after"] in (second, third), elected.detail
    c.start_broker(first)
    c.wait_full_isr(unclean, timeout_s=60)
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["election"] for e in lines if e["type"] == "fault" and e["kind"].startswith("elect_")] == \
        ["preferred", "preferred", "unclean", "unclean"], "each election's account is in its events"


def test_reassignments_and_config_changes_by_hand_do_what_kafka_documents(healed, tmp_path):
    """An operator's reassignments (kafka-reassign-partitions from this machine) and topic config
    changes (the Admin API), as faults: a throttled move puts every record on the new replica and
    takes its throttle off when complete, an add and a remove change the replica set, and a config
    change holds until its heal, which gives the topic its own value back (what it does to writes is
    Kafka's own min.insync.replicas, tested above); partitions added by hand are there at once."""
    c = healed
    first, second, third = c.settings.broker_ids
    topic = unique_topic("reassign")
    c.create_topic(topic, replica_assignment=[[first, second]])
    c.wait_full_isr(topic)
    assert not [e for _, e in produce(c, topic, 300, "all", prefix="before") if e is not None]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, topic, events)

    moved = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="reassign", target=f"broker:{second}", partition=0,
                                   throttle_kbps=512))
    moved.background.join()  # the tool runs beside the schedule
    assert c.topic_config(topic, "leader.replication.throttled.replicas"), "the move runs throttled"
    nem.heal(moved)
    assert moved.detail["replicas_before"] == [first, second] and moved.detail["replicas_after"] == [first, third]
    assert moved.detail["reassignment"] == "complete", moved.detail
    assert c.describe(topic).partition(topic, 0).replicas == [first, third]
    assert c.topic_config(topic, "leader.replication.throttled.replicas") is None, "--verify took the throttle off"
    on_third = {r["value"] for r in replica_log(c, third, topic)}
    assert {f"before-{i}" for i in range(300)} <= on_third, "the new replica holds every record"

    added = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="reassign", target="leader", change="add"))
    nem.heal(added)
    assert added.detail["replicas_after"] == [first, third, second] and added.detail["reassignment"] == "complete"
    removed = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="reassign", target=f"broker:{first}",
                                     change="remove"))
    nem.heal(removed)
    assert c.describe(topic).partition(topic, 0).replicas == [third, second], removed.detail

    raised = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="alter_config", target="leader",
                                    config="min.insync.replicas", value="2"))
    assert raised.detail["value_before"] is None and c.topic_config(topic, "min.insync.replicas") == "2"
    nem.heal(raised)
    grown = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="add_partitions", target="leader", new_partitions=2))
    nem.heal(grown)
    events.close()
    assert (grown.detail["partitions_before"], grown.detail["partitions_after"]) == (1, 3)
    c.wait_for(lambda st: len([p for p in st.partitions if p.topic == topic]) == 3, 30, "three partitions")
    assert c.topic_config(topic, "min.insync.replicas") is None, "the heal gave the topic its default back"
    assert not [e for _, e in produce(c, topic, 5, "all", prefix="after") if e is not None]
    lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e.get("change") or e.get("config") for e in lines if e["type"] == "fault"] == \
        ["move", "add", "remove", "min.insync.replicas", None], "each operation's account is in its events"


def test_a_topic_recreated_by_hand_is_a_new_empty_topic_with_the_old_ones_shape(healed, tmp_path):
    """An operator's delete and create under the same name, as the recreate_topic fault runs it: the
    new topic has a new id, the same replicas and the topic's own configs, holds none of the old
    topic's records on any replica, and takes writes from offset 0; the fault's events say so."""
    c = healed
    first, second, third = c.settings.broker_ids
    topic = unique_topic("recreate")
    c.create_topic(topic, replica_assignment=[[second, third, first], [third, first, second]],
                   config={"min.insync.replicas": "2", "retention.ms": "3600000"})
    c.wait_full_isr(topic)
    assert not [e for _, e in produce(c, topic, 200, "all", prefix="old") if e is not None]
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, topic, events)
    again = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="recreate_topic", target="leader"))
    nem.heal(again)
    events.close()
    d = again.detail
    assert d["recreated"] == "recreated", d
    assert d["topic_id_before"] != d["topic_id_after"] and d["deleted_ms"] <= d["created_ms"], d
    meta = c.admin.list_topics(topic, timeout=10).topics[topic]
    assert [list(meta.partitions[p].replicas) for p in sorted(meta.partitions)] == \
        [[second, third, first], [third, first, second]], "the same replicas, in the same order"
    assert c.topic_config(topic, "min.insync.replicas") == "2" and c.topic_config(topic, "retention.ms") == "3600000"
    c.wait_full_isr(topic)
    assert not [r for b in c.settings.broker_ids for r in replica_log(c, b, topic)], "no replica keeps a record"
    assert not [e for _, e in produce(c, topic, 5, "all", prefix="new") if e is not None]
    assert sorted(consume_all(c, topic, 2, 5)) == [f"new-{i}" for i in range(5)], \
        "the new topic holds only what was written to it"
    (line,) = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines() if '"fault"' in x]
    assert line["recreated"] == "recreated" and line["topic"] == topic and line["created_ms"] >= line["deleted_ms"]


def test_a_groups_offsets_reset_by_hand_move_only_while_it_has_no_members(healed, tmp_path):
    """An operator's kafka-consumer-groups --reset-offsets, as a fault: Kafka refuses it while the
    group has a member, and moves the committed offsets back once the group is empty; the fault's
    events say which (what the judge excuses a group's offset_regression by)."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition

    c = healed
    topic, group = unique_topic("reset"), unique_topic("g")
    c.create_topic(topic, replication_factor=3)
    c.wait_full_isr(topic)
    assert not [e for _, e in produce(c, topic, 50, "all", prefix="r") if e is not None]
    member = Consumer(c.client_config(**{"group.id": group, "enable.auto.commit": False,
                                         "auto.offset.reset": "earliest"}))
    member.subscribe([topic])
    read = 0
    deadline = time.monotonic() + 30
    while read < 50 and time.monotonic() < deadline:
        read += len(member.consume(50, timeout=1.0))
    member.commit(asynchronous=False)
    events = EventLog(tmp_path / "events.jsonl")
    nem = Nemesis(c, topic, events)
    refused = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="reset_offsets", target=f"group_coordinator:{group}"))
    nem.heal(refused)
    member.close()
    reset = nem.apply(PlannedFault(at_s=0, duration_s=0, kind="reset_offsets", target=f"group_coordinator:{group}"))
    nem.heal(reset)
    events.close()
    assert read == 50 and refused.detail["offsets_reset"].startswith("refused: "), refused.detail
    assert reset.detail["offsets_reset"] == "reset" and reset.detail["group"] == group, reset.detail
    committed = c.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])
    (tp,) = committed[group].result(15).topic_partitions
    assert tp.offset == 0, "reset to the partition's first offset"


def test_groups_are_deleted_by_kafkas_own_tool_once_empty(healed):
    """The pytest plugin's clean-up between tests: kafka-consumer-groups --delete refuses a group
    with a member and one that never formed, each by name, and deletes an empty one."""
    from confluent_kafka import Consumer

    c = healed
    topic, group, never = unique_topic("del"), unique_topic("g"), unique_topic("never")
    c.create_topic(topic, replication_factor=3)
    c.wait_full_isr(topic)
    member = Consumer(c.client_config(**{"group.id": group, "enable.auto.commit": False,
                                         "auto.offset.reset": "earliest"}))
    member.subscribe([topic])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.5)
    busy = c.delete_groups([group])
    member.close()
    done = c.delete_groups([group, never])
    assert busy[group].startswith("refused: ") and "GroupNotEmpty" in busy[group], busy
    assert done[group] == "deleted", done
    assert done[never].startswith("refused: ") and "GroupIdNotFound" in done[never], done


def test_an_open_transaction_aborted_by_hand_stays_aborted_when_its_producer_commits(healed):
    """An operator's kafka-transactions abort, as the abort_transaction fault runs it: the producer's
    open transaction on the partition is found and aborted; the producer's commit after it succeeds,
    and a read_committed reader still sees none of the aborted transaction's records there (Kafka
    documents the abort for hanging transactions only). With nothing open, the tool aborts nothing."""
    from confluent_kafka import Consumer, Producer

    c = healed
    topic = unique_topic("abort")
    c.create_topic(topic, replication_factor=3)
    c.wait_full_isr(topic)
    p = Producer(c.client_config(**{"transactional.id": unique_topic("tx"), "transaction.timeout.ms": 60000}))
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"t-{i}".encode(), partition=0)
    p.flush(30)
    aborted = c.abort_transaction(topic, 0)
    p.commit_transaction(30)
    nothing = c.abort_transaction(topic, 0)
    p.begin_transaction()
    p.produce(topic, value=b"after", partition=0)
    p.commit_transaction(30)
    reader = Consumer(c.client_config(**{"group.id": unique_topic("r"), "isolation.level": "read_committed",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    reader.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while "after" not in seen and time.monotonic() < deadline:
        seen += [m.value().decode() for m in reader.consume(10, timeout=1.0) if m.error() is None]
    reader.close()
    assert aborted["transaction_aborted"] == "aborted" and aborted["start_offset"] == 0, aborted
    assert nothing == {"transaction_aborted": "none open"}, nothing
    assert seen == ["after"], "the aborted transaction's records stay aborted though its producer committed"
