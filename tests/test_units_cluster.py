"""Pure logic of the cluster layer: no Docker needed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.cluster import quorum
from harness.cluster.settings import (
    ClusterSettings,
    broker_properties,
    controller_format_args,
    controller_properties,
    zookeeper_config,
)
from harness.cluster.topology import Topology
from harness.setup import images
from harness.versions import KAFKA_VERSIONS, get_version, version_mode_pairs


def test_every_broker_link_has_its_own_proxy():
    topo = Topology([1, 2, 3], "zk", quorum=(201, 202, 203))
    ips = {1: "10.0.1.2", 2: "10.0.2.2", 3: "10.0.3.2", 201: "10.1.1.2", 202: "10.1.2.2", 203: "10.1.3.2"}
    specs = topo.proxies(ips)
    names = [s.name for s in specs]
    assert len(names) == len(set(names))
    # 3 client + 9 replication (incl. self) + 9 broker-ZooKeeper + 3 admin + 6 ordered pairs x 2 ports
    assert len(specs) == 3 + 9 + 9 + 3 + 12
    by = {s.name: s for s in specs}
    assert by["repl-1-2"].listen == "10.0.1.2:19102" and by["repl-1-2"].upstream == "kafka-2:9093"
    assert by["repl-2-1"].listen == "10.0.2.2:19101"
    assert by["zk-3-2"].listen == "10.0.3.2:21812" and by["zk-3-2"].upstream == "zookeeper-2-server:2181"
    assert by["zq-1-3"].listen == "10.1.1.2:2883" and by["zq-1-3"].upstream == "zookeeper-3-server:2883"
    assert by["ze-3-1"].listen == "10.1.3.2:3881" and by["ze-3-1"].upstream == "zookeeper-1-server:3881"
    assert by["admin-2"].listen == "0.0.0.0:9302" and by["admin-2"].upstream == "zookeeper-2-server:2181"
    listens = [s.listen for s in specs]
    assert len(listens) == len(set(listens)), "two proxies would bind the same address"


def test_controller_links_go_through_proxies_on_every_side():
    topo = Topology([1, 2, 3], "kraft", quorum=(101, 102, 103))
    ips = {1: "10.0.1.2", 2: "10.0.2.2", 3: "10.0.3.2", 101: "10.1.1.2", 102: "10.1.2.2", 103: "10.1.3.2"}
    by = {s.name: s for s in topo.proxies(ips)}
    assert by["ctl-2-3"].listen == "10.0.2.2:19303" and by["ctl-2-3"].upstream == "controller-3-server:19303"
    assert by["cc-1-2"].listen == "10.1.1.2:19302" and by["cc-1-2"].upstream == "controller-2-server:19302"
    assert "cc-1-1" not in by, "a controller has no link to itself"
    assert topo.aliases_on_quorum_net(2) == ["controller-1", "controller-3"]
    assert topo.node_key(102) == "controller-2" and topo.node_key(2) == "kafka-2"
    # a controller's own links: to its peers (cut_coordination) and, for isolate, the brokers' to it too
    assert set(topo.coordination(102)) == {"cc-2-1", "cc-1-2", "cc-2-3", "cc-3-2"}
    assert set(topo.isolation_links(102)) == {"cc-2-1", "cc-1-2", "cc-2-3", "cc-3-2", "ctl-1-2", "ctl-2-2",
                                              "ctl-3-2"}
    assert topo.one_way(101, 103) == [("cc-1-3", "upstream"), ("cc-3-1", "downstream")]
    assert topo.peers_of(101) == [102, 103] and topo.peers_of(1) == [2, 3]


def test_isolation_cuts_every_link_of_a_broker_but_no_other():
    topo = Topology([1, 2, 3], "kraft", quorum=(101, 102, 103))
    iso = set(topo.isolation_links(2))
    assert iso == {"client-2", "repl-2-1", "repl-2-3", "repl-1-2", "repl-3-2", "ctl-2-1", "ctl-2-2", "ctl-2-3"}
    assert topo.one_way(1, 2) == [("repl-1-2", "upstream"), ("repl-2-1", "downstream")]


def test_a_private_client_has_a_proxy_per_broker_and_a_listener_of_its_own():
    topo = Topology([1, 2, 3], "kraft", ("t", "copier"))
    by = {s.name: s for s in topo.proxies({1: "10.0.1.2", 2: "10.0.2.2", 3: "10.0.3.2"})}
    assert by["client-2-t"].listen == "0.0.0.0:9202" and by["client-2-t"].upstream == "kafka-2:9110"
    assert by["client-3-copier"].listen == "0.0.0.0:9213" and by["client-3-copier"].upstream == "kafka-3:9111"
    assert topo.client_links(1) == ["client-1", "client-1-t", "client-1-copier"]
    assert set(topo.client_links(1)) <= set(topo.isolation_links(1)), "isolating a broker cuts every client"
    s = ClusterSettings(mode="kraft", private_clients=["t", "copier"])
    p = broker_properties(s, 2, 40002, [41002, 42002])
    assert "listeners=CLIENT://0.0.0.0:9092,PRIVATE0://0.0.0.0:9110,PRIVATE1://0.0.0.0:9111,REPLICATION://" in p
    assert ("advertised.listeners=CLIENT://127.0.0.1:40002,PRIVATE0://127.0.0.1:41002,PRIVATE1://127.0.0.1:42002,"
            "REPLICATION://kafka-2-repl:19102") in p
    assert "PRIVATE1:PLAINTEXT" in p


def test_broker_properties_route_everything_through_proxies():
    s = ClusterSettings(kafka_version="3.9.1", brokers=3, mode="zk", racks=["a", "b", "c"])
    p = broker_properties(s, 2, 40002)
    assert "advertised.listeners=CLIENT://127.0.0.1:40002,REPLICATION://kafka-2-repl:19102" in p
    assert "zookeeper.connect=zk-1:21811,zk-2:21812,zk-3:21813" in p
    assert "broker.rack=b" in p
    assert f"replica.lag.time.max.ms={s.replica_lag_time_max_ms}" in p
    k = ClusterSettings(kafka_version="4.1.2", mode="kraft")
    voters = "controller.quorum.voters=101@controller-1:19301,102@controller-2:19302,103@controller-3:19303"
    assert voters in broker_properties(k, 1, 1)
    c2 = controller_properties(k, 2)
    assert "process.roles=controller" in c2 and "node.id=102" in c2 and "CONTROLLER://0.0.0.0:19302" in c2
    assert voters in c2


def test_a_dynamic_quorum_bootstraps_and_formats_its_voters_with_directory_ids():
    k = ClusterSettings(kafka_version="3.9.1", mode="kraft", dynamic_quorum=True, spare_controllers=1)
    assert k.coordination_ids == [101, 102, 103, 104]
    boot = "controller.quorum.bootstrap.servers=controller-1:19301,controller-2:19302,controller-3:19303"
    assert boot in broker_properties(k, 1, 1) and "controller.quorum.voters" not in broker_properties(k, 1, 1)
    assert "advertised.listeners=CONTROLLER://controller-4:19304" in controller_properties(k, 4)
    dirs = {1: "d1", 2: "d2", 3: "d3"}
    assert controller_format_args(k, 2, dirs) == (
        "--initial-controllers 101@controller-1:19301:d1,102@controller-2:19302:d2,103@controller-3:19303:d3")
    assert controller_format_args(k, 4, dirs) == "--no-initial-controllers", "a spare starts as an observer"


def test_a_zookeeper_ensemble_names_every_server_with_ports_of_its_own_and_each_itself_by_a_wildcard():
    cfg = zookeeper_config(ClusterSettings(kafka_version="3.9.1", mode="zk"), 1)
    assert "server.2=zk-2:2882:3882" in cfg and "quorumListenOnAllIPs=true" in cfg
    assert "server.1=0.0.0.0:2881:3881" in cfg, "its own address, which a peer would dial back, is a wildcard"
    assert "server.1=zk-1:2881:3881" in zookeeper_config(ClusterSettings(kafka_version="3.9.1", mode="zk"), 2)
    assert "server." not in zookeeper_config(ClusterSettings(kafka_version="3.9.1", mode="zk", zookeepers=1), 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kafka_version": "0.10.0"}, "allowed: 2.8.2, 3.9.1, 3.9.2, 4.1.1, 4.1.2, 4.2.2, 4.3.1, 4.4.0"),
        ({"kafka_version": "4.1.2", "mode": "zk"}, "not available on Kafka 4.1.2; allowed: kraft"),
        ({"kafka_version": "2.8.2", "mode": "kraft"}, "allowed: zk"),
        ({"brokers": 3, "racks": ["a"]}, "racks lists 1 entries but brokers = 3"),
        ({"brokers": 0}, "greater than or equal to 1"),
        ({"bogus": 1}, "Extra inputs are not permitted"),
        ({"private_clients": ["a", "a"]}, "names must differ"),
        ({"private_clients": ["a b"]}, "names must differ and use letters"),
        ({"private_clients": ["a", "b", "c", "d", "e"]}, "at most 4 items"),
        ({"mode": "kraft", "controllers": 2}, "Input should be 1, 3 or 5"),
        ({"kafka_version": "3.9.1", "mode": "zk", "controllers": 3}, "controllers: KRaft only"),
        ({"mode": "kraft", "zookeepers": 3}, "zookeepers: ZooKeeper mode only"),
        ({"kafka_version": "3.9.1", "mode": "zk", "zookeepers": 5}, "Input should be 1 or 3"),
        ({"kafka_version": "2.8.2", "mode": "zk", "dynamic_quorum": True}, "dynamic_quorum needs KRaft on Kafka 3.9"),
        ({"mode": "kraft", "spare_controllers": 1}, "spare_controllers needs dynamic_quorum"),
    ],
)
def test_bad_settings_are_refused_with_what_is_allowed(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        ClusterSettings(**kwargs)


def test_versions_table_is_consistent():
    assert {"2.8.2", "3.9.1"} <= set(KAFKA_VERSIONS)
    assert any(v.startswith("4.1.") for v in KAFKA_VERSIONS)
    assert ("3.9.1", "zk") in version_mode_pairs() and ("3.9.1", "kraft") in version_mode_pairs()
    assert get_version("4.1.2").logging == "log4j2" and get_version("2.8.2").logging == "log4j1"
    with pytest.raises(KeyError, match="allowed"):
        get_version("1.0.0")


def test_image_tags_are_stable_and_follow_their_inputs(monkeypatch, tmp_path):
    t1 = images.kafka_ref("3.9.1").tag
    assert t1 == images.kafka_ref("3.9.1").tag
    assert t1 != images.kafka_ref("2.8.2").tag
    # Changing a file of the recipe changes the tag.
    import shutil

    shutil.copytree(images.DOCKER_DIR, tmp_path / "docker")
    (tmp_path / "docker" / "kafka" / "log4j.properties").write_text("changed\n")
    monkeypatch.setattr(images, "DOCKER_DIR", tmp_path / "docker")
    assert images.kafka_ref("3.9.1").tag != t1
    monkeypatch.setenv("KCHAOS_BASE_IMAGE", "eclipse-temurin:17-jre")
    assert images.base_ref().tag == "eclipse-temurin:17-jre"


def test_cluster_ids_never_start_with_a_dash(monkeypatch):
    """CI once drew an id starting with "-"; the storage tool took it for an option and the
    KRaft controller exited. Feed the generator such a UUID first."""
    import uuid

    from harness.cluster import settings

    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x10" * 16)])
    monkeypatch.setattr(settings.uuid, "uuid4", lambda: next(draws))
    cid = settings.new_cluster_id()
    assert not cid.startswith("-") and len(cid) == 22
    monkeypatch.undo()
    assert all(not settings.new_cluster_id().startswith("-") for _ in range(2000))


def _srvr(mode: str, zxid: int) -> str:
    return f"Zookeeper version: 3.8.4\nLatency min/avg/max: 0/1/2\nZxid: {zxid:#x}\nMode: {mode}\nNode count: 48\n"


def test_the_ensemble_leader_epoch_and_lag_come_from_each_servers_srvr():
    epoch = 3 << 32
    q = quorum.zk_state_of({201: _srvr("follower", epoch + 7), 202: _srvr("leader", epoch + 9), 203: None})
    assert (q.leader, q.epoch, q.majority) == (202, 3, True)
    assert [(n.node, n.reachable, n.role, n.lag) for n in q.nodes] == [
        (201, True, "follower", 2), (202, True, "leader", 0), (203, False, "", None)]
    # a leader alone (its followers looking for another) serves no majority
    alone = quorum.zk_state_of({201: "This ZooKeeper instance is not currently serving requests\n",
                                202: _srvr("leader", epoch + 9), 203: None})
    assert alone.leader == 202 and not alone.majority
    # an old leader cut off still says "leader" for a while: the newest epoch's leader is the one
    both = quorum.zk_state_of({201: _srvr("follower", (2 << 32) + 40), 202: _srvr("leader", epoch + 1),
                               203: _srvr("leader", (2 << 32) + 41)})
    assert (both.leader, both.majority) == (202, True)
    assert quorum.zk_state_of({201: None, 202: None, 203: None}).leader == -1


def test_the_kraft_leader_is_the_controller_that_describes_the_quorum_with_the_highest_epoch():
    old = {"leader": 101, "epoch": 4, "voters": {101: 50, 102: 40, 103: 40}, "observers": {}, "in_touch": [101]}
    new = {"leader": 102, "epoch": 5, "voters": {101: 50, 102: 60, 103: 58}, "observers": {104: 60},
           "in_touch": [102, 103]}
    q = quorum.kraft_state_of({101: old, 102: new, 103: {}, 104: None})
    assert (q.leader, q.epoch, q.voters, q.majority) == (102, 5, (101, 102, 103), True)
    assert {n.node: (n.role, n.lag, n.reachable) for n in q.nodes} == {
        101: ("follower", 10, True), 102: ("leader", 0, True), 103: ("follower", 2, True),
        104: ("observer", 0, False)}
    assert not quorum.kraft_state_of({101: old}).majority, "one voter of three in touch is no majority"
    assert quorum.kraft_state_of({101: {}, 102: None}).leader == -1


class _Answers:
    """An admin client stand-in whose CreateTopics answers come from a list: errors by code, None for success."""

    def __init__(self, codes: list[int | None]):
        self.codes = list(codes)
        self.asked = 0

    def create_topics(self, topics, **_kw):
        from concurrent.futures import Future

        from confluent_kafka import KafkaError, KafkaException
        self.asked += 1
        fut: Future = Future()
        code = self.codes.pop(0)
        if code is None:
            fut.set_result(None)
        else:
            fut.set_exception(KafkaException(KafkaError(code)))
        return {topics[0].topic: fut}


def _topics_on(admin: _Answers):
    from types import SimpleNamespace

    from harness.cluster.topics import Topics
    t = Topics()
    t.settings = SimpleNamespace(brokers=3)
    t.admin = admin
    return t


def test_creating_a_topic_asks_again_after_a_transient_client_error(monkeypatch):
    from confluent_kafka import KafkaError

    from harness.cluster import topics
    monkeypatch.setattr(topics.time, "sleep", lambda s: None)
    # librdkafka destroyed the bootstrap handle the request was queued on; the second try succeeds.
    admin = _Answers([KafkaError._DESTROY, None])
    _topics_on(admin).create_topic("t", 1, 3)
    assert admin.asked == 2
    # The first request reached the controller after all: "already exists" on the retry is success.
    admin = _Answers([KafkaError._TRANSPORT, KafkaError.TOPIC_ALREADY_EXISTS])
    _topics_on(admin).create_topic("t", 1, 3)
    assert admin.asked == 2


def test_a_cluster_that_never_answers_a_topic_creation_is_a_run_not_carried_out(monkeypatch):
    """A kept cluster whose controller did not come back after a drawn run's heal ("Failed while
    waiting for controller", _TIMED_OUT) ended a hunt with a traceback: it is the cluster's failure
    (ClusterError, which a hunt records as a run that could not be carried out, and boots a new
    cluster for the next), not Kafka refusing the topic (TopicError, bad input)."""
    from confluent_kafka import KafkaError

    from harness.cluster import topics
    from harness.cluster.errors import ClusterError
    from harness.run.runner import NOT_CARRIED_OUT

    clock = iter(range(0, 1000, 20))
    monkeypatch.setattr(topics.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(topics.time, "sleep", lambda s: None)
    admin = _Answers([KafkaError._TIMED_OUT] * 10)
    with pytest.raises(ClusterError, match="topic t: not created within 30 s") as e:
        _topics_on(admin).create_topic("t", 1, 3)
    assert isinstance(e.value, NOT_CARRIED_OUT) and admin.asked == 2, "asked until the deadline, then given up"


def test_creating_a_topic_fails_at_once_on_a_lasting_error():
    from confluent_kafka import KafkaError

    from harness.cluster.errors import TopicError
    admin = _Answers([KafkaError.TOPIC_ALREADY_EXISTS])
    with pytest.raises(TopicError, match="topic t:"):
        _topics_on(admin).create_topic("t", 1, 3)
    admin = _Answers([KafkaError.POLICY_VIOLATION])
    with pytest.raises(TopicError):
        _topics_on(admin).create_topic("t", 1, 3)
    assert admin.asked == 1


def test_an_unreadable_tar_stream_of_a_brokers_files_is_an_error_the_reader_falls_back_on():
    """A garbled stream from the engine (seen on a loaded machine: "bad checksum") must not end the
    run: ``files`` says RuntimeError, on which the replica reader asks Kafka's own tool instead."""
    from types import SimpleNamespace

    from harness.cluster import KafkaCluster
    from harness.cluster.settings import ClusterSettings

    c = KafkaCluster.__new__(KafkaCluster)
    c.settings = ClusterSettings()
    garbled = SimpleNamespace(exit_code=0, output=b"\x01" * 1024)
    c._containers = {"kafka-1": SimpleNamespace(get_wrapped_container=lambda: SimpleNamespace(
        exec_run=lambda *a, **k: garbled))}
    with pytest.raises(RuntimeError, match="unreadable"):
        c.files("kafka-1", "/data", "t-*/*.log")


