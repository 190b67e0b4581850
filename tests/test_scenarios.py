"""Scenario validation and seeded schedules: pure logic, no Docker."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.faults import CLIENT_FAULTS
from harness.run import schedule
from harness.scenario import ScenarioError, load

ROOT = Path(__file__).resolve().parent.parent
GOOD = """
name = "t"
kafka_version = "3.9.1"
brokers = 3
duration_s = 30
[topic]
partitions = 3
replication_factor = 3
min_insync_replicas = 2
[[producers]]
acks = "all"
"""


def test_a_scenario_without_a_version_runs_the_newest_in_its_mode(tmp_path):
    """No kafka_version: the default (the newest that builds), in KRaft; a version without a mode
    runs in the version's first (ZooKeeper on 3.x, whose scenarios were written for it)."""
    from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS, version_key

    s = load(write(tmp_path, GOOD.replace('kafka_version = "3.9.1"\n', "")))
    assert (s.kafka_version, s.mode) == (DEFAULT_VERSION, "kraft")
    assert max(KAFKA_VERSIONS, key=version_key) == DEFAULT_VERSION
    assert load(write(tmp_path, GOOD)).mode == "zk"
    assert load(write(tmp_path, GOOD), ["kafka_version=4.1.2"]).mode == "kraft"


def test_set_up_builds_the_versions_the_main_job_and_most_of_the_catalogue_run():
    """Set-up builds the default version's image and the catalogue's (the version most scenario
    files name): the quick matrix's cells need no image built after set-up."""
    import collections

    from harness.run.matrix import parse_target, scenario_path
    from harness.scenario.suites import QUICK
    from harness.setup import images
    from harness.versions import CATALOGUE_VERSION, DEFAULT_VERSION

    catalogue = (Path(__file__).parent.parent / "scenarios").glob("*.toml")
    named = collections.Counter(load(f).kafka_version for f in catalogue)
    assert named.most_common(1)[0][0] == CATALOGUE_VERSION
    assert images.set_up_versions() == [DEFAULT_VERSION, CATALOGUE_VERSION]
    quick = {version or load(scenario_path(name)).kafka_version for name, version, _ in map(parse_target, QUICK)}
    assert quick <= set(images.set_up_versions()), quick


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    return p


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('bogus = 1\n', r"s\.toml: bogus: unknown key"),
        ('[cluster]\nreplica_lag = 5\n',
         r"s\.toml: cluster\.replica_lag: unknown key \(allowed: auto_leader_rebalance, "),
        ('[cluster.formation]\ndelay = 1\n',
         r"cluster\.formation\.delay: unknown key \(allowed: after, delay_s, duration_s, kind\)"),
        ('[cluster.formation]\nkind = "crash"\n',
         r"cluster\.formation\.kind: Input should be 'kill', 'stop' or 'pause'"),
        ('[[producers]]\nname = "x"\nspeed = 3\n', r"producers\.1\.speed: unknown key \(allowed: .*acks, .*rate"),
    ],
)
def test_unknown_keys_are_refused_naming_file_and_key(tmp_path, extra, message):
    if message is None:
        return
    text = extra + GOOD if not extra.startswith("[") else GOOD + extra
    with pytest.raises(ScenarioError, match=message):
        load(write(tmp_path, text))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("topic.replication_factor=4", r"topic\.replication_factor: 4 is greater than brokers = 3 \(allowed: 1\.\.3\)"),
        ("producers.0.acks=2", r"producers\.0\.acks: '2' is not allowed \('0', '1' or 'all'\)"),
        ("kafka_version=1.0.0", r"kafka_version: '1\.0\.0' has no image recipe "
                               r"\(allowed: 2\.8\.2, 3\.9\.1, 3\.9\.2, 4\.1\.1, 4\.1\.2, 4\.2\.2, 4\.3\.1, 4\.4\.0\)"),
        ("mode=kraft", None),
        ("producers.0.idempotence=true", None),
    ],
)
def test_bad_values_are_refused_with_what_is_allowed(tmp_path, override, message):
    p = write(tmp_path, GOOD)
    if message is None:
        load(p, [override])  # valid
        return
    with pytest.raises(ScenarioError, match=message):
        load(p, [override])


