"""pytest plugin (entry point ``pytest11: kchaos``): chaos tests in a user's own suite.

Fixtures:
- ``kafka_cluster``: a real cluster per module and per ``--kafka-version`` x ``--mode`` (comma lists
  parametrise the tests that use it);
- ``nemesis``: faults on that cluster, each logged to an events file; everything healed afterwards;
- ``workload``: recording producers and HW-recording consumers on that cluster;
- ``chaos_run``: a whole scenario (its own cluster, workload, schedule, check) -> its verdict.

Markers ``chaos_quick`` and ``chaos_long`` pick suites: ``pytest -m chaos_quick``.

    def test_safe_config_survives_faults(chaos_run):
        result = chaos_run("scenarios/safe-faults.toml", seed=3)
        result.assert_promises_held()
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("kchaos", "chaos tests against real Kafka")
    g.addoption("--kafka-version", default=None,
                help=f"Kafka version(s), comma-separated ({', '.join(KAFKA_VERSIONS)}); default {DEFAULT_VERSION}")
    g.addoption("--mode", dest="kchaos_mode", default=None, help="zk, kraft or both (comma-separated)")
    g.addoption("--kchaos-out", default=None, help="keep run directories here (default: pytest's tmp dirs)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos_quick: a chaos test that runs in about a minute")
    config.addinivalue_line("markers", "chaos_long: a chaos test that takes minutes (many seeds or long schedules)")


def _targets(config: pytest.Config) -> list[tuple[str, str]]:
    versions = [v.strip() for v in (config.getoption("--kafka-version") or DEFAULT_VERSION).split(",") if v.strip()]
    modes_opt = config.getoption("kchaos_mode")
    out = []
    for v in versions:
        if v not in KAFKA_VERSIONS:
            raise pytest.UsageError(f"--kafka-version {v}: no image recipe (allowed: {', '.join(KAFKA_VERSIONS)})")
        modes = [m.strip() for m in modes_opt.split(",")] if modes_opt else [KAFKA_VERSIONS[v][0]]
        for m in modes:
            if m not in ("zk", "kraft"):
                raise pytest.UsageError(f"--mode {m}: allowed: zk, kraft")
            if m in KAFKA_VERSIONS[v]:
                out.append((v, m))
    if not out:
        raise pytest.UsageError("no --kafka-version x --mode pair exists (e.g. 4.1.2 has no zk mode)")
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"kafka_cluster", "chaos_run", "kafka_target"} & set(metafunc.fixturenames):
        targets = _targets(metafunc.config)
        metafunc.parametrize("kafka_target", targets, ids=[f"{v}-{m}" for v, m in targets], scope="module")


@pytest.fixture(scope="module")
def kafka_target(request) -> tuple[str, str]:
    """(version, mode) of this test's cluster; parametrised from --kafka-version and --mode."""
    return request.param


def _require_engine() -> None:
    from harness import engine

    try:
        engine.client(timeout=10)
    except engine.EngineError as e:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"no Docker engine under CI: {e}")
        pytest.skip(f"no Docker engine: {e} (run `kchaos doctor --fix`)")


@pytest.fixture(scope="module")
def kafka_cluster(kafka_target):
    """A running cluster (3 brokers) for the module; removed afterwards."""
    from harness.cluster import ClusterSettings, KafkaCluster

    _require_engine()
    version, mode = kafka_target
    with KafkaCluster(ClusterSettings(kafka_version=version, mode=mode)) as c:
        yield c


@pytest.fixture
def nemesis(kafka_cluster, tmp_path):
    """Faults on ``kafka_cluster``: ``nemesis.fault(kind, target, ...)`` or ``nemesis.run(plan)``.

    Every fault lands in ``nemesis.events_path``; whatever is still applied is healed afterwards."""
    from harness.nemesis import EventLog

    events = EventLog(tmp_path / "events.jsonl")
    n = _Nemesis(kafka_cluster, events)
    yield n
    n.heal_all()
    events.close()


