"""pytest plugin (entry point ``pytest11: kchaos``): chaos tests in a user's own suite.

Fixtures:
- ``kafka_cluster``: a real cluster per module and per ``--kafka-version`` x ``--mode`` (comma lists
  parametrise the tests that use it);
- ``nemesis``: faults on that cluster, each logged to an events file; everything healed afterwards;
- ``workload``: recording producers, HW-recording consumers and consumer groups on that cluster;
  ``stop()`` heals, reads back and checks, and returns the run as ``chaos_run`` does
  (``result.group("g")`` is a group's verdict; ``nemesis.fault("client_kill", "client:g-1")`` and
  ``"group_coordinator"`` targets act on the workload's groups);
- ``chaos_run``: a whole scenario (its own cluster, workload, schedule, check) -> its verdict.

Markers ``chaos_quick`` and ``chaos_long`` pick suites: ``pytest -m chaos_quick``.

    def test_safe_config_survives_faults(chaos_run):
        result = chaos_run("safe-faults", seed=3)
        result.assert_promises_held()
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.clients.registry import DEFAULT_CLIENT, names
from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS, default_mode

if TYPE_CHECKING:
    from harness.checker.verdict import GroupVerdict, Verdict
    from harness.scenario import TopicSpec


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("kchaos", "chaos tests against real Kafka")
    g.addoption("--kafka-version", default=None,
                help=f"Kafka version(s), comma-separated ({', '.join(KAFKA_VERSIONS)}); default {DEFAULT_VERSION}")
    g.addoption("--mode", dest="kchaos_mode", default=None, help="zk, kraft or both (comma-separated)")
    g.addoption("--kchaos-client", default=None, help=f"client libraries, comma-separated ({names()}): "
                f"chaos_run and workload run once with each (default: the scenario's own, {DEFAULT_CLIENT} for a "
                "workload)")
    g.addoption("--kchaos-out", default=None, help="keep run directories here (default: pytest's tmp dirs)")
    g.addoption("--kafka-quorum", type=int, default=None, choices=(1, 3, 5),
                help="KRaft controllers or ZooKeeper servers of kafka_cluster and chaos_run's clusters (default 3; "
                     "1 boots faster where the quorum is not under test)")


# kafka-python (its protocol classes and segment reader) loads its schemas through importlib.resources
# calls Python 3.11 deprecates; the plugin imports it, so the plugin silences what it brings in.
WARNING_FILTERS = ("ignore::DeprecationWarning:importlib.resources._legacy", "ignore::DeprecationWarning:kafka.*")


def pytest_configure(config: pytest.Config) -> None:
    for f in WARNING_FILTERS:
        config.addinivalue_line("filterwarnings", f)
    config.addinivalue_line("markers", "chaos_quick: a chaos test that runs in about a minute")
    config.addinivalue_line("markers", "chaos_long: a chaos test that takes minutes (many seeds or long schedules)")
    config.addinivalue_line("markers", "kchaos_cluster(**settings): cluster settings for the module's kafka_cluster "
                                       "(skewable_clocks=True for clock_skew, faultable_disks=True for disk faults, "
                                       "log_dirs=N)")


def _targets(config: pytest.Config) -> list[tuple[str, str]]:
    versions = [v.strip() for v in (config.getoption("--kafka-version") or DEFAULT_VERSION).split(",") if v.strip()]
    modes_opt = config.getoption("kchaos_mode")
    out = []
    for v in versions:
        if v not in KAFKA_VERSIONS:
            raise pytest.UsageError(f"--kafka-version {v}: no image recipe (allowed: {', '.join(KAFKA_VERSIONS)})")
        modes = [m.strip() for m in modes_opt.split(",")] if modes_opt else [default_mode(v)]
        for m in modes:
            if m not in ("zk", "kraft"):
                raise pytest.UsageError(f"--mode {m}: allowed: zk, kraft")
            if m in KAFKA_VERSIONS[v]:
                out.append((v, m))
    if not out:
        raise pytest.UsageError("no --kafka-version x --mode pair exists (e.g. 4.1.2 has no zk mode)")
    return out


def _clients(config: pytest.Config) -> list[str]:
    from harness.clients.registry import LIBRARIES, canonical

    chosen = [canonical(c.strip()) for c in (config.getoption("--kchaos-client") or "").split(",") if c.strip()]
    for c in chosen:
        if c not in LIBRARIES:
            raise pytest.UsageError(f"--kchaos-client {c}: no driver (allowed: {names()})")
    return chosen


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"kafka_cluster", "chaos_run", "kafka_target"} & set(metafunc.fixturenames):
        targets = _targets(metafunc.config)
        metafunc.parametrize("kafka_target", targets, ids=[f"{v}-{m}" for v, m in targets], scope="module")
    if "kchaos_client" in metafunc.fixturenames and (clients := _clients(metafunc.config)):
        metafunc.parametrize("kchaos_client", clients, ids=clients)


@pytest.fixture
def kchaos_client(request) -> str | None:
    """The client library of this test's chaos_run and workload (--kchaos-client), or None: the scenario's own."""
    return getattr(request, "param", None)


@pytest.fixture(scope="module")
def kafka_target(request) -> tuple[str, str]:
    """(version, mode) of this test's cluster; parametrised from --kafka-version and --mode."""
    return request.param