def test_mode_not_available_on_version(tmp_path):
    with pytest.raises(ScenarioError, match=r"mode: 'zk' is not available on Kafka 4\.1\.2 \(allowed: kraft\)"):
        load(write(tmp_path, GOOD), ["kafka_version=4.1.2", "mode=zk"])


def test_fault_aimed_at_a_broker_that_does_not_exist(tmp_path):
    text = GOOD + '[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "broker:7"\n'
    msg = r"faults\.0\.target: broker 7 does not exist \(allowed: broker:1\.\.broker:3\)"
    with pytest.raises(ScenarioError, match=msg):
        load(write(tmp_path, text))
    text = GOOD + '[[faults]]\nat_s = 1\nkind = "explode"\n'
    msg = r"faults\.0: kind 'explode' is not a fault \(allowed: kill, power_loss, pause"
    with pytest.raises(ScenarioError, match=msg):
        load(write(tmp_path, text))
    text = GOOD + '[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "rack:z"\n'
    with pytest.raises(ScenarioError, match=r"rack 'z' is not in racks"):
        load(write(tmp_path, text))


def test_set_overrides_any_field_by_dotted_name(tmp_path):
    s = load(write(tmp_path, GOOD), ["topic.partitions=6", "producers.0.rate=50", "cluster.heap=-Xmx300m",
                                     "broker_config.log.flush.interval.messages=1"])
    assert s.topic.partitions == 6 and s.producers[0].rate == 50
    assert s.cluster_settings().heap == "-Xmx300m"
    with pytest.raises(ScenarioError, match=r"--set producers\.3\.acks: producers\.3 is not an index"):
        load(write(tmp_path, GOOD), ["producers.3.acks=1"])


def test_every_shipped_scenario_is_valid():
    files = sorted((ROOT / "scenarios").glob("*.toml"))
    assert files
    for f in files:
        load(f)


@pytest.mark.parametrize(("overrides", "message"), [
    (["topic.replication_factor=5"], "s.toml: topic.replication_factor: 5 is greater than brokers = 3"),
    (["mode=kraft", "controllers=2"], "s.toml: controllers: 2 is not allowed (1, 3 or 5)"),
    (["faults=[{at_s = 1, kind = \"kill\", target = \"zookeeper:1\"}]", "mode=kraft"],
     "s.toml: faults.0.target: zookeeper:1 is a ZooKeeper server; this scenario is KRaft"),
    (["faults=[{at_s = 1, kind = \"kill\", target = \"controller_zookeeper\"}]", "mode=kraft"],
     "s.toml: faults.0.target: controller_zookeeper is a ZooKeeper server; this scenario is KRaft"),
    (["faults=[{at_s = 1, kind = \"remove_controller\", target = \"controller\"}]", "kafka_version=2.8.2"],
     "remove_controller needs KIP-853 (KRaft on Kafka 3.9 or later), not zk on 2.8.2"),
    (["producers.0.config.fetch.max.wait.ms=100"],
     's.toml: producers.0.config.fetch.max.wait.ms: No such configuration property: "fetch.max.wait.ms" (librdkafka'),
    (["consumers.config.socket.timeout.ms=soon"],
     's.toml: consumers.config.socket.timeout.ms: Invalid value for configuration property "socket.timeout.ms"'),
    (["producers.0.config.acks=1"], "s.toml: producers.0.config.acks: use the producer's acks (allowed: any other "
                                    "librdkafka"),
])
def test_cli_refuses_bad_input_before_any_container_starts(tmp_path, overrides, message):
    p = write(tmp_path, GOOD)
    t0 = time.monotonic()
    sets = [x for o in overrides for x in ("--set", o)]
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(p), *sets,
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in " ".join(r.stderr.split()), r.stderr
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))
    assert time.monotonic() - t0 < 30


