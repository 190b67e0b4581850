"""Pure logic of the cluster layer: no Docker needed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.cluster.settings import ClusterSettings, broker_properties, controller_properties
from harness.cluster.topology import Topology
from harness.setup import images
from harness.versions import KAFKA_VERSIONS, get_version, version_mode_pairs


def test_every_broker_link_has_its_own_proxy():
    topo = Topology([1, 2, 3], "zk")
    specs = topo.proxies({1: "10.0.1.2", 2: "10.0.2.2", 3: "10.0.3.2"})
    names = [s.name for s in specs]
    assert len(names) == len(set(names))
    # 3 client + 9 replication (incl. self) + 3 ZooKeeper
    assert len(specs) == 3 + 9 + 3
    by = {s.name: s for s in specs}
    assert by["repl-1-2"].listen == "10.0.1.2:19102" and by["repl-1-2"].upstream == "kafka-2:9093"
    assert by["repl-2-1"].listen == "10.0.2.2:19101"
    assert by["zk-3"].listen == "10.0.3.2:2181" and by["zk-3"].upstream == "zk-server:2181"
    listens = [s.listen for s in specs]
    assert len(listens) == len(set(listens)), "two proxies would bind the same address"


def test_isolation_cuts_every_link_of_a_broker_but_no_other():
    topo = Topology([1, 2, 3], "kraft")
    iso = set(topo.isolation_links(2))
    assert iso == {"client-2", "repl-2-1", "repl-2-3", "repl-1-2", "repl-3-2", "ctl-2"}
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
    s = ClusterSettings(brokers=3, mode="zk", racks=["a", "b", "c"])
    p = broker_properties(s, 2, 40002)
    assert "advertised.listeners=CLIENT://127.0.0.1:40002,REPLICATION://kafka-2-repl:19102" in p
    assert "zookeeper.connect=zk:2181" in p
    assert "broker.rack=b" in p
    assert f"replica.lag.time.max.ms={s.replica_lag_time_max_ms}" in p
    k = ClusterSettings(kafka_version="4.1.2", mode="kraft")
    assert "controller.quorum.voters=100@controller:9094" in broker_properties(k, 1, 1)
    assert "process.roles=controller" in controller_properties(k)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kafka_version": "0.10.0"}, "allowed: 2.8.2, 3.9.1, 4.1.2"),
        ({"kafka_version": "4.1.2", "mode": "zk"}, "not available on Kafka 4.1.2; allowed: kraft"),
        ({"kafka_version": "2.8.2", "mode": "kraft"}, "allowed: zk"),
        ({"brokers": 3, "racks": ["a"]}, "racks lists 1 entries but brokers = 3"),
        ({"brokers": 0}, "greater than or equal to 1"),
        ({"bogus": 1}, "Extra inputs are not permitted"),
        ({"private_clients": ["a", "a"]}, "names must differ"),
        ({"private_clients": ["a b"]}, "names must differ and use letters"),
        ({"private_clients": ["a", "b", "c", "d", "e"]}, "at most 4 items"),
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
