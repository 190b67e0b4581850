"""Feature levels: what a scenario may format a cluster with, the arguments the controllers get, and
how the levels a cluster ran with shape its verdict (ELR, KAFKA-17754 under KIP-890's second version)."""

from __future__ import annotations

import pytest

from harness import scenario as scenario_mod
from harness.checker.judge import eligible_leader_replicas, resolve_configs
from harness.checker.known_issues import known_issues, speaks_transaction_v2
from harness.checker.promises import promises
from harness.cluster import feature_levels
from harness.cluster.settings import ClusterSettings
from harness.history import RunConfig
from harness.history.events import Fault


def test_every_kraft_version_has_its_levels_and_a_zookeeper_only_version_none():
    for version in ("3.9.1", "3.9.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"):
        lv = feature_levels.levels(version)
        assert "metadata.version" in lv and lv["metadata.version"].min <= lv["metadata.version"].default
        assert all(x.min <= x.default <= x.production <= x.testing for x in lv.values()), version
    assert feature_levels.levels("2.8.2") == {}
    assert "share.version" not in feature_levels.levels("3.9.2")
    assert feature_levels.defaults("4.1.2")["share.version"] == 0  # preview: a new 4.1 cluster has no share groups
    assert feature_levels.defaults("4.2.2")["share.version"] == 1


@pytest.mark.parametrize(("version", "mode", "features", "refused"), [
    ("3.9.2", "zk", {"transaction.version": 0}, 'features: a KRaft cluster\'s feature levels; this one is zk on 3.9.2 '
                                                 '(allowed: mode = "kraft" with kafka_version 3.9.1'),
    ("2.8.2", "zk", {"metadata.version": 1}, "this one is zk on 2.8.2"),
    ("4.4.0", "kraft", {"share.version": 3}, "features.share.version: 3 is not a production-ready level on Kafka "
                                             "4.4.0 (allowed: 0..2; a new cluster gets 2)"),
    ("3.9.2", "kraft", {"transaction.version": 1}, "(allowed: 0..0; a new cluster gets 0)"),
    ("4.1.2", "kraft", {"queue.version": 1}, "features.queue.version: Kafka 4.1.2 has no such feature (allowed: "
                                             "metadata.version, transaction.version"),
    ("4.4.0", "kraft", {"kraft.version": 1}, "features.kraft.version: follows the quorum"),
    ("4.4.0", "kraft", {"group.version": True}, "features.group.version: True is not"),
])
def test_a_level_the_version_does_not_have_is_refused_naming_the_key_and_the_allowed(version, mode, features, refused):
    why = feature_levels.refusal(version, mode, features)
    assert why is not None and refused in why


def test_levels_asked_for_go_to_the_controllers_format_beside_elr():
    s = ClusterSettings(kafka_version="4.4.0", mode="kraft", features={"transaction.version": 1, "share.version": 0})
    assert s.format_args() == ("--feature transaction.version=1 --feature share.version=0 "
                               "--feature eligible.leader.replicas.version=1")
    assert ClusterSettings(kafka_version="3.9.2", mode="kraft").format_args() == ""
    assert ClusterSettings(kafka_version="3.9.2", mode="kraft",
                           features={"metadata.version": 20}).format_args() == "--feature metadata.version=20"
    off = ClusterSettings(kafka_version="4.3.1", mode="kraft", features={"eligible.leader.replicas.version": 0})
    assert not off.elr_enabled and off.format_args() == "--feature eligible.leader.replicas.version=0"
    with pytest.raises(ValueError, match="contradicts eligible_leader_replicas = true"):
        ClusterSettings(kafka_version="4.3.1", mode="kraft", eligible_leader_replicas=True,
                        features={"eligible.leader.replicas.version": 0})