def test_same_seed_same_schedule_and_seed_matters(tmp_path):
    text = GOOD + '[generator]\nkinds = ["kill", "pause", "isolate", "latency"]\ntargets = ["leader", "random"]\n'
    s = load(write(tmp_path, text))
    a, b = schedule.plan(s, seed=7), schedule.plan(s, seed=7)
    assert a == b and len(a) >= 3
    assert schedule.plan(s, seed=8) != a
    assert all(f.target.role in ("leader", "broker") for f in a), "random resolved at plan time"
    assert all(x.end_s <= y.at_s for x, y in itertools.pairwise(a)), "generated faults do not overlap"
    assert all(f.end_s <= s.duration_s for f in a)


@pytest.mark.parametrize(
    ("extra", "overrides", "message"),
    [
        ("", ["producers.0.epoch_from=32000"],
         r"producers\.0: epoch_from: only a transactional producer has a producer epoch that its transactions bump "
         r"\(allowed: transactional = true\)"),
        ("", ["producers.0.transactional=true", "producers.0.epoch_from=32767"],
         r"producers\.0\.epoch_from: Input should be less than or equal to 32766"),
        ("", ["producers.0.transactional=true", "producers.0.acks=1"],
         r"producers\.0: transactional: a transactional producer needs acks = \"all\" \(got acks = \"1\"; "
         r"allowed: all\)"),
        ('[copier]\ninput_topic = "elsewhere"\n', [],
         r"copier\.input_topic: 'elsewhere' is not a topic of this scenario \(allowed: chaos\)"),
        ('[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "txn_coordinator"\n', [],
         r"faults\.0\.target: txn_coordinator needs a transactional client of this scenario \(allowed: none: make a "
         r"producer transactional or add a copier\)"),
        ('[copier]\n[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "txn_coordinator:nobody"\n', [],
         r"faults\.0\.target: txn_coordinator:nobody needs a transactional client of this scenario \(allowed: "
         r"copier\)"),
        ('[copier]\n[[faults]]\nat_s = 1\nkind = "client_kill"\ntarget = "leader"\n', [],
         r"faults\.0\.target: client_kill takes a client:NAME target"),
        ('[copier]\n[[faults]]\nat_s = 1\nkind = "client_kill"\ntarget = "client:copier"\n', [], None),
        ("", ["consumers.isolation_level=both"], None),
        ('[[faults]]\nat_s = 1\nkind = "client_latency"\ntarget = "client:nobody"\n', [],
         r"faults\.0\.target: 'nobody' is not a client of this scenario \(allowed: p\)"),
        ('[[faults]]\nat_s = 1\nkind = "client_pause"\ntarget = "leader"\n', [],
         r"faults\.0\.target: client_pause takes a client:NAME target"),
        ('[[faults]]\nat_s = 1\nkind = "client_kill"\ntarget = "client:p"\n', [],
         r"faults\.0\.target: client_kill acts on group members or transactional producers and the copier, not 'p' "
         r"\(allowed: none\)"),
        ('[generator]\nkinds = ["client_cut"]\ntargets = ["leader"]\n', [],
         r"generator: kinds: client_cut needs a client:NAME target in targets"),
        ('[generator]\nkinds = ["client_cut", "kill"]\ntargets = ["leader", "client:q"]\n', [],
         r"generator\.targets: 'q' is not a client of this scenario \(allowed: p\)"),
    ],
)
def test_transaction_keys_are_validated_before_anything_starts(tmp_path, extra, overrides, message):
    p = write(tmp_path, GOOD + extra)
    if message is None:
        load(p, overrides)
        return
    with pytest.raises(ScenarioError, match=message):
        load(p, overrides)


