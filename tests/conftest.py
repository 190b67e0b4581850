"""Shared fixtures. Tests marked `docker` need the engine and images: if either is missing
they fail with the command that fixes it (never skip), under CI and everywhere else."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harness.clients.librdkafka.workload import ACKS0_LINGER_S
from harness.cluster import ClusterSettings, KafkaCluster
from harness.setup import cluster_images, engine, images

# Checks run on the warm Spark server, as a user's do: one JVM, warmed once, shared by both test
# workers and the `kchaos` processes the tests start (an embedded driver per worker cost the suite
# twice the CPU of its checks). tests/test_checker.py checks on an embedded driver: it asserts what a
# check leaves cached in its caller's session, which only an embedded session shows.

# One ZooKeeper server: these tests are about brokers; tests/test_quorum.py and the catalogue run the
# three-node quorum that clusters have by default.
# The ZooKeeper client at DEBUG (its pings, every few seconds): tests/test_cluster.py asserts that a
# logger's level set here reaches every broker, as `kchaos evidence` sets them.
DEFAULT_SETTINGS = ClusterSettings(kafka_version="3.9.1", mode="zk", brokers=3, zookeepers=1,
                                   private_clients=["solo"], log_levels={"org.apache.zookeeper.ClientCnxn": "DEBUG"})

pytest_plugins = ["pytester"]  # tests of the kchaos pytest plugin run user suites in a subprocess


def as_a_terminal_starts_it() -> None:
    """For ``Popen(preexec_fn=...)`` of a process a test stops with SIGINT: SIGINT handled as it is
    in a terminal's foreground job. A shell starts a background job (``cmd &`` in a script) with
    SIGINT ignored, every process under it inherits that, and Python then installs no
    KeyboardInterrupt handler: the test's Ctrl-C would reach a process that cannot hear it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def require_docker(versions: list[str] | None = None) -> None:
    st = engine.status()
    if not st.ok:
        pytest.fail(f"Docker engine needed: {st.detail}", pytrace=False)
    try:  # a version set-up did not build is built on its first test, as on a command's first use
        images.ensure(engine.client(), versions or images.set_up_versions(), log=lambda m: print(m, file=sys.stderr))
    except images.ImageError as e:
        pytest.fail(f"image could not be built: {e}", pytrace=False)


@pytest.fixture(scope="session")
def kept_cluster():
    """This worker's kept cluster (harness/run/kept_cluster.py), for the files of a KEPT_* group:
    a run boots it, or takes the one an earlier run of the same cluster settings healed."""
    from harness.run.kept_cluster import KeptCluster

    kept = KeptCluster()
    yield kept
    kept.close()


def run_on_kept(kept, s, out: Path, tag: str):
    """``s`` run on the kept cluster, on a topic of its own (``NAME-tag``)."""
    from harness.run.kept_cluster import may_share_a_cluster, with_topic_and_ids_of_its_own

    assert may_share_a_cluster(s), f"{s.name} keeps state on the cluster beyond its topic"
    return kept.execute(with_topic_and_ids_of_its_own(s, tag), out, reuse=True, log=lambda m: None)


@pytest.fixture(scope="module")
def cluster():
    """One ZooKeeper-mode cluster shared by a module's tests; each test heals what it broke."""
    require_docker([DEFAULT_SETTINGS.kafka_version])
    with KafkaCluster(DEFAULT_SETTINGS, cluster_images(DEFAULT_SETTINGS.kafka_version)) as c:
        yield c


@pytest.fixture
def healed(cluster, request):
    """Yield the shared cluster and put it back to full health afterwards."""
    yield cluster
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:  # the brokers' own account of what happened
        for b in cluster.settings.broker_ids:
            lines = [x for x in cluster.logs(f"kafka-{b}", tail=400).splitlines()
                     if any(k in x for k in ("ISR", "Isr", "WARN", "ERROR", "LeaderAndIsr", "Fetcher"))]
            print(f"--- broker {b}\n" + "\n".join(x[:300] for x in lines[-25:]))
    cluster.heal()
    cluster.wait_ready(90)


# Each test file's seconds in the last measured default suite (tests/file_costs.json). Two workers
# take one group of files at a time (the scheduler below, in collection order): the dearest go
# first, so neither worker is left with a long one while the other has nothing to do. A file not
# yet measured counts as dear: it goes early rather than alone at the end.
FILE_COSTS: dict[str, float] = json.loads((Path(__file__).parent / "file_costs.json").read_text())
UNMEASURED_FILE_COST_S = 60.0
RECORD_COSTS = "KCHAOS_RECORD_FILE_COSTS"  # set to a path: the suite's seconds per file are written there


def file_cost(path: Path) -> float:
    return FILE_COSTS.get(path.name, UNMEASURED_FILE_COST_S)


# Test files whose runs share one cluster (the kept_cluster fixture), by the group they share it in:
# the scheduler below gives a group's files to one worker, one after another, so they share its
# cluster whatever the schedule. Every other file is a group of its own (as --dist loadfile).
CLUSTER_GROUPS = dict.fromkeys(("test_run.py", "test_triggers.py", "test_driver_conformance.py"),
                               "kept cluster 3.9.1 zk")


def file_name(nodeid: str) -> str:
    """The test file a node id (or a path) names: ``test_run.py``."""
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def group_of(path: str) -> str:
    """The scheduling group of a test file (a path or a node id's)."""
    return CLUSTER_GROUPS.get(file_name(path), file_name(path))


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, but the files of one cluster group go to one worker together."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFileAndClusterGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return ByFileAndClusterGroup(config, log)