def test_a_pause_the_freezer_gave_up_on_is_asked_again(monkeypatch):
    """runc's "unable to freeze" (the cgroup freezer timed out on a loaded machine) left a drawn
    pause skipped: the pause is asked again; any other refusal is given up at once."""
    import docker

    from harness.cluster import nodes

    monkeypatch.setattr(nodes.time, "sleep", lambda s: None)

    class Container:
        def __init__(self, errors):
            self.errors, self.asked = list(errors), 0

        def pause(self):
            self.asked += 1
            if self.errors:
                raise docker.errors.APIError(self.errors.pop(0))

    def cluster_with(container):
        c = nodes.NodeFaults.__new__(nodes.NodeFaults)
        c._paused = set()
        c._node = lambda n: container
        return c

    flaky = Container(["OCI runtime pause failed: unable to freeze: unknown"])
    c = cluster_with(flaky)
    c.pause(1)
    assert flaky.asked == 2 and c._paused == {1}
    gone = Container(["No such container"])
    with pytest.raises(docker.errors.APIError):
        cluster_with(gone).pause(1)
    assert gone.asked == 1


def test_a_pause_whose_node_a_stop_thawed_heals_without_thawing_it_again():
    """A pause and a clean restart of the same leader overlapped: the engine thaws a frozen node as
    its stop begins, and while the broker ran its controlled shutdown the pause's heal asked the
    engine to thaw it and was refused, 500 "is not paused", which failed the run. The node counts as
    no longer paused from the stop's start, and a thaw refused as "is not paused" is what the heal
    wanted; any other refusal still fails it."""
    import docker

    from harness.cluster import nodes

    class Container:
        def __init__(self, refusal=None):
            self.refusal, self.unpaused, self.paused = refusal, 0, False

        def pause(self):
            self.paused = True

        def unpause(self):
            self.unpaused += 1
            if self.refusal:
                raise docker.errors.APIError("500 Server Error", explanation=self.refusal)
            self.paused = False

        def stop(self, timeout):
            assert 1 not in c._paused, "the node still counted as paused while its stop ran"
            self.paused = False

    def cluster_with(container):
        out = nodes.NodeFaults.__new__(nodes.NodeFaults)
        out._paused, out._stopped = set(), set()
        out._node = lambda n: container
        return out

    node = Container()
    c = cluster_with(node)
    c.pause(1)
    c.stop_broker(1)
    c.resume(1)
    assert node.unpaused == 0 and c._paused == set() and c._stopped == {1}

    thawed = Container("Container e9a6ce92 is not paused")
    c = cluster_with(thawed)
    c.pause(1)
    c.resume(1)
    assert thawed.unpaused == 1 and c._paused == set()

    gone = Container("No such container: e9a6ce92")
    c = cluster_with(gone)
    c.pause(1)
    with pytest.raises(docker.errors.APIError):
        c.resume(1)