def test_a_client_aimed_at_by_a_link_fault_gets_links_of_its_own(tmp_path):
    """Only the clients a link fault names get a listener and proxies of their own; the generator
    draws client faults on client targets only, and the others on brokers."""
    text = GOOD + ('[[faults]]\nat_s = 1\nkind = "client_latency"\ntarget = "client:p"\n'
                   '[generator]\nkinds = ["client_pause", "kill"]\ntargets = ["leader", "client:p"]\nstart_s = 3\n')
    s = load(write(tmp_path, text))
    assert s.cluster_settings().private_clients == ["p"]
    plan = schedule.plan(s, seed=3)
    assert {(f.kind in CLIENT_FAULTS, f.target.role == "client") for f in plan} <= {(True, True), (False, False)}
    assert {f.kind for f in plan} >= {"client_pause", "kill"}
    assert load(write(tmp_path, GOOD)).cluster_settings().private_clients == []


def test_txn_state_partition_is_kafkas():
    """Partitions Kafka itself reported for these ids (its log: "Initialized transactionalId ...")."""
    from harness.run.nemesis import txn_state_partition

    assert txn_state_partition("kchaos-t", 3) == 0 and txn_state_partition("kchaos-copier", 3) == 2


GROUP = '[[groups]]\nname = "g"\nmembers = 2\n'


@pytest.mark.parametrize(
    ("extra", "overrides", "message"),
    [
        (GROUP, ["kafka_version=4.1.2", "mode=kraft", "groups.0.protocol=consumer"], None),
        (GROUP, ["groups.0.protocol=consumer"],
         r"groups\.0\.protocol: 'consumer' \(KIP-848\) needs Kafka 4\.0 or later, not 3\.9\.1 \(allowed here: "
         r"classic\)"),
        (GROUP + '[[groups]]\nname = "h"\nmembers = 5\n', [],
         r"groups: 7 members in all, share groups' included \(allowed: at most 6\)"),
        (GROUP, ["groups.0.members=7"], r"groups\.0\.members: .*6"),
        (GROUP, ["groups.0.commit=sometimes"], r"groups\.0\.commit: .*'auto', 'sync' or 'async'"),
        ('[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "group_coordinator"\n', [],
         r"faults\.0\.target: group_coordinator needs a group of this scenario \(allowed groups: none: add a "
         r"\[\[groups\]\] table\)"),
        (GROUP + '[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "group_coordinator:h"\n', [],
         r"faults\.0\.target: group_coordinator:h needs a group of this scenario \(allowed groups: g\)"),
        (GROUP + '[[faults]]\nat_s = 1\nkind = "kill"\ntarget = "group_coordinator:g"\n', [], None),
        (GROUP + '[[faults]]\nat_s = 1\nkind = "client_restart"\ntarget = "client:p"\n', [],
         r"faults\.0\.target: client_restart acts on group members, not 'p' \(allowed: g-1, g-2\)"),
        (GROUP + '[[faults]]\nat_s = 1\nkind = "client_kill"\ntarget = "client:g-3"\n', [],
         r"faults\.0\.target: 'g-3' is not a client of this scenario \(allowed: p, g-1, g-2\)"),
        (GROUP + '[[faults]]\nat_s = 1\nkind = "client_pause"\ntarget = "client:g-2"\n', [], None),
        (GROUP + '[generator]\nkinds = ["client_restart"]\ntargets = ["client:p"]\n', [],
         r"generator\.targets: client_restart acts on group members, not 'p'"),
        (GROUP + '[copier]\ngroup = "g"\n', [], r"groups: names must differ"),
    ],
)
def test_group_keys_are_validated_before_anything_starts(tmp_path, extra, overrides, message):
    p = write(tmp_path, GOOD + extra)
    if message is None:
        s = load(p, overrides)
        assert s.groups and s.groups[0].member_names == ["g-1", "g-2"]
        return
    with pytest.raises(ScenarioError, match=message):
        load(p, overrides)