class _Nemesis:
    def __init__(self, cluster, events):
        self.cluster, self.events, self.events_path = cluster, events, events.path
        self._applied: list = []

    def fault(self, kind: str, target: str = "leader", topic: str = "chaos", partition: int = 0, **kw):
        """Apply one fault now (heal it with ``heal``); returns what was hit."""
        from harness.nemesis import Nemesis
        from harness.schedule import PlannedFault

        n = Nemesis(self.cluster, topic, self.events)
        a = n.apply(PlannedFault(0, 0, kind, target, partition, kw.get("latency_ms", 200), kw.get("jitter_ms", 0),
                                 kw.get("rate_kbps", 64)))
        self._applied.append((n, a))
        return a

    def heal(self, applied) -> None:
        for i, (n, a) in enumerate(self._applied):
            if a is applied:
                n.heal(a)
                del self._applied[i]
                return

    def heal_all(self) -> None:
        while self._applied:
            n, a = self._applied.pop()
            n.heal(a)
        self.cluster.heal()


@dataclass
class Workload:
    """Recording producers and consumers on one topic; ``stop()`` returns what they recorded."""

    cluster: object
    topic: str
    partitions: int
    producers: list = field(default_factory=list)
    consumers: list = field(default_factory=list)
    _stop_p: threading.Event = field(default_factory=threading.Event)
    _stop_c: threading.Event = field(default_factory=threading.Event)

    def start(self, acks: str = "all", idempotence: bool = False, rate: float = 200, consumers: int = 1) -> Workload:
        from harness.scenario import ConsumerSpec, ProducerSpec
        from harness.workload import RecordingConsumer, RecordingProducer

        spec = ProducerSpec(name=f"p{len(self.producers)}", acks=acks, idempotence=idempotence, rate=rate)
        for i in range(consumers):
            c = RecordingConsumer(f"c{len(self.consumers) + i}", ConsumerSpec(), self.cluster, self.topic,
                                  self.partitions, self._stop_c)
            c.start()
            self.consumers.append(c)
        p = RecordingProducer(spec.name, spec, self.cluster, self.topic, self.partitions, self._stop_p)
        p.start()
        self.producers.append(p)
        return self

    def stop(self) -> dict:
        self._stop_p.set()
        for p in self.producers:
            p.join(timeout=60)
        time.sleep(1.0)
        self._stop_c.set()
        for c in self.consumers:
            c.join(timeout=30)
        produced = []
        for p in self.producers:
            cols = p.columns()
            produced += [dict(zip(cols, row, strict=True)) for row in zip(*cols.values(), strict=True)]
        return {"produced": produced, "consumed": [r for c in self.consumers for r in c.rows]}


@pytest.fixture
def workload(kafka_cluster):
    """Factory: ``workload(topic, partitions=3, rf=3, min_insync=2).start(acks="all")``; stopped afterwards."""
    made: list[Workload] = []

    def make(topic: str = "chaos", partitions: int = 3, replication_factor: int = 3, min_insync: int = 2,
             config: dict | None = None) -> Workload:
        kafka_cluster.create_topic(topic, partitions, replication_factor,
                                   {"min.insync.replicas": str(min_insync), **(config or {})})
        kafka_cluster.wait_full_isr(topic, timeout_s=60)
        w = Workload(kafka_cluster, topic, partitions)
        made.append(w)
        return w

    yield make
    for w in made:
        w._stop_p.set()
        w._stop_c.set()


@dataclass
class ChaosResult:
    path: Path
    verdict: dict

    @property
    def anomalies(self) -> dict[str, int]:
        return self.verdict.anomalies

    def assert_promises_held(self) -> None:
        assert not self.verdict.failed, f"promises broken in {self.path}: {self.verdict.broken()}"


@pytest.fixture
def chaos_run(kafka_target, request, tmp_path):
    """Factory: ``chaos_run(scenario_file, seed=None, overrides=[...])`` runs and checks a whole scenario
    on this test's Kafka version and mode, and returns a ChaosResult."""
    from harness import runner
    from harness import scenario as scenario_mod
    from harness.checker import check_runs

    _require_engine()
    version, mode = kafka_target
    out_root = Path(request.config.getoption("--kchaos-out") or tmp_path)

    def run(scenario_file: str | Path, seed: int | None = None, overrides: list[str] | None = None) -> ChaosResult:
        s = scenario_mod.load(scenario_file, overrides, seed=seed, kafka_version=version, mode=mode)
        out = out_root / f"{s.name}-{version}-{mode}-s{s.seed}-{int(time.time() * 1000)}"
        res = runner.execute(s, out, scenario_file=str(scenario_file), overrides=overrides or [], log=lambda m: None)
        (v,) = check_runs([res.path])
        return ChaosResult(res.path, v)

    return run