def test_replicas_are_placed_from_the_seed_as_kafka_places_them():
    """Kafka's placement without racks (leaders round-robin from a start broker, followers shifted),
    its start and shift drawn from the seed: the same seed, the same brokers in the same roles."""
    from harness.cluster.topics import seeded_assignment

    brokers = [1, 2, 3]
    for seed in range(1, 30):
        placed = seeded_assignment(6, 3, brokers, seed)
        assert placed == seeded_assignment(6, 3, brokers, seed)
        assert all(sorted(r) == brokers for r in placed), "every replica on its own broker"
        leaders = [r[0] for r in placed]
        assert leaders[:3] == leaders[3:] and sorted(leaders[:3]) == brokers, "leaders round-robin"
    assert len({tuple(map(tuple, seeded_assignment(3, 3, brokers, s))) for s in range(1, 30)}) > 3
    assert seeded_assignment(4, 2, [1, 2, 3, 4, 5], 3) == seeded_assignment(4, 2, [1, 2, 3, 4, 5], 3)
    assert seeded_assignment(2, 1, [1], 9) == [[1], [1]]


def test_images_prefetched_in_a_thread_are_waited_for_one_by_one_and_a_failed_one_is_an_error(monkeypatch):
    """images.Prefetch builds later versions in order while the caller goes on: wait(v) returns once
    v is built, at once for a version it was not asked for, and raises ImageError for a failed build."""
    import threading

    built: list[str] = []
    gate = threading.Event()

    def ensure(client, versions, log):
        (v,) = versions
        gate.wait(5)
        if v == "bad":
            raise images.ImageError("mvn: nothing resolved")
        built.append(v)

    monkeypatch.setattr(images, "ensure", ensure)
    p = images.Prefetch(lambda: None, ["3.9.1", "bad", "4.1.2"], log=lambda m: None)
    p.wait("2.8.2")  # not prefetched: nothing to wait for
    assert built == []
    gate.set()
    p.wait("3.9.1")
    assert built[0] == "3.9.1"
    with pytest.raises(images.ImageError, match="bad's image could not be built: mvn: nothing resolved"):
        p.wait("bad")
    p.wait("4.1.2")
    assert built == ["3.9.1", "4.1.2"]