# What kchaos raises for a cause the test can change or must be told of (bad tables or settings, a
# topic Kafka refuses, a cluster, image or run that could not be made): a fixture fails the test with
# the message alone, naming the test, never with a traceback from inside kchaos.
def _kchaos_errors() -> tuple[type[BaseException], ...]:
    from harness.cluster.errors import ClusterError, TopicError
    from harness.history import HistoryError
    from harness.hunt.trials import HuntError
    from harness.run.directory import RunError
    from harness.run.recording import RecordingError
    from harness.scenario import ScenarioError
    from harness.setup.images import ImageError

    return ScenarioError, TopicError, ClusterError, RunError, RecordingError, ImageError, HistoryError, HuntError


@contextlib.contextmanager
def _failing_the_test(request: pytest.FixtureRequest, what: str):
    """Run a fixture's step; kchaos's own error fails ``request``'s test naming it and the step (its
    context suppressed, so pytest shows the message alone, not the error it replaced)."""
    try:
        yield
    except _kchaos_errors() as e:
        failure = pytest.fail.Exception(f"{request.node.nodeid}: {what}: {e}", pytrace=False)
        raise failure from None


def _require_engine() -> None:
    from harness.setup import engine

    try:
        engine.client(timeout=10)
    except engine.EngineError as e:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"no Docker engine under CI: {e}")
        pytest.skip(f"no Docker engine: {e} (run `kchaos doctor --fix`)")


def _quorum(config: pytest.Config, mode: str) -> dict:
    n = config.getoption("kafka_quorum")
    if n is None:
        return {}
    if mode == "zk" and n == 5:
        raise pytest.UsageError("--kafka-quorum 5: ZooKeeper ensembles here have 1 or 3 servers (allowed: 1, 3)")
    return {"controllers": n} if mode == "kraft" else {"zookeepers": n}


@pytest.fixture(scope="module")
def kafka_cluster(kafka_target, request):
    """A running cluster (3 brokers) for the module; removed afterwards. The workload's producer "p"
    has links of its own, so ``nemesis.fault("client_latency", "client:p")`` slows it alone. A
    module's ``pytest.mark.kchaos_cluster(skewable_clocks=True, faultable_disks=True, log_dirs=2)``
    gives its nodes what clock and disk faults need."""
    from harness.cluster import ClusterSettings, KafkaCluster
    from harness.scenario import kip848_broker_config
    from harness.setup import cluster_images

    _require_engine()
    version, mode = kafka_target
    marker = request.node.get_closest_marker("kchaos_cluster")
    settings = ClusterSettings(kafka_version=version, mode=mode, private_clients=["p"],
                               broker_config=kip848_broker_config() if int(version.split(".")[0]) >= 4 else {},
                               **_quorum(request.config, mode), **(marker.kwargs if marker else {}))
    with KafkaCluster(settings, cluster_images(version, disks=settings.faultable_disks)) as c:
        yield c