def pytest_collection_modifyitems(session, config, items) -> None:
    """The dearest groups first, each group's tests in their files' own order (sort is stable).
    When any test checks a run, the warm Spark server starts now, while the first clusters boot."""
    cost: dict[str, float] = {}
    for path in {item.path for item in items}:
        cost[group_of(path.name)] = cost.get(group_of(path.name), 0.0) + file_cost(path)
    items.sort(key=lambda item: (-cost[group_of(item.path.name)], group_of(item.path.name)))
    worker = getattr(config, "workerinput", {}).get("workerid", "gw0")
    if worker == "gw0" and any(item.get_closest_marker("spark") or item.get_closest_marker("docker") for item in items):
        # In a process of its own: a Connect session opened in this one would turn the Column
        # functions to Connect's under tests/test_checker.py's embedded driver.
        subprocess.Popen([sys.executable, "-m", "harness.checker.warm", "start"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


_seconds_per_test: dict[str, float] = {}


def pytest_runtest_logreport(report) -> None:
    """Sum each test's seconds (setup, call and teardown; in the controller when tests run on workers)."""
    if os.environ.get(RECORD_COSTS):
        _seconds_per_test[report.nodeid] = _seconds_per_test.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session) -> None:
    """With KCHAOS_RECORD_FILE_COSTS set, write what this suite measured: each file's seconds, the table
    the order comes from, and beside it (``*.tests.json``) each test's."""
    target = os.environ.get(RECORD_COSTS)
    if target and _seconds_per_test and not hasattr(session.config, "workerinput"):
        per_file: dict[str, float] = {}
        for nodeid, seconds in _seconds_per_test.items():
            per_file[file_name(nodeid)] = per_file.get(file_name(nodeid), 0.0) + seconds
        Path(target).write_text(_dearest_first(per_file, every=True))
        Path(target).with_suffix(".tests.json").write_text(_dearest_first(_seconds_per_test, every=False))


def _dearest_first(seconds: dict[str, float], every: bool) -> str:
    """The JSON of ``seconds`` to a tenth, dearest first. ``every``: keep those under a second too (the
    file table, where a file left out would count as unmeasured and so as dear); else leave them out
    (the tests', which is for reading)."""
    return json.dumps({k: round(v, 1) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1]) if every or v >= 1},
                      indent=1) + "\n"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


def unique_topic(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(cluster: KafkaCluster, topic: str, n: int, acks: str, prefix: str, timeout_s: float = 30,
            **extra) -> list[tuple[str, object]]:
    """Send n values; return (value, error-or-None) per delivery report."""
    from confluent_kafka import Producer

    conf = cluster.client_config(**{"acks": acks, "linger.ms": 5, "message.timeout.ms": int(timeout_s * 1000)})
    conf.update(extra)
    p = Producer(conf)
    reports: list[tuple[str, object]] = []

    def cb(err, msg):
        reports.append((msg.value().decode(), err))

    for i in range(n):
        p.produce(topic, value=f"{prefix}-{i}".encode(), on_delivery=cb)
        p.poll(0)
    remaining = p.flush(timeout_s + 10)
    assert remaining == 0, f"{remaining} messages still queued after flush"
    if acks == "0":
        # acks=0 "delivered" means handed to the socket: stay connected while the last bytes leave.
        time.sleep(ACKS0_LINGER_S)
    return reports


def consume_all(cluster: KafkaCluster, topic: str, partitions: int, expect: int, timeout_s: float = 30) -> list[str]:
    """Read every partition from offset 0 until `expect` records arrived or the time is up."""
    from confluent_kafka import Consumer, TopicPartition

    # Metadata refreshed every second: right after topic creation a broker may still lack it.
    c = Consumer(cluster.client_config(**{"group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                                          "topic.metadata.refresh.interval.ms": 1000}))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[str] = []
    per_partition = dict.fromkeys(range(partitions), 0)
    errors: list[str] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < expect and time.monotonic() < deadline:
            for m in c.consume(500, timeout=0.5):
                if m.error() is None:
                    out.append(m.value().decode())
                    per_partition[m.partition()] += 1
                else:
                    errors.append(str(m.error()))
        if len(out) < expect:
            marks = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=5) for p in range(partitions)}
            print(f"consume_all: {len(out)}/{expect} read; per partition {per_partition}; watermarks {marks}; "
                  f"errors {errors[:5]}; state {cluster.describe(topic)}")
    finally:
        c.close()
    return out


def assert_sends_recorded(produced: list[dict], names: tuple[str, ...], partitions: int,
                          own_timing: tuple[str, ...] = ()) -> list[list[dict]]:
    """Every producer's sends, as any driver must record them: sequence numbers from 0 without a gap,
    send times in sequence order, spread evenly over the partitions. Each producer's rows, by seq.
    A producer in ``own_timing`` is a client kchaos did not write (Kafka's verifiable producer): it
    partitions by its own rule and reports a send at its callback, so its rows are only required to
    reach every partition."""
    out = []
    for name in names:
        mine = sorted((r for r in produced if r["producer"] == name), key=lambda r: r["seq"])
        assert [r["seq"] for r in mine] == list(range(len(mine)))
        per_part = [sum(r["partition"] == q for r in mine) for q in range(partitions)]
        if name in own_timing:
            assert min(per_part) > 0, f"producer {name} spread {per_part} over the partitions"
        else:
            assert all(x["send_ts_ms"] <= y["send_ts_ms"] for x, y in itertools.pairwise(mine))
            assert max(per_part) - min(per_part) <= 1, f"producer {name} spread {per_part} over the partitions"
        out.append(mine)
    return out