def test_the_zookeeper_server_a_broker_is_connected_to_is_read_from_its_established_connections():
    """/proc/net/tcp as a broker's container shows it: a listening socket, a connection to a broker
    and one to ZooKeeper server 2's proxy (21812 = 0x5534), then the same connection closing."""
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    listening = "   0: 00000000:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1\n"
    to_broker = "   1: 0A000003:C350 0A000004:2384 01 00000000:00000000 00:00000000 00000000  1000        0 2\n"
    to_zk2 = "   2: 0A000003:C352 0A000002:5534 01 00000000:00000000 00:00000000 00000000  1000        0 3\n"
    ports = {201: 21811, 202: 21812, 203: 21813}
    assert quorum.zookeeper_server_connected(header + listening + to_broker + to_zk2, ports) == 202
    closing = to_zk2.replace(" 01 ", " 06 ")  # TIME_WAIT: between servers
    assert quorum.zookeeper_server_connected(header + listening + to_broker + closing, ports) is None
    v6 = "   0: 0000000000000000FFFF00000A000003:C352 0000000000000000FFFF00000A000002:5535 01 0 0 0 0 0 4\n"
    assert quorum.zookeeper_server_connected(header + v6, ports) == 203


def test_a_commands_output_is_its_stdout_then_its_stderr_never_a_line_cut_by_the_other():
    """The engine interleaves a command's two streams chunk by chunk; a DumpLogSegments record cut by
    its "Non-consecutive offsets" warning read as a record whose value held the warning (a divergence
    kchaos counted). Kept apart, each stream's lines stay whole."""
    from harness.cluster.kafka_cluster import joined_output
    from harness.run.replicas import parse_dump

    out = (b"Dumping /var/lib/kafka/data/chaos-copy-2/00000000000000000477.log\n"
           b"baseOffset: 671 lastOffset: 671 partitionLeaderEpoch: 3\n"
           b"| offset: 671 CreateTime: 1 keySize: -1 valueSize: 11 sequence: 4 headerKeys: [] payload: copier-1894\n")
    err = b"Non-consecutive offsets in /var/lib/kafka/data/chaos-copy-0/00000000000000000477.log\n"
    text = joined_output((out, err))
    assert text == (out + err).decode()
    assert [r["value"] for r in parse_dump(text, 1, "chaos-copy")] == ["copier-1894"]
    assert joined_output((out.rstrip(b"\n"), err)).endswith("copier-1894\nNon-consecutive offsets in "
                                                             "/var/lib/kafka/data/chaos-copy-0/00000000000000000477.log\n")
    assert joined_output(None) == "" and joined_output((None, b"boom")) == "boom"