@pytest.fixture
def kchaos_events(tmp_path):
    """The events log a test's nemesis and workload share (faults, samples, workload start and end)."""
    from harness.history.events import EventLog

    events = EventLog(tmp_path / "events.jsonl")
    yield events
    events.close()


@pytest.fixture
def nemesis(kafka_cluster, kchaos_events):
    """Faults on ``kafka_cluster``: ``nemesis.fault(kind, target, ...)``, healed by ``nemesis.heal(hit)``.

    Every fault lands in ``nemesis.events_path``; whatever is still applied is healed afterwards."""
    n = _Nemesis(kafka_cluster, kchaos_events)
    yield n
    n.heal_all()


class _Nemesis:
    def __init__(self, cluster, events):
        self.cluster, self.events, self.events_path = cluster, events, events.path
        self._applied: list = []
        self.handles: dict = {}  # the started workload's clients, members and acknowledgement counts
        self._triggered: list = []  # the nemeses that armed triggers
        self.faults: list = []  # every fault applied or armed (PlannedFault), for run.json

    def fault(self, kind: str, target: str = "leader", topic: str = "chaos", partition: int = 0, **kw):
        """Apply one fault now (heal it with ``heal``); returns what was hit."""

        n = self._nemesis(topic)
        planned = planned_fault(kind, target, partition, len(self.faults), **kw)
        self.faults.append(planned)
        a = n.apply(planned)
        self._applied.append((n, a))
        return a

    def on(self, event: str, **params) -> _Armed:
        """A trigger: ``nemesis.on("isr_shrink", partition=0).fault("kill", "leader", topic="t1")`` fires
        the fault on that event (parameters and delay_s as in a scenario's ``[faults.on]``) and
        returns at once; ``.wait(timeout_s)`` gives what was hit, or raises if it never fired."""
        from harness.scenario import TriggerSpec

        return _Armed(self, TriggerSpec(event=event, **params).trigger())

    def _nemesis(self, topic: str):
        from harness.run.nemesis import Nemesis

        return Nemesis(self.cluster, topic, self.events, **self.handles)

    def heal(self, applied) -> None:
        for i, (n, a) in enumerate(self._applied):
            if a is applied:
                n.heal(a)
                del self._applied[i]
                return
        for n in self._triggered:  # a fault a trigger fired: its nemesis holds it
            if n.heal_active(applied):
                return

    def heal_all(self) -> None:
        while self._triggered:
            self._triggered.pop().stop()  # heals what its triggers fired, logs those that never did
        while self._applied:
            n, a = self._applied.pop()
            n.heal(a)
        self.cluster.heal()