def test_a_members_pause_is_its_process_not_its_links(tmp_path):
    """client_pause on a member freezes its process, so it needs no links of its own; client_cut does."""
    s = load(write(tmp_path, GOOD + GROUP + '[[faults]]\nat_s = 1\nkind = "client_pause"\ntarget = "client:g-1"\n'
                   '[[faults]]\nat_s = 2\nkind = "client_cut"\ntarget = "client:g-2"\n'))
    assert s.private_clients == ["g-2"]


def test_consumer_protocol_groups_get_a_short_broker_session(tmp_path):
    s = load(write(tmp_path, GOOD + GROUP), ["kafka_version=4.1.2", "mode=kraft", "groups.0.protocol=consumer",
                                             "groups.0.session_timeout_ms=6000"])
    cfg = s.cluster_settings().broker_config
    assert cfg["group.consumer.session.timeout.ms"] == "6000" and cfg["group.consumer.heartbeat.interval.ms"] == "1000"


def _fault(kind: str, target: str) -> str:
    return f'[[faults]]\nat_s = 1\nkind = "{kind}"\ntarget = "{target}"\n'


KRAFT = ["mode=kraft"]


@pytest.mark.parametrize(
    ("extra", "overrides", "message"),
    [
        ("controllers = 2\n", KRAFT, r"controllers: 2 is not allowed \(1, 3 or 5\)"),
        ("zookeepers = 5\n", [], r"zookeepers: 5 is not allowed \(1 or 3\)"),
        ("controllers = 3\n", [], r"controllers: KRaft only .*\(allowed: 1, 3\)"),
        ("zookeepers = 3\n", KRAFT, r"zookeepers: ZooKeeper mode only .*\(allowed: 1, 3, 5\)"),
        ("controllers = 5\n", KRAFT, None),
        (_fault("kill", "zookeeper:2"), KRAFT,
         r"faults\.0\.target: zookeeper:2 is a ZooKeeper server; this scenario is KRaft \(allowed: controller, "
         r"controller:1\.\.3, quorum_majority\)"),
        (_fault("kill", "controller:2"), [], r"faults\.0\.target: controller:2 names a KRaft controller"),
        (_fault("kill", "zookeeper:4"), [], r"faults\.0\.target: zookeeper:4 does not exist \(allowed: "
                                            r"zookeeper:1\.\.zookeeper:3\)"),
        (_fault("isolate", "zookeeper"), [], None),
        (_fault("pause", "quorum_majority"), KRAFT, None),
        (_fault("cut_fetch", "controller:1"), KRAFT,
         r"faults\.0\.target: cut_fetch acts on a broker's own links, not on controller:1 \(allowed kinds there: "
         r"kill, power_loss"),
        (_fault("cut_replication", "controller"), [], None),  # ZooKeeper mode: the controller is a broker
        (_fault("remove_controller", "controller"), ["mode=kraft", "kafka_version=3.9.1"], None),
        (_fault("remove_controller", "controller"), [],
         r"faults\.0\.target: remove_controller needs KIP-853 \(KRaft on Kafka 3\.9 or later\), not zk on 3\.9\.1 "
         r"\(allowed: mode = \"kraft\" with kafka_version 3\.9\.1, 3\.9\.2, 4\.1\.1, 4\.1\.2, 4\.2\.2, 4\.3\.1, "
         r"4\.4\.0\)"),
        (_fault("remove_controller", "leader"), KRAFT,
         r"faults\.0\.target: remove_controller acts on a controller, not leader"),
        (_fault("add_controller", "controller:2"), KRAFT,
         r"faults\.0\.target: add_controller needs a spare controller, controller:K with K > controllers = 3 "
         r"\(allowed: controller:4\.\.controller:5\)"),
        ('[generator]\nkinds = ["cut_fetch"]\ntargets = ["quorum_majority"]\n', KRAFT,
         r"generator\.kinds: cut_fetch acts on a broker's own links and no target"),
    ],
)
def test_quorum_keys_and_targets_are_validated_before_anything_starts(tmp_path, extra, overrides, message):
    text = extra + GOOD if not extra.startswith("[") else GOOD + extra
    p = write(tmp_path, text)
    if message is None:
        load(p, overrides)
        return
    with pytest.raises(ScenarioError, match=message):
        load(p, overrides)