class _Quorum:
    """Just enough of a cluster for QuorumChanges: its settings, topology and an exec that answers
    with the tool's outputs in turn."""

    def __init__(self, answers: list[tuple[int, str]]):
        from harness.cluster.settings import ClusterSettings

        self.settings = ClusterSettings(kafka_version="4.4.0", dynamic_quorum=True, spare_controllers=1)
        self.topo = Topology(self.settings.broker_ids, "kraft", (), tuple(self.settings.coordination_ids))
        self.answers, self.asked = answers, 0
        self.directory_ids = {1: "dir-1"}
        self.voters: tuple[int, ...] = (101, 102, 103)  # what the quorum's leader says after the tool ran

    def exec(self, key: str, cmd: list[str]) -> tuple[int, str]:
        self.asked += 1
        return self.answers.pop(0)

    def quorum_state(self, timeout_s: float = 0.5) -> quorum.QuorumState:
        return quorum.QuorumState(102, 3, self.voters)


def test_a_voter_change_kafka_refuses_for_now_is_asked_again_and_any_other_refusal_fails_at_once(monkeypatch):
    """Kafka refuses to add a controller that has not caught up yet, and the tool gives up when no
    active controller is known before its timeout; an operator asks again (two campaign runs failed
    for want of it). Anything else is not asked again."""
    from harness.cluster import quorum_changes
    from harness.cluster.kafka_tools import ToolError
    from harness.cluster.quorum_changes import QuorumChanges

    monkeypatch.setattr(quorum_changes, "RETRY_PAUSE_S", 0.0)
    lagging = (1, "Caused by: org.apache.kafka.common.errors.TimeoutException: Aborted add voter operation for "
                  "ReplicaKey(id=101, directoryId=x) since it is lagging behind")
    unassigned = (1, "TimeoutException: Timed out waiting for a node assignment. Call: removeRaftVoter")
    fencing = (1, "TimeoutException: Request timed out waiting for leader to establish HWM and fence previous voter "
                  "changes")
    c = type("C", (_Quorum, QuorumChanges), {})([lagging, fencing, unassigned, (0, "Added controller 101")])
    c.voters = (102, 103)  # 101 is not a voter until the last answer
    c.add_controller(101)
    assert c.asked == 4
    refused = (1, "org.apache.kafka.common.errors.DuplicateVoterException: The voter id for ReplicaKey(id=101) is "
                  "already part of the set of voters")
    c = type("C", (_Quorum, QuorumChanges), {})([refused, (0, "")])
    c.voters = (102, 103)
    with pytest.raises(ToolError, match="DuplicateVoterException"):
        c.add_controller(101)
    assert c.asked == 1
    monkeypatch.setattr(quorum_changes, "RETRY_S", 0.0)
    c = type("C", (_Quorum, QuorumChanges), {})([lagging, (0, "")])
    with pytest.raises(ToolError, match="lagging behind"):
        c.remove_controller(101)
    assert c.asked == 1, "not past its time"