def planned_fault(kind: str, target: str, partition: int, number: int, duration_s: float = 0, on=None, **kw):
    """A fault of the fixture as the nemesis plans one, with the settings a scenario's [[faults]]
    table takes (harness/faults/settings.py); TypeError naming what is allowed otherwise."""
    from pydantic import ValidationError

    from harness.faults import SETTINGS, PlannedFault, check_kind

    if unknown := sorted(set(kw) - set(SETTINGS)):
        raise TypeError(f"fault settings {unknown} are not settings of a fault (allowed: {', '.join(SETTINGS)})")
    try:
        fault = PlannedFault(at_s=0, duration_s=duration_s, kind=kind, target=target, partition=partition, on=on,
                             number=number, **kw)
    except ValidationError as e:
        err = e.errors()[0]
        raise TypeError(f"fault setting {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if why := check_kind(kind).refused(fault):
        raise TypeError(f"fault {kind}: {why}")
    return fault


class _Armed:
    """One armed trigger of the ``nemesis`` fixture (see ``_Nemesis.on``)."""

    def __init__(self, nemesis: _Nemesis, trigger):
        self.nemesis, self.trigger = nemesis, trigger
        self._n = None

    def fault(self, kind: str, target: str = "leader", topic: str = "chaos", partition: int = 0,
              duration_s: float = 3600, **kw) -> _Armed:
        """Arm: the fault fires on the trigger's event and stays until healed (``nemesis.heal`` of
        ``wait()``'s result, or the fixture's teardown), or for ``duration_s``."""

        self._n = self.nemesis._nemesis(topic)
        self.nemesis._triggered.append(self._n)
        planned = planned_fault(kind, target, partition, len(self.nemesis.faults), duration_s, self.trigger, **kw)
        self.nemesis.faults.append(planned)
        self._n.start([planned], time.monotonic())
        return self

    def wait(self, timeout_s: float = 60):
        """What the fault hit once it fired; AssertionError if it did not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if applied := self._n.applied():
                return applied[0]
            time.sleep(0.02)
        raise AssertionError(f"the trigger {self.trigger} did not fire within {timeout_s:g} s")


@dataclass
class ChaosResult:
    """A checked run directory: its path and its verdict."""

    path: Path
    verdict: Verdict

    @property
    def anomalies(self) -> dict[str, int]:
        return self.verdict.anomalies

    def rows(self, name: str) -> list[dict]:
        """The rows of one history file of the run: ``produced``, ``consumed`` or ``replicas``."""
        import pyarrow.parquet as pq

        return pq.read_table(self.path / f"{name}.parquet").to_pylist()

    def group(self, name: str) -> GroupVerdict:
        """One group's verdict: its commit anomalies, their promises, what it returned twice."""
        for g in self.verdict.by_group:
            if g.group == name:
                return g
        raise KeyError(f"no group {name!r} in {self.path} (groups: {[g.group for g in self.verdict.by_group]})")

    def assert_promises_held(self) -> None:
        assert not self.verdict.failed, f"promises broken in {self.path}: {self.verdict.broken()}"


class Workload:
    """The tables of a scenario's workload on one topic, started by ``start`` and ended by ``stop``,
    which finishes the run as a scenario run finishes (run_directory.finish) and checks it."""

    def __init__(self, cluster, topic: TopicSpec, nemesis: _Nemesis, out: Path, client: str | None = None,
                 failing=lambda what: contextlib.nullcontext()):
        self.client = client  # --kchaos-client: the library of every table that names none
        self.cluster, self.topic, self.nemesis, self.out = cluster, topic, nemesis, out
        self.recording = None
        self.scenario = None
        self._dir = None
        self._logs = contextlib.ExitStack()
        self._failing = failing  # a step's kchaos error fails the test naming it (_failing_the_test)
        self.made_topics: list[str] = [topic.name]  # what it leaves on the module's cluster, removed after the test
        self.made_groups: list[str] = []

    def start(self, acks: str = "all", idempotence: bool = False, rate: float = 200, consumers: int | dict = 1,
              producers: int | list[dict] = 1, groups: list[dict] | None = None, copier: dict | None = None,
              seed: int = 1, client: str | None = None, client_version: str | None = None) -> Workload:
        """Start the workload; the tables are a scenario's, as dicts, validated as a scenario's are.
        ``client`` and ``client_version`` are the scenario's (default: --kchaos-client, else librdkafka);
        a table may name its own.

        ``producers``: ``[[producers]]`` tables (``[{"name": "tx", "transactional": True, "txn_records":
        7}]``), or a count of one plain producer "p" with ``acks``, ``idempotence`` and ``rate``;
        ``consumers``: the ``[consumers]`` table (``{"count": 1, "isolation_level": "both"}``) or a
        count; ``groups``: ``[[groups]]`` tables (``{"name": "g", "members": 3}``; the workload waits
        until they have formed); ``copier``: the ``[copier]`` table."""
        from harness.run import logs
        from harness.run.directory import RunDirectory
        from harness.run.recording import Recording
        from harness.scenario import validate_tables

        if self.recording is not None:
            raise RuntimeError(f"the workload on {self.topic.name} is already started")
        with self._failing(f"workload({self.topic.name!r}).start()"):
            if isinstance(producers, int):
                producers = [{"name": "p", "count": producers, "acks": acks, "idempotence": idempotence,
                              "rate": rate}]
            s = self.cluster.settings
            self.scenario = validate_tables(f"workload({self.topic.name!r})", {
                "name": f"pytest-{self.topic.name}", "kafka_version": s.kafka_version, "mode": s.mode,
                "brokers": s.brokers, "seed": seed, "duration_s": 3600, "topic": self.topic.model_dump(),
                "producers": producers,
                "consumers": {"count": consumers} if isinstance(consumers, int) else consumers,
                "groups": groups or [], **({"copier": copier} if copier is not None else {}),
                **({"client": c} if (c := client or self.client) else {}),
                **({"client_version": client_version} if client_version else {})})
            self._dir = RunDirectory(self.out / f"run-{self.topic.name}")
            self._logs.enter_context(logs.clients_to(self._dir.path / "logs" / logs.CLIENTS_LOG))
            self.recording = Recording.of(self.cluster, self.scenario, self.nemesis.events, self._dir.path)
            self.made_topics = list(dict.fromkeys([*self.made_topics, *self.recording.topics]))
            self.made_groups = [g.group_id for g in self.scenario.groups] + (
                [self.scenario.copier.group_id] if self.scenario.copier is not None else [])
            self.recording.create_topics()
            self.nemesis.handles = self.recording.handles()
            self.recording.start()
        return self

    @property
    def run_dir(self) -> Path:
        return self.out / f"run-{self.topic.name}"

    def stop(self) -> ChaosResult:
        """Stop sending, heal every fault, read back what survived, write and check the run directory."""
        from harness.checker import check_runs
        from harness.run.directory import finish

        rec, d = self.recording, self._dir
        if rec is None or d is None:
            raise RuntimeError("stop() before start()")
        with self._failing(f"workload({self.topic.name!r}).stop()"):
            try:
                with self._logs:
                    res = d.close(finish(d, self.cluster, self.scenario, rec, self.nemesis.events,
                                         self.nemesis.faults, self.nemesis.heal_all, source="pytest",
                                         log=lambda m: None))
            except BaseException:
                d.discard()
                raise
            finally:
                self.recording = None
            (v,) = check_runs([res.path])
        return ChaosResult(res.path, v)

    def remove_what_it_made(self) -> None:
        """Delete its topics and its groups from the module's cluster, so the next test on the same
        names starts as on a new cluster (a group whose members have not all left yet is left to
        Kafka, which empties it at their session timeout)."""
        self.cluster.delete_topics(self.made_topics)
        self.cluster.delete_groups(self.made_groups)  # one not empty yet, or never formed, stays

    def abort(self) -> None:
        """The test ended without ``stop``: stop every client, keep nothing."""
        if self.recording is not None:
            self.recording.abort()
            self.recording = None
        self._logs.close()
        if self._dir is not None and self._dir.path.exists():
            self._dir.discard()


@pytest.fixture
def workload(kafka_cluster, nemesis, tmp_path, kchaos_client, request):
    """Factory: ``workload(topic, partitions=3, replication_factor=3, min_insync=2).start(acks="all")``;
    ``stop()`` heals, reads back, checks and returns a ChaosResult, as ``chaos_run`` does.

    The module's tests share its cluster: each workload's topic is made new (one an earlier test
    left of that name is deleted first), and after the test its topics and groups are deleted, so
    tests, parametrised clients and reruns that name the same topic never see each other's records."""
    from pydantic import ValidationError

    from harness.scenario import TopicSpec

    made: list[Workload] = []

    def failing(what: str):
        return _failing_the_test(request, what)

    def make(topic: str = "chaos", partitions: int = 3, replication_factor: int = 3, min_insync: int = 2,
             config: dict | None = None) -> Workload:
        with failing(f"workload({topic!r})"):
            try:
                spec = TopicSpec(name=topic, partitions=partitions, replication_factor=replication_factor,
                                 min_insync_replicas=min_insync, config=config or {})
            except ValidationError as e:
                why = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
                raise pytest.fail.Exception(f"{request.node.nodeid}: workload({topic!r}): {why}",
                                            pytrace=False) from None
            kafka_cluster.delete_topics([topic])
            kafka_cluster.create_topic(topic, partitions, replication_factor, spec.topic_config())
            kafka_cluster.wait_full_isr(topic, timeout_s=60)
        w = Workload(kafka_cluster, spec, nemesis, tmp_path, client=kchaos_client, failing=failing)
        made.append(w)
        return w

    yield make
    for w in made:
        w.abort()
        w.remove_what_it_made()


@pytest.fixture
def chaos_run(kafka_target, request, tmp_path, kchaos_client):
    """Factory: ``chaos_run(scenario_file, seed=None, overrides=[...])`` runs and checks a whole scenario
    on this test's Kafka version and mode, and returns a ChaosResult."""
    from harness import scenario as scenario_mod
    from harness.checker import check_runs
    from harness.run import runner

    _require_engine()
    version, mode = kafka_target
    out_root = Path(request.config.getoption("--kchaos-out") or tmp_path)

    def run(scenario_file: str | Path, seed: int | None = None, overrides: list[str] | None = None) -> ChaosResult:
        with _failing_the_test(request, f"chaos_run({str(scenario_file)!r})"):
            s = scenario_mod.load(scenario_file, overrides, seed=seed, kafka_version=version, mode=mode,
                                  client=kchaos_client, **_quorum(request.config, mode))
            out = out_root / f"{s.name}-{version}-{mode}-s{s.seed}-{int(time.time() * 1000)}"
            res = runner.execute(s, out, scenario_file=str(scenario_file), overrides=overrides or [],
                                 log=lambda m: None)
            (v,) = check_runs([res.path])
        return ChaosResult(res.path, v)

    return run


@dataclass
class HuntResult:
    """A finished hunt: its directory and findings (harness/hunt/loop.py's Finding)."""

    path: Path
    findings: list

    def assert_no_findings(self) -> None:
        """Fail naming each finding and its write-up."""
        assert not self.findings, "kchaos hunt found:\n" + "\n".join(
            f"  {f.signature}: reproduced {f.reproduced[0]}/{f.reproduced[1]} -> "
            f"{self.path / 'findings' / f.id / 'bug.md'}" for f in self.findings)


def hunt_for(scenarios: list[str], out: Path, budget: str | None = None, runs: int | None = None,
             anomaly: str | None = None, seed: int = 1, **options) -> HuntResult:
    """``kchaos hunt`` from a test, time-boxed for a CI job: the same search, confirmation, shrinking
    and write-up, into ``out`` (the same call again resumes). ``options``: HuntOptions fields
    (``confirm``, ``shrink_runs``, ``versions``, ``modes``, ``sets``, ``spark_master``). Bad input
    raises ValueError (or ScenarioError) before anything runs."""
    from harness.hunt.goal import Goal
    from harness.hunt.loop import HuntOptions, hunt, parse_budget

    if budget is None and runs is None:
        raise ValueError("hunt: give budget (e.g. '10m') or runs")
    opts = HuntOptions(scenarios=tuple(scenarios), out=Path(out), goal=Goal.parse(anomaly), seed=seed,
                       budget_s=parse_budget(budget) if budget else None, runs=runs, **options)
    _require_engine()
    outcome = hunt(opts, announce=lambda m: None)
    return HuntResult(Path(out), outcome.findings)


@pytest.fixture
def chaos_hunt(request, tmp_path):
    """Factory: ``chaos_hunt(["scenarios/mine.toml"], budget="10m").assert_no_findings()``; runs go
    under ``--kchaos-out`` (to resume across CI jobs) or the test's tmp dir."""
    root = Path(request.config.getoption("--kchaos-out") or tmp_path)

    def run(scenarios: list[str], out: Path | None = None, **kw) -> HuntResult:
        with _failing_the_test(request, f"chaos_hunt({scenarios!r})"):
            return hunt_for(scenarios, out or root / "hunt", **kw)

    return run