def test_a_quorum_change_makes_the_quorum_dynamic_with_the_spares_it_names(tmp_path):
    text = GOOD + _fault("add_controller", "controller:4") + _fault("remove_controller", "controller")
    s = load(write(tmp_path, text.replace("at_s = 1", "at_s = 1\nduration_s = 2")), ["mode=kraft"])
    cs = s.cluster_settings()
    assert (cs.dynamic_quorum, cs.spare_controllers, cs.coordination_ids) == (True, 1, [101, 102, 103, 104])
    plain = load(write(tmp_path, GOOD), ["mode=kraft"]).cluster_settings()
    assert (plain.dynamic_quorum, plain.coordination_ids) == (False, [101, 102, 103])
    assert load(write(tmp_path, "zookeepers = 1\n" + GOOD)).cluster_settings().coordination_ids == [201]


@pytest.mark.parametrize(("fault", "message"), [
    ('kind = "cut_fetch"\ntarget = "follower"\nstream = "downstream"\n', None),
    ('kind = "slow_fetch"\ntarget = "follower"\nstream = "upstream"\n', None),
    ('kind = "kill"\nstream = "downstream"\n', r"faults\.0: stream: only isolate, cut_replication, cut_fetch, "
                                               r"slow_fetch, .* take stream, not kill"),
    ('kind = "one_way"\nstream = "upstream"\n', r"faults\.0: stream: only .* take stream, not one_way"),
    ('kind = "cut_fetch"\nstream = "sideways"\n', r"faults\.0\.stream: 'sideways' is not allowed"),
])
def test_a_cut_or_delay_may_act_on_one_direction_only(tmp_path, fault, message):
    p = write(tmp_path, GOOD + "[[faults]]\nat_s = 1\n" + fault)
    if message is None:
        (planned,) = schedule.plan(load(p))
        assert planned.stream in ("upstream", "downstream") and planned.to_dict()["stream"] == planned.stream
        return
    with pytest.raises(ScenarioError, match=message):
        load(p)


def test_a_generator_chains_a_share_of_its_faults_on_the_previous_ones_start(tmp_path):
    text = GOOD + ('[[faults]]\nat_s = 1\nduration_s = 1\nkind = "kill"\n'
                   '[generator]\nkinds = ["kill", "pause"]\ntargets = ["leader", "controller"]\nchain = 0.5\n'
                   'chain_delay_s = [0.2, 0.8]\nstart_s = 3\n')
    s = load(write(tmp_path, text))
    plan = schedule.plan(s, seed=4)
    generated = sorted((f for f in plan if f.number >= 1), key=lambda f: f.number)
    assert [f.number for f in generated] == list(range(1, len(generated) + 1)), "numbered after the scenario's"
    chained = [f for f in generated if f.on is not None]
    assert chained and len(chained) < len(generated), "a share, not all"
    by_number = {f.number: f for f in generated}
    start = {}  # when each is expected to start
    for f in generated:
        start[f.number] = f.at_s if f.on is None else start[f.on.fault] + f.on.delay_s
        assert start[f.number] + f.duration_s <= s.duration_s - 1
    for f in chained:
        prev = by_number[f.on.fault]
        assert f.on.event == "fault_start" and f.on.fault == f.number - 1 and 0.2 <= f.on.delay_s <= 0.8
        assert f.at_s == prev.at_s, "armed no later than the fault it follows"
    assert schedule.plan(s, seed=4) == plan, "the same seed, the same chains"
    plain = load(write(tmp_path, text.replace("chain = 0.5\n", "")))
    assert all(f.on is None for f in schedule.plan(plain, seed=4))