def test_a_voter_change_whose_tool_timed_out_after_the_leader_committed_it_counts_as_made():
    """A campaign run: remove-controller failed with `The request timed out`, the removal was
    committed all the same, and kchaos, taking it for not made, never added the controller back."""
    from harness.cluster.quorum_changes import QuorumChanges

    timed_out = (1, "Caused by: org.apache.kafka.common.errors.TimeoutException: The request timed out.")
    c = type("C", (_Quorum, QuorumChanges), {})([timed_out])
    c.voters = (102, 103)  # 101 is out: the leader committed the removal
    c.remove_controller(101)
    assert c.asked == 1
    c = type("C", (_Quorum, QuorumChanges), {})([timed_out])  # still a voter: not made
    with pytest.raises(Exception, match="The request timed out"):
        c.remove_controller(101)


def test_zookeeper_is_not_asked_while_the_harness_client_is_not_connected():
    """Kazoo queues a request made while it is disconnected and wakes its connection thread with a
    byte on a socket pair it drains only once connected: a few hundred requests while an ensemble
    had no majority filled it, and the next blocked a hunt's heal for minutes (the harness polling
    for a broker's old registration, its sampler four times a second). Disconnected, both answer at
    once as ZooKeeper not answering: "still there" / the last state read, frozen."""
    import threading
    from dataclasses import replace

    from kazoo.client import KazooClient

    from harness.cluster import KafkaCluster
    from harness.cluster.state_types import ClusterState

    zk = KazooClient(hosts="127.0.0.1:1", connection_retry={"max_tries": -1, "delay": 5, "max_delay": 30})
    zk.start_async()  # a server that is not there: the client keeps connecting
    try:
        c = KafkaCluster.__new__(KafkaCluster)
        c._zk = zk
        last = ClusterState(controller=2, brokers=[1, 2, 3], partitions=[])
        c._last_zk = {"t": last}
        answers: list = []

        def ask() -> None:
            for _ in range(2000):
                answers.append((c._registered_in_zk(1), c._describe_zk_or_frozen("t", 0.5)))

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        asker.join(20)
        assert not asker.is_alive(), f"blocked after {len(answers)} questions"
        assert len(answers) == 2000 and all(a == (True, replace(last, frozen=True)) for a in answers)
    finally:
        zk.stop()
        zk.close()