def test_a_scenario_names_levels_as_a_table_or_with_set(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('name = "x"\nkafka_version = "4.4.0"\nmode = "kraft"\nfeatures = { "transaction.version" = 1 }\n')
    s = scenario_mod.load(f, ["features.group.version=0"])
    assert s.cluster_settings().features == {"transaction.version": 1, "group.version": 0}
    with pytest.raises(scenario_mod.ScenarioError, match=r"features\.share\.version: 9 .*\(allowed: 0\.\.2"):
        scenario_mod.load(f, ["features.share.version=9"])


def test_the_verdict_takes_elr_from_the_level_the_cluster_finalized():
    assert eligible_leader_replicas(RunConfig(eligible_leader_replicas=False,
                                              features={"eligible.leader.replicas.version": 1}))
    assert not eligible_leader_replicas(RunConfig(eligible_leader_replicas=True,
                                                  features={"eligible.leader.replicas.version": 0}))
    assert eligible_leader_replicas(RunConfig(eligible_leader_replicas=True, features={}))


@pytest.mark.parametrize(("client", "level", "v2"), [
    ("java 4.1.2", 2, True), ("java 4.1.2", 0, False), ("java 3.9.1", 2, False), ("librdkafka 2.16.0", 2, False),
    ("", 2, False)])
def test_only_kafka_clients_4_on_a_cluster_at_transaction_version_2_speaks_it(client, level, v2):
    assert speaks_transaction_v2(client, level) is v2


def _transactional_run(client: str, tv: int) -> RunConfig:
    name, version = client.split(" ")
    return RunConfig.model_validate({"kafka_version": "4.1.2", "mode": "kraft", "features": {"transaction.version": tv},
            "client": {"name": name, "version": version},
            "topics": [{"name": "t", "replication_factor": 3, "config": {"min.insync.replicas": "2"}}],
            "producers": [{"name": "p", "topic": "t", "acks": "all", "transactional": True}]})


@pytest.mark.parametrize(("client", "tv", "named"), [
    ("librdkafka 2.16.0", 2, True), ("java 4.1.2", 2, False), ("java 4.1.2", 0, True), ("java 3.9.1", 2, True)])
def test_kafka_17754_is_named_only_where_transactions_run_on_the_first_version(client, tv, named):
    run = _transactional_run(client, tv)
    cfgs = resolve_configs(run, {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    issues = [k.issue for k in known_issues(run, cfgs.producers.values(), {"aborted_read": 3})]
    assert ("KAFKA-17754" in issues) is named


def test_a_run_json_without_topics_is_judged_by_the_brokers_settings_and_says_so():
    """A topic takes the brokers' min.insync.replicas when run.json lists none: judging it by Kafka's
    default of 1 would excuse a loss the brokers' setting promised away."""
    run = RunConfig.model_validate({"kafka_version": "3.9.1", "broker_config": {"min.insync.replicas": "2"},
                                    "producers": [{"name": "p", "acks": "all", "idempotence": True}]})
    cfgs = resolve_configs(run, {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    assert cfgs.producers["p"].min_insync == 2
    assert any("min.insync.replicas=2" in n and "brokers' settings" in n for n in cfgs.notes)
    bare = resolve_configs(RunConfig(), {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    assert bare.producers["p"].min_insync == 1 and "min.insync.replicas=1" in bare.notes[0]


def _idempotent_run(client: str) -> RunConfig:
    name, version = client.split(" ")
    return RunConfig.model_validate({"kafka_version": "2.8.2", "mode": "zk",
            "client": {"name": name, "version": version},
            "topics": [{"name": "t", "replication_factor": 3, "config": {"min.insync.replicas": "2"}}],
            "producers": [{"name": "p", "topic": "t", "acks": "all", "idempotence": True}]})


@pytest.mark.parametrize(("client", "line", "issue", "shown"), [
    ("java 2.8.2", "INFO ... ProducerBatch - Resetting sequence number of batch with current sequence 911 for "
     "partition chaos-0 to 0", "KAFKA-14034", True),
    ("java 2.8.2", "INFO ... ProducerId set to 0 with epoch 3", "KAFKA-14034", False),
    ("librdkafka 2.16.0", "Resetting sequence number of batch with current sequence 911", "librdkafka#4953", False),
    ("librdkafka 2.16.0", "DRAIN [rdkafka#producer-821] [thrd:127.0.0.1:37288/1]: Beginning partition drain in state "
     "Assigned for PID{Id:17000,Epoch:2} epoch bump for 0 partition(s) with in-flight requests: 147 message(s) timed "
     "out on chaos-60 [1]", "librdkafka#4953", True),
    ("librdkafka 2.16.0", "DRAIN [thrd:main]: chaos [0] beginning partition drain: drain before retrying",
     "librdkafka#4953", False)])
def test_a_producers_duplicates_are_named_only_where_its_log_shows_the_mechanism(
        tmp_path, client, line, issue, shown):
    """The Java client's duplicates are KAFKA-14034 where its own log shows batches re-sequenced,
    librdkafka's are librdkafka#4953 where its own log shows the epoch bumped; without the line they
    stay unexplained (a partition drained for a retry is not a bump)."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "clients.log").write_text(f"2026-11-28 03:58:39,923 INFO kchaos.java safe {line}\n")
    run = _idempotent_run(client)
    cfgs = resolve_configs(run, {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    (k,) = known_issues(run, cfgs.producers.values(), {"duplicate": 911}, tmp_path)
    assert (k.issue, k.shown) == (issue, shown)



def _kill(broker: int, start_ms: int) -> Fault:
    return Fault(kind="kill", brokers=[broker], start_ms=start_ms, end_ms=start_ms + 5000)


def test_eligible_leader_replicas_do_not_cover_a_power_loss_beside_another_brokers_kill():
    """The replica that kept the records, killed (kill -9: its files intact, no clean-shutdown marker),
    is taken out of the eligible replicas when it registers again; once none is left the controllers
    elect the last known leader, the one that lost power and its unflushed records (Kafka 4.x
    PartitionChangeBuilder.canElectLastKnownLeader, an "unclean election" with unclean election off).
    Kafka documents it, so the loss is excused; a kill of the same broker, or a clean restart of
    another, leaves the promise standing."""
    run, seen = ELR_RUN, ELR_SEEN
    beside_kill = resolve_configs(run, seen, [_kill(2, 1000), _power_loss(1, 3000)]).producers["p"]
    same_broker = resolve_configs(run, seen, [_kill(1, 1000), _power_loss(1, 9000)]).producers["p"]
    clean_restart = resolve_configs(run, seen, [Fault(kind="restart", brokers=[2], start_ms=1000, end_ms=6000),
                                                _power_loss(1, 3000)]).producers["p"]
    assert not promises(beside_kill)["lost"].promised and not promises(beside_kill)["divergence"].promised
    assert "last known leader" in promises(beside_kill)["lost"].why
    assert beside_kill.label().endswith("+power_loss(beside another unclean shutdown)")
    for kept in (same_broker, clean_restart):
        assert promises(kept)["lost"].promised and kept.label().endswith("+power_loss")
    no_elr = RunConfig.model_validate({**run.model_dump(), "eligible_leader_replicas": False})
    assert resolve_configs(no_elr, seen, [_kill(2, 1000), _power_loss(1, 3000)]).producers["p"].label().endswith(
        "+power_loss"), "without ELR the label needs no reach: the power loss is excused however far it reached"


@pytest.mark.parametrize(("client", "line", "shown"), [
    ("librdkafka 2.16.0", "IMPLICITACK [thrd:127.0.0.1:19092/1]: chaos [0] 1 message(s) implicitly acked by "
     "subsequent batch success (msgids 2003..2003, last acked 2002)", True),
    ("librdkafka 2.16.0", "DRAIN [thrd:main]: chaos [0] beginning partition drain: drain before retrying", False),
    ("java 4.4.0", "chaos [0] 1 message(s) implicitly acked by subsequent batch success", None)])
def test_a_librdkafka_producers_loss_is_an_implicit_ack_only_where_its_log_shows_one(tmp_path, client, line, shown):
    """librdkafka's idempotent producer reports a refused batch delivered when a later one succeeds on a
    partition that does not know it: a loss is named confluent-kafka-go#921 only where the producer's
    own log shows the implicit ack; a Java producer's loss is never this."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "clients.log").write_text(f"2026-11-29 01:10:00,000 DEBUG kchaos.librdkafka safe {line}\n")
    run = _idempotent_run(client)
    cfgs = resolve_configs(run, {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    found = [k for k in known_issues(run, cfgs.producers.values(), {"lost": 1}, tmp_path)
             if k.issue == "confluent-kafka-go#921"]
    assert [k.shown for k in found] == ([] if shown is None else [shown])


def test_an_idempotent_librdkafka_producer_logs_its_idempotence_machinery_beside_a_scenarios_own_contexts():
    """debug=eos on every idempotent producer (the implicit ack's line is in that context), added to the
    contexts a scenario asks for, never replacing them; nothing added to a producer without idempotence."""
    from harness.clients.librdkafka.workload import idempotence_debug
    from harness.scenario import ProducerSpec

    assert idempotence_debug(ProducerSpec(name="p", idempotence=True)) == {"debug": "eos"}
    assert idempotence_debug(ProducerSpec(name="p", idempotence=True, config={"debug": "msg,topic"})) == \
        {"debug": "msg,topic,eos"}
    assert idempotence_debug(ProducerSpec(name="p", idempotence=True, config={"debug": "eos"})) == {"debug": "eos"}
    assert idempotence_debug(ProducerSpec(name="p", idempotence=False, config={"debug": "msg"})) == {}
    assert idempotence_debug(ProducerSpec(name="t", transactional=True)) == {"debug": "eos"}, "transactional: too"

@pytest.mark.parametrize(("clients", "line", "shown"), [
    (["librdkafka", "kafka-go"], "kafka-go returned a transaction marker as a record: chaos[0] offset 20", True),
    (["librdkafka", "kafka-go"], "fetch: context deadline exceeded", False),
    (["librdkafka"], "kafka-go returned a transaction marker as a record: chaos[0] offset 20", None)])
def test_a_kafka_go_readers_uncommitted_reads_are_its_markers_only_where_its_member_logged_one(
        tmp_path, clients, line, shown):
    """kafka-go hands transaction markers to the application as records: the reads are named
    kafka-go#1446 only where a kafka-go reader's log shows one it returned; without kafka-go in the
    run the record does not apply at all."""
    (tmp_path / "members" / "g").mkdir(parents=True)
    (tmp_path / "members" / "g" / "g-1.log").write_text(f"{line}\n")
    run = RunConfig.model_validate({"kafka_version": "3.9.1", "mode": "zk",
                                    "clients": [{"name": c, "version": "x"} for c in clients],
                                    "producers": [{"name": "p", "acks": "all"}]})
    cfgs = resolve_configs(run, {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    found = [k for k in known_issues(run, cfgs.producers.values(), {"uncommitted_read": 22}, tmp_path)
             if k.issue == "kafka-go#1446"]
    assert [k.shown for k in found] == ([] if shown is None else [shown])


# acks=all, idempotent, min.insync=2 on Kafka 4.4.0 with eligible leader replicas, and what its producer wrote
ELR_RUN = RunConfig.model_validate({"kafka_version": "4.4.0", "mode": "kraft", "eligible_leader_replicas": True,
    "topics": [{"name": "t", "replication_factor": 3, "config": {"min.insync.replicas": "2"}}],
    "producers": [{"name": "p", "topic": "t", "acks": "all", "idempotence": True}]})
ELR_SEEN = {"p": {"topics": ["t"], "acks": ["all"]}}


def _power_loss(broker: int, start_ms: int) -> Fault:
    return Fault(kind="power_loss", brokers=[broker], start_ms=start_ms, end_ms=start_ms + 5000)


def test_eligible_leader_replicas_cover_one_brokers_power_loss_and_not_several():
    """KIP-966 keeps a replica that lost data from being elected over one that kept it; when several
    brokers lose power, a record all of whose holders lost it is on no disk, and its loss is excused."""
    run, seen = ELR_RUN, ELR_SEEN
    one = resolve_configs(run, seen, [_power_loss(1, 1000), _power_loss(1, 9000)]).producers["p"]
    several = resolve_configs(run, seen, [_power_loss(1, 1000), _power_loss(2, 3000)]).producers["p"]
    assert promises(one)["lost"].promised and promises(one)["divergence"].promised
    assert not promises(several)["lost"].promised and not promises(several)["divergence"].promised
    assert "every broker that held it lost power" in promises(several)["lost"].why
    assert one.label().endswith("+power_loss") and several.label().endswith("+power_loss(several brokers)")


@pytest.mark.parametrize(("client", "line", "shown"), [
    ("librdkafka 2.16.0", "ADVBASE [rdkafka#producer-2] [thrd:app]: chaos [2] advancing epoch base msgid to 448 due "
     "to 3 message(s) in aborted transaction", True),
    ("librdkafka 2.16.0", "TXNABORT [thrd:app]: Purging and flushing 0 outstanding message(s) prior to abort", False),
    ("java 4.4.0", "advancing epoch base msgid to 448 due to 3 message(s) in aborted transaction", None)])
def test_a_librdkafka_transactions_loss_is_kchaos_f3_only_where_its_log_shows_the_base_moved(tmp_path, client, line,
                                                                                          shown):
    """A transactional librdkafka producer's lost records are kchaos-F3 where its own log shows an abort
    moving the partition's sequence base past purged messages; a Java producer's never are (None: not
    listed at all)."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "clients.log").write_text(f"2026-11-29 06:41:35,410 DEBUG kchaos.librdkafka txn {line}\n")
    name, version = client.split(" ")
    run = RunConfig.model_validate({"kafka_version": "4.4.0", "mode": "kraft",
            "client": {"name": name, "version": version},
            "topics": [{"name": "t", "replication_factor": 3, "config": {"min.insync.replicas": "2"}}],
            "producers": [{"name": "p", "topic": "t", "acks": "all", "idempotence": True, "transactional": True}]})
    cfgs = resolve_configs(run, {"p": {"topics": ["t"], "acks": ["all"]}}, [])
    f3 = [k for k in known_issues(run, cfgs.producers.values(), {"lost": 3, "torn_txn": 1}, tmp_path)
          if k.issue == "kchaos-F3"]
    assert [k.shown for k in f3] == ([] if shown is None else [shown])