def test_send_steps_need_a_quiet_producer(tmp_path):
    step = '[[faults]]\nat_s = 1\nduration_s = 0\nkind = "send"\ntarget = "client:p"\n'
    with pytest.raises(ScenarioError, match=r"faults\.0\.target: send acts on producers with quiet = true, "
                                            r"not 'p' \(allowed: none\)"):
        load(write(tmp_path, GOOD + step))
    load(write(tmp_path, GOOD.replace('acks = "all"', 'acks = "all"\nquiet = true') + step))
    with pytest.raises(ScenarioError, match=r"quiet: send steps are for plain producers"):
        load(write(tmp_path, GOOD.replace('acks = "all"', 'acks = "all"\nquiet = true\ntransactional = true')))


def test_every_client_takes_a_config_table_of_its_librarys_properties(tmp_path):
    s = load(write(tmp_path, GOOD), ["producers.0.config.debug=eos", "producers.0.config.socket.timeout.ms=20000",
                                     "consumers.config.fetch.wait.max.ms=50"])
    assert s.producers[0].config == {"debug": "eos", "socket.timeout.ms": "20000"}
    assert s.consumers.config == {"fetch.wait.max.ms": "50"}
    with pytest.raises(ScenarioError, match=r"groups\.0\.config\.group\.id: use the group's name"):
        load(write(tmp_path, GOOD + '[[groups]]\nname = "g"\nmembers = 1\nconfig = { "group.id" = "other" }\n'))
    with pytest.raises(ScenarioError, match=r"copier\.config\.transactional\.id: the harness sets it"):
        load(write(tmp_path, GOOD + '[copier]\nconfig = { "transactional.id" = "mine" }\n'))
    with pytest.raises(ScenarioError,
                       match=r"client: 'no-such-library' has no driver \(allowed: librdkafka, java, franz-go, "
                             r"sarama, kafka-go, verifiable\)"):
        load(write(tmp_path, GOOD), ['client="no-such-library"'])


def test_each_client_table_names_its_library_and_version(tmp_path):
    """``client`` per table (default: the scenario's, librdkafka), ``client_version`` (default: the
    broker's), each table's ``config`` checked by its own library; bad names and versions refused."""
    s = load(write(tmp_path, GOOD), ["producers.0.client=java", "producers.0.client_version=4.1.2",
                                     "producers.0.config.compression.type=lz4",
                                     "consumers.config.fetch.wait.max.ms=50"])
    assert s.library(s.producers[0]) == ("java", "4.1.2")
    assert s.library(s.consumers) == ("librdkafka", s.kafka_version), "a table that names none has the scenario's"
    s = load(write(tmp_path, GOOD), ['client="confluent-kafka"'])
    assert s.client == "librdkafka", "the Python binding's name is librdkafka's alias"
    s = load(write(tmp_path, GOOD), ['client="java"', "client_version=2.8.2", "consumers.client=librdkafka"])
    assert s.library(s.producers[0]) == ("java", "2.8.2") and s.library(s.consumers)[0] == "librdkafka"
    with pytest.raises(ScenarioError, match=r"producers\.0\.client: 'no-such-library' has no driver \(allowed: "
                                            r"librdkafka, java, franz-go, sarama, kafka-go, verifiable\)"):
        load(write(tmp_path, GOOD), ["producers.0.client=no-such-library"])
    with pytest.raises(ScenarioError, match=r"producers\.0\.client_version: kafka-clients '3\.0\.0' has no driver "
                                            r"build \(allowed: "):
        load(write(tmp_path, GOOD), ["producers.0.client=java", "producers.0.client_version=3.0.0"])
    with pytest.raises(ScenarioError, match=r"consumers\.client_version: '0\.9' is not installed \(allowed: "):
        load(write(tmp_path, GOOD), ["consumers.client_version=0.9"])
    with pytest.raises(ScenarioError, match=r"producers\.0\.config\.debug: kafka-clients 3\.9\.1 has no producer"):
        load(write(tmp_path, GOOD), ["producers.0.client=java", "producers.0.config.debug=eos"])