def test_brokers_count_as_registered_only_from_a_live_answer_and_a_wait_that_runs_out_says_what_it_saw():
    """ZooKeeper that does not answer the harness gives the last state read, frozen: every broker and
    a controller from before the fault, which must not end the wait for the cluster to be ready. A
    wait that runs out names the brokers it wanted and what it last saw, so a run that could not go
    on says which of registration, the clients' metadata or ZooKeeper's answer was missing."""
    from types import SimpleNamespace

    from harness.cluster import KafkaCluster
    from harness.cluster.errors import ClusterError
    from harness.cluster.state_types import ClusterState

    answers = {"state": ClusterState(controller=2, brokers=[1, 2, 3], partitions=[], frozen=True)}
    c = KafkaCluster.__new__(KafkaCluster)
    c.settings = SimpleNamespace(broker_ids=[1, 2, 3])
    c._raise_if_exited = lambda restart_lost_boots=False: None
    c.describe = lambda timeout_s=5.0: answers["state"]
    c._admin = SimpleNamespace(list_topics=lambda timeout: SimpleNamespace(brokers={1: None, 2: None, 3: None}))
    with pytest.raises(ClusterError) as e:
        c.wait_ready(timeout_s=0.5)
    assert str(e.value) == ("brokers did not all register within 0 s (wanted [1, 2, 3]; last seen: ZooKeeper's "
                            "last answer (it does not answer now): [1, 2, 3], in the clients' metadata: [1, 2, 3], "
                            "controller: 2)")
    answers["state"] = ClusterState(controller=-1, brokers=[1, 3], partitions=[])
    with pytest.raises(ClusterError, match=r"last seen: registered: \[1, 3\], in the clients' metadata: "
                                           r"\[1, 2, 3\], controller: none\)"):
        c.wait_ready(timeout_s=0.5)
    answers["state"] = ClusterState(controller=2, brokers=[1, 2, 3], partitions=[])
    c.wait_ready(timeout_s=0.5)


def test_a_broker_stopped_cleanly_is_not_started_while_zookeeper_does_not_answer():
    """A clean stop while the broker could not reach ZooKeeper (the ensemble without a majority) left
    its session open; started as the ensemble re-formed, the broker exited with NodeExists and a
    hunt's run could not go on. Its start now waits while ZooKeeper does not answer, as after a kill,
    up to twice the session timeout and 5 s, and then starts it."""
    import time
    from types import SimpleNamespace

    from kazoo.client import KazooClient

    from harness.cluster import KafkaCluster

    zk = KazooClient(hosts="127.0.0.1:1", connection_retry={"max_tries": -1, "delay": 5, "max_delay": 30})
    zk.start_async()  # a server that is not there: the client keeps connecting
    started: list[float] = []
    try:
        c = KafkaCluster.__new__(KafkaCluster)
        c._zk, c._stopped, c._paused = zk, {1}, set()
        c.settings = SimpleNamespace(mode="zk", zookeeper_session_timeout_ms=100)
        c.topo = SimpleNamespace(is_coordination=lambda b: False)
        c._node = lambda b: SimpleNamespace(start=lambda: started.append(time.monotonic()))
        t0 = time.monotonic()
        waited = c.start_broker(1)
        assert 5.0 <= waited < 8 and started and started[0] - t0 >= 5.0, (waited, started)
        assert c._stopped == set()
    finally:
        zk.stop()
        zk.close()


# The log of the broker that exited while `kchaos up` formed a cluster on a loaded CI machine.
SESSION_LAPSED_AT_BOOT = """\
[2026-12-02 01:57:15,420] ERROR [KafkaServer id=2] Fatal error during KafkaServer startup. Prepare to shutdown \
(kafka.server.KafkaServer)
org.apache.zookeeper.KeeperException$SessionExpiredException: KeeperErrorCode = Session expired for /feature
\tat org.apache.zookeeper.KeeperException.create(KeeperException.java:134)
[2026-12-02 01:57:15,766] INFO [KafkaServer id=2] shutting down (kafka.server.KafkaServer)
"""


def test_a_broker_whose_session_lapsed_while_the_cluster_formed_is_started_again_twice_at_most():
    """A broker that exits at start-up because ZooKeeper expired its session is started again, as a
    supervisor would, twice at most; any other exit, or a third, is the cluster's failure to start."""
    from harness.cluster.errors import lost_its_session_while_starting
    from harness.cluster.state import BOOT_RESTARTS, StateReads

    class Forming(StateReads):
        def __init__(self):
            self._boot_restarts, self.started = {}, []

        def start_broker(self, b: int) -> float:
            self.started.append(b)
            return 0.0

    assert lost_its_session_while_starting(SESSION_LAPSED_AT_BOOT)
    other = SESSION_LAPSED_AT_BOOT.replace("SessionExpiredException", "NodeExistsException")
    assert not lost_its_session_while_starting(other)
    c = Forming()
    assert not c.restart_if_boot_lost_session(2, other) and c.started == []
    assert [c.restart_if_boot_lost_session(2, SESSION_LAPSED_AT_BOOT) for _ in range(BOOT_RESTARTS + 1)] == \
        [True] * BOOT_RESTARTS + [False]
    assert c.started == [2] * BOOT_RESTARTS
    assert c.restart_if_boot_lost_session(3, SESSION_LAPSED_AT_BOOT), "each broker has restarts of its own"


def test_the_heal_starts_again_a_broker_that_lost_its_session_while_a_fault_restarted_it_and_says_so():
    """A broker a fault restarted while ZooKeeper was paused exited at start-up when its session
    lapsed, and the run could not go on: the heal's wait now starts it again, as a supervisor would,
    and returns it so the run notes it. A wait that may not restart (a formation fault's) still fails
    on the exit, and each wait has BOOT_RESTARTS of its own, so a kept cluster's hundredth run has
    them too."""
    from types import SimpleNamespace

    from harness.cluster import KafkaCluster
    from harness.cluster.errors import ClusterError
    from harness.cluster.state import BOOT_RESTARTS
    from harness.cluster.state_types import ClusterState

    class Node:
        def __init__(self, status: str):
            self.status, self.attrs = status, {"State": {"ExitCode": 1}}

        def reload(self) -> None:
            pass

        def logs(self, tail: int | None = None) -> bytes:
            return SESSION_LAPSED_AT_BOOT.encode()

    nodes = {b: Node("running") for b in (1, 2, 3)}
    c = KafkaCluster.__new__(KafkaCluster)
    c.settings = SimpleNamespace(broker_ids=[1, 2, 3], coordination_ids=[], faultable_disks=False)
    c.topo = SimpleNamespace(node_key=lambda n: f"kafka-{n}")
    c._stopped, c._boot_restarts = set(), {}
    c._containers = {f"kafka-{b}": SimpleNamespace(get_wrapped_container=lambda b=b: nodes[b]) for b in nodes}
    c.describe = lambda timeout_s=5.0: ClusterState(controller=1, brokers=[1, 2, 3], partitions=[])
    c._admin = SimpleNamespace(list_topics=lambda timeout: SimpleNamespace(brokers={1: None, 2: None, 3: None}))
    started: list[int] = []

    def start_broker(b: int) -> float:
        started.append(b)
        nodes[b].status = "running"
        return 0.0

    c.start_broker = start_broker
    assert c.wait_ready(timeout_s=0.5, restart_lost_boots=True) == {}
    nodes[2].status = "exited"
    with pytest.raises(ClusterError, match=r"container kafka-2 exited \(code 1\)"):
        c.wait_ready(timeout_s=0.5)
    assert started == []
    for _ in range(BOOT_RESTARTS + 1):
        nodes[2].status = "exited"
        assert c.wait_ready(timeout_s=0.5, restart_lost_boots=True) == {2: 1}
    assert started == [2] * (BOOT_RESTARTS + 1)
