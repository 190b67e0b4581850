"""The `kchaos` command line. Exit codes: 0 promises held / ok, 1 a promise broken or a check failed,
2 bad input, 3 the run could not be carried out."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.clients.registry import BuildError
from harness.clients.registry import names as library_names
from harness.scenario.suites import QUICK
from harness.versions import DEFAULT_VERSION, KAFKA_VERSIONS, default_mode

if TYPE_CHECKING:
    from harness.doctor import Check

# Commands import what they need themselves: `kchaos check` must not pay for docker, the cluster and
# the scenario models (about 0.4 s) before its Spark session starts.

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Chaos testing for real Apache Kafka.")
console = Console(width=None if Console().is_terminal else 200)
err = Console(stderr=True, soft_wrap=True)  # error lines stay whole, for people and for grep

EXIT_OK, EXIT_BROKEN, EXIT_BAD_INPUT, EXIT_NOT_RUN, EXIT_NOT_EXERCISED = 0, 1, 2, 3, 4
VERSIONS_HELP = ", ".join(KAFKA_VERSIONS)
LIBRARY_NAMES = library_names()
SPARK_MASTER_HELP = ("where to check: the warm local Spark Connect server by default (`kchaos spark` shows it), "
                     "local[*] for an embedded driver, sc://HOST:PORT for any Spark Connect endpoint, "
                     "spark://HOST:PORT for a standalone cluster")



# `./kchaos` sets this: the command sets this machine up first (_set_up_first), then runs.
SET_UP_FIRST = "KCHAOS_SET_UP_FIRST"


@app.callback()
def _options(ctx: typer.Context,
             verbose: bool = typer.Option(False, "--verbose", help="client-library and kchaos log lines on stderr "
                                          "too (they always go to the run directory's logs/clients.log)")) -> None:
    from harness.run import logs

    logs.set_verbose(verbose)
    logs.quiet_clients()
    # popped, so the kchaos processes a command starts do not set up again
    if os.environ.pop(SET_UP_FIRST, "") == "1" and ctx.invoked_subcommand != "doctor" and "--help" not in sys.argv:
        _set_up_first()


def _set_up_first() -> None:
    """What `./kchaos` does before its command: `kchaos doctor --fix --quiet`, the warm Spark server
    kept, in the command's own process, so the modules both import load once (a process of its own
    would load them again: seconds a call). A machine still missing something stops the command with
    the table of what and the command that fixes it. `doctor` itself is left out: it is how a user
    sees what is missing."""
    from harness import doctor as doctor_mod

    _fix_machine(keep_spark=True, log=lambda m: _log(m, err))
    missing = [c for c in doctor_mod.run_checks(required_only=True) if not c.ok]
    if missing:
        err.print(_checks_table(missing))
        raise typer.Exit(EXIT_NOT_RUN)


def _said(label: str, what: object) -> None:
    """``label: what`` on stderr, the label red; ``what`` as written (the terminal's markup would eat
    its brackets: "is not [min, max]", a list of exit codes)."""
    err.print(f"[red]{label}:[/red] {escape(str(what))}")


def _log(msg: str, out: Console = console) -> None:
    out.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {msg}")


@app.command()
def doctor(fix: bool = typer.Option(False, "--fix", help="install, start, build and clean what is missing"),
           quiet: bool = typer.Option(False, "--quiet", help="print the table only when something is missing"),
           keep_spark: bool = typer.Option(False, "--keep-spark", hidden=True,
                                           help="leave the warm Spark server running (scripts/setup.sh)")) -> None:
    """Say what is missing to run chaos tests here, and which command fixes it."""
    from harness import doctor as doctor_mod

    if fix:
        _fix_machine(keep_spark, log=_log)
    checks = doctor_mod.run_checks(required_only=quiet)
    if quiet and all(c.ok for c in checks):
        raise typer.Exit(EXIT_OK)
    console.print(_checks_table(checks))
    raise typer.Exit(EXIT_OK if all(c.ok for c in checks) else EXIT_BROKEN)


def _fix_machine(keep_spark: bool, log: Callable[[str], None]) -> None:
    """doctor.fix, its failures said and the command stopped with EXIT_NOT_RUN."""
    from harness import doctor as doctor_mod
    from harness.setup import engine, images

    try:
        doctor_mod.fix(log=log, stop_spark=not keep_spark)
    except (engine.EngineError, images.ImageError, BuildError) as e:
        _said("could not fix", e)
        raise typer.Exit(EXIT_NOT_RUN) from e


def _checks_table(checks: list[Check]) -> Table:
    t = Table(show_header=True, header_style="bold")
    for column in ("check", "status", "detail", "fix"):
        t.add_column(column)
    for c in checks:
        t.add_row(c.name, "[green]ok[/green]" if c.ok else "[red]missing[/red]", c.detail, c.fix)
    return t


@app.command("images")
def images_cmd(
    version: list[str] = typer.Option(None, "--version", "-v", help=f"Kafka versions ({VERSIONS_HELP})"),
    every: bool = typer.Option(False, "--all", help="every Kafka version kchaos has a recipe for"),
) -> None:
    """Build images locally (JRE base, Toxiproxy, Kafka per version); a no-op when up to date. Without
    --version or --all, the default version's, as set-up does: a command builds any other version's
    image the first time it needs it."""
    from harness.setup import engine, images

    for v in version or []:
        if v not in KAFKA_VERSIONS:
            err.print(f"--version {v}: no image recipe; allowed: {', '.join(KAFKA_VERSIONS)}")
            raise typer.Exit(EXIT_BAD_INPUT)
    try:
        client = engine.ensure_engine(install=True, log=_log)
        t0 = time.monotonic()
        refs = images.build_all(client, versions=None if every else (version or images.set_up_versions()), log=_log)
    except (engine.EngineError, images.ImageError) as e:
        err.print(escape(str(e)), style="red")
        raise typer.Exit(EXIT_NOT_RUN) from e
    for r in refs:
        console.print(f"  {r.kind:10} {r.tag}")
    _log(f"done in {time.monotonic() - t0:.1f} s")


@app.command()
def up(
    scenario: Path = typer.Argument(None, help="keep the cluster this scenario runs on, and serve every `kchaos run` "
                                    "of its settings on it (each on a topic of its own) until Ctrl-C"),
    kafka_version: str = typer.Option(None, "--kafka-version", help=f"one of {VERSIONS_HELP}"),
    mode: str = typer.Option("", "--mode", help="zk | kraft (default: the version's; KRaft from 4.0)"),
    brokers: int = typer.Option(3, "--brokers"),
    quorum: int = typer.Option(3, "--quorum", help="KRaft controllers (1, 3, 5) or ZooKeeper servers (1, 3)"),
    set_: list[str] = typer.Option(None, "--set", help="override a field of SCENARIO by dotted name"),
) -> None:
    """Start a cluster and hold it until Ctrl-C, printing how to reach it: for exploring by hand, or
    with SCENARIO, as the kept cluster every `kchaos run` of that scenario's settings reuses."""
    from pydantic import ValidationError

    from harness.cluster import ClusterError, ClusterSettings, KafkaCluster, reaper
    from harness.setup import cluster_images, engine

    if scenario is not None:
        _serve_runs(scenario, kafka_version, mode or None, list(set_ or []))
        return
    kafka_version = kafka_version or DEFAULT_VERSION
    mode = mode or default_mode(kafka_version)
    size = {"controllers": quorum} if mode == "kraft" else {"zookeepers": quorum}
    try:
        settings = ClusterSettings(kafka_version=kafka_version, mode=mode, brokers=brokers, **size)
    except ValidationError as e:
        _said("bad input", f"{e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}")
        raise typer.Exit(EXIT_BAD_INPUT) from e
    reaper.install_signal_handlers()
    try:
        with KafkaCluster(settings, cluster_images(kafka_version)) as c:
            console.print(f"session {reaper.SESSION_ID} cluster {c.name} ready")
            console.print(f"bootstrap.servers={c.bootstrap_servers}")
            console.print(f"toxiproxy API {c.toxi.url if c.toxi else '?'}; Ctrl-C stops and removes everything")
            _print_quorum(c)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        console.print("stopping")
    except (ClusterError, engine.EngineError) as e:
        _said("cluster could not start", e)
        raise typer.Exit(EXIT_NOT_RUN) from e


def _serve_runs(scenario: Path, kafka_version: str | None, mode: str | None, overrides: list[str]) -> None:
    """``kchaos up SCENARIO``: boot the scenario's cluster, keep it, and run what `kchaos run` hands
    over until Ctrl-C (harness/run/kept_service.py)."""
    from harness import scenario as scenario_mod
    from harness.cluster import ClusterError, reaper
    from harness.run.kept_cluster import KeptCluster, may_share_a_cluster
    from harness.run.kept_service import Service
    from harness.setup import engine

    with _refusing_bad_input():
        s = scenario_mod.load(scenario, overrides, kafka_version=kafka_version, mode=mode)
        if not may_share_a_cluster(s):
            raise scenario_mod.ScenarioError(
                f"{scenario}: its faults change the cluster's quorum or version, or fault its formation, so no "
                "run can reuse a cluster it leaves (allowed: faults whose heal undoes them)")
        _ensure_images([s.kafka_version])
    reaper.install_signal_handlers()
    kept = KeptCluster()
    try:
        c = kept.for_run(s, reuse=True)
        service = Service(s, kept)
        with service.listening(c.name) as listener:
            console.print(f"session {reaper.SESSION_ID} cluster {c.name} ready; "
                          f"bootstrap.servers={c.bootstrap_servers}")
            console.print(f"every `kchaos run` of {s.name}'s cluster settings runs here (key {service.key}); "
                          "Ctrl-C stops and removes everything")
            service.serve(listener, _log)
    except KeyboardInterrupt:
        console.print("stopping")
    except (ClusterError, engine.EngineError) as e:
        _said("cluster could not start", e)
        raise typer.Exit(EXIT_NOT_RUN) from e
    finally:
        kept.close(wait=False)


def _print_quorum(c) -> None:
    """The coordination layer of a running cluster: each node, its role, lag and admin port."""
    q = c.quorum_state(timeout_s=2)
    what = "KRaft quorum" if c.settings.mode == "kraft" else "ZooKeeper ensemble"
    t = Table(title=f"{what}: leader {c.topo.node_key(q.leader) if q.leader >= 0 else 'none'}, epoch {q.epoch}, "
                    f"majority {'yes' if q.majority else 'no'}")
    for col in ("node", "id", "role", "lag", "admin port (127.0.0.1)"):
        t.add_column(col)
    for n in q.nodes:
        t.add_row(c.topo.node_key(n.node), str(n.node), n.role or "-", "-" if n.lag is None else str(n.lag),
                  str(c.admin_ports[n.node]))
    console.print(t)


@contextlib.contextmanager
def _refusing_bad_input():
    """Bad scenarios and paths exit 2 and a missing engine exits 3, all before any container starts.
    The modules that define those exceptions are loaded once one is raised: a command that goes well
    does not wait for them before its run starts."""
    try:
        yield
    except Exception as e:
        from harness import scenario as scenario_mod
        from harness.hunt.affected import FindingError
        from harness.setup import engine

        if isinstance(e, (scenario_mod.ScenarioError, BadOption, FindingError)):
            _said("bad input", e)
            raise typer.Exit(EXIT_BAD_INPUT) from e
        if isinstance(e, engine.EngineError):
            _said("cannot run", e)
            raise typer.Exit(EXIT_NOT_RUN) from e
        raise


def _ensure_images(versions: list[str]) -> None:
    """Build the images of Kafka versions this machine has not used yet, before any container
    starts; an image that cannot be built means the command cannot run (exit 3)."""
    from harness.setup import engine, images

    try:
        images.ensure(engine.client(timeout=10), versions, log=_log)
    except (engine.EngineError, images.ImageError) as e:
        _said("cannot run", e)
        raise typer.Exit(EXIT_NOT_RUN) from e


def _prefetch(versions: list[str]):
    """The images of ``versions`` building in a thread (images.Prefetch), or None when there are none."""
    if not versions:
        return None
    from harness.setup import engine, images

    return images.Prefetch(lambda: engine.client(timeout=10), versions, log=_log)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="scenario TOML file (see scenarios/)"),
    seed: int = typer.Option(None, "--seed", help="seed of the fault schedule (default: the scenario's)"),
    kafka_version: str = typer.Option(None, "--kafka-version", help=f"one of {VERSIONS_HELP}"),
    mode: str = typer.Option(None, "--mode", help="zk | kraft"),
    set_: list[str] = typer.Option(None, "--set", help="override a field by dotted name: topic.partitions=6"),
    out: Path = typer.Option(None, "--out", help="run directory (default: runs/NAME-VERSION-MODE-sSEED-TIME)"),
    no_check: bool = typer.Option(False, "--no-check", help="record only; do not reconcile"),
    spark_master: str = typer.Option(None, "--spark-master", help=SPARK_MASTER_HELP),
) -> None:
    """Run a scenario against a real cluster, record its history, then check it.

    Exit 0: the configuration's promises held; 1: one was broken; 2: bad input; 3: the run failed;
    4: a fault of the schedule never acted: a trigger never fired, or a fault could not be applied (the run did
    not test what it is for)."""
    from harness import scenario as scenario_mod
    from harness.cluster import reaper
    from harness.run.result import default_out

    overrides = list(set_ or [])
    with _refusing_bad_input():
        if out is not None:
            _writable(out, "--out", new=True)
        s = scenario_mod.load(scenario, overrides, seed=seed, kafka_version=kafka_version, mode=mode)
        _ensure_images([s.kafka_version])
    reaper.install_signal_handlers()
    warm_up = not no_check and not (spark_master or os.environ.get("KCHAOS_SPARK_MASTER"))
    try:
        res = _execute_here_or_kept(s, out or default_out(s), str(scenario), overrides, warm_up)
    except Exception as e:
        if not _not_carried_out(e):
            raise
        _said("the run could not be carried out", e)
        raise typer.Exit(EXIT_NOT_RUN) from e
    _log(f"run directory {res.path}: {res.produced} sent, {res.acked} acknowledged, {res.consumed_live} read live, "
         f"{res.final} in the final read, {res.replicas} replica records, {res.faults} faults")
    _log("phases: " + ", ".join(f"{k.replace('_', ' ')} {v:g} s" for k, v in res.phases.items()))
    if no_check:
        raise typer.Exit(EXIT_OK)
    from harness.checker import check_runs, summarize

    t0 = time.monotonic()
    verdicts = check_runs([res.path], master=spark_master)
    _log(f"checked in {time.monotonic() - t0:.1f} s")
    print_verdicts(verdicts, summarize(verdicts))
    raise typer.Exit(_exit_code(verdicts))


def _execute_here_or_kept(s, out_dir: Path, scenario_file: str, overrides: list[str], warm_up: bool):
    """The run on the cluster a ``kchaos up`` of the same settings keeps, when one is up; else on a
    cluster of its own. A kept cluster's process that fails the run fails it here too
    (ServedRunFailed). With ``warm_up`` the warm Spark server is started beside the run, once the run
    is handed over: up by the time the run directory is complete, without slowing the hand-over."""
    from harness.run import kept_service

    served = kept_service.find(s)
    if served is not None:
        _log(f"on the kept cluster {served.cluster} (kchaos up, process {served.pid}), on a topic of its own")
        try:
            return kept_service.run_on(served, s, out_dir, scenario_file, overrides, _log,
                                       on_started=_warm_checker if warm_up else None)
        except (ConnectionRefusedError, FileNotFoundError, EOFError) as e:
            _log(f"the kept cluster's process did not answer ({e}); booting a cluster of this run's own")
        except kept_service.ServedRunFailed as e:
            raise kept_service.ServedRunFailed(f"the kept cluster's process: {e}") from e
    if warm_up:
        _warm_checker()
    from harness.run import runner

    return runner.execute(s, out_dir, scenario_file=scenario_file, overrides=overrides, log=_log)


def _warm_checker() -> None:
    from harness import checker

    checker.prestart()


def _not_carried_out(e: BaseException) -> bool:
    """Whether ``e`` says that a run could not be carried out (exit 3) rather than that kchaos failed."""
    from harness.run import kept_service, runner

    return isinstance(e, (kept_service.ServedRunFailed, *runner.NOT_CARRIED_OUT))


@app.command()
def check(
    run_dirs: list[Path] = typer.Argument(..., help="run directories, or parents holding them"),
    spark_master: str = typer.Option(None, "--spark-master", help=SPARK_MASTER_HELP),
    unavailable_ms: int = typer.Option(1000, "--unavailable-ms", help="gap without acks that counts as unavailable"),
    examples: int = typer.Option(10, "--examples", help="examples kept per anomaly and run"),
) -> None:
    """Reconcile run directories with PySpark, write verdict.json in each, print a verdict per configuration."""
    from harness.checker import check_runs, summarize
    from harness.checker.measures import BUCKET_MS
    from harness.checker.session import SparkUnreachable
    from harness.history import HistoryError

    t0 = time.monotonic()
    try:
        if unavailable_ms < BUCKET_MS:
            raise ValueError(f"--unavailable-ms: {unavailable_ms} (allowed: {BUCKET_MS} or more)")
        if examples < 0:
            raise ValueError(f"--examples: {examples} (allowed: 0 or more)")
        verdicts = check_runs(run_dirs, master=spark_master, threshold_ms=unavailable_ms, examples=examples)
    except (HistoryError, ValueError) as e:
        _said("bad input", e)
        raise typer.Exit(EXIT_BAD_INPUT) from e
    except SparkUnreachable as e:
        _said("cannot run", e)
        raise typer.Exit(EXIT_NOT_RUN) from e
    print_verdicts(verdicts, summarize(verdicts))
    _log(f"checked {len(verdicts)} run(s) in {time.monotonic() - t0:.1f} s")
    raise typer.Exit(_exit_code(verdicts))


def print_verdicts(verdicts: list, summary: list[dict]) -> None:
    """What broke a promise, then what else was counted, per run and per configuration (tables.py)."""
    from harness.report.terminal import configs_table, runs_table

    console.print(runs_table(verdicts))
    console.print(configs_table(summary))
    if summary:
        console.print("[dim]every anomaly's count per run: verdict.json; the records behind each: kchaos report[/dim]")


@app.command()
def report(
    run_dirs: list[Path] = typer.Argument(..., help="run directories, or parents holding them"),
    output: Path = typer.Option(Path("reports/index.html"), "-o", "--output", help="HTML file to write"),
    title: str = typer.Option("kchaos durability report", "--title"),
) -> None:
    """Write the self-contained HTML durability report (runs without verdict.json are checked first)."""
    from harness.history import VERDICT_JSON, HistoryError, find_run_dirs
    from harness.report import page as report_mod

    try:
        _writable(output, "-o")
        unchecked = [d for d in find_run_dirs(run_dirs) if not (d / VERDICT_JSON).exists()]
        if unchecked:
            from harness.checker import check_runs

            check_runs(unchecked)
        out = report_mod.write_report(run_dirs, output, title=title)
    except (HistoryError, ValueError) as e:  # BadOption too
        _said("bad input", e)
        raise typer.Exit(EXIT_BAD_INPUT) from e
    _log(f"report: {out.resolve()}")


class BadOption(ValueError):
    """An option on the command line that kchaos cannot act on: a path it cannot write as told, or
    options that leave nothing to do."""


def _writable(path: Path, option: str, *, new: bool = False, directory: bool = False) -> None:
    """``path`` can be written as asked, or BadOption naming the option: ``new``, it must not exist (a
    run directory is never overwritten); ``directory``, if it exists it is one (a matrix or hunt
    resumes there), else it must not be one (a file is written there); either way the nearest
    directory that exists above it must be writable."""
    if path.exists():
        if new:
            raise BadOption(f"{option} {path}: already exists (a run directory is never overwritten; allowed: a path "
                          "that does not exist yet)")
        if directory != path.is_dir():
            what = "a directory" if directory else "a file"
            raise BadOption(f"{option} {path}: is {'not ' if directory else ''}a directory (allowed: {what})")
        if not os.access(path, os.W_OK):
            raise BadOption(f"{option} {path}: not writable")
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise BadOption(f"{option} {path}: cannot be created ({parent} is not a writable directory)")


def _csv(values: list[str] | None) -> list[str] | None:
    out = [x.strip() for v in values or [] for x in v.split(",") if x.strip()]
    return out or None


def _exit_code(verdicts: list) -> int:
    """1 if a promise broke, else 4 if a fault of the schedule never acted (the run did not test it), else 0."""
    if any(v.failed for v in verdicts):
        return EXIT_BROKEN
    return EXIT_NOT_EXERCISED if any(not v.exercised for v in verdicts) else EXIT_OK


@app.command()
def matrix(
    scenarios: list[str] = typer.Option(None, "--scenarios", help="names in scenarios/ (or NAME@VERSION[:MODE]); "
                                        "comma-separated or repeated; default: every scenario"),
    versions: list[str] = typer.Option(None, "--versions", help=f"Kafka versions ({VERSIONS_HELP}); default: each "
                                       "scenario's own"),
    modes: list[str] = typer.Option(None, "--modes", help="zk, kraft; default: the scenario's, or every mode of "
                                    "the version when --versions is given"),
    acks: list[str] = typer.Option(None, "--acks", help="override every producer's acks: 0, 1, all"),
    clients: list[str] = typer.Option(None, "--clients", help=f"client libraries: {LIBRARY_NAMES} (each scenario's "
                                      "client: every table that names none); default: each scenario's own"),
    set_: list[str] = typer.Option(None, "--set", help="KEY=VALUE override of every scenario (e.g. "
                                   "groups.0.protocol=consumer); repeatable; part of the run ids"),
    seeds: int = typer.Option(1, "--seeds", help="runs per cell, seeds 1..N"),
    quick: bool = typer.Option(False, "--quick", help="the quick suite: " + ", ".join(QUICK)),
    side_by_side: int = typer.Option(2, "--side-by-side", help="clusters of different settings (Kafka version, "
                                     "mode, ...) that run at once, each with its cells one after another; 1 runs "
                                     "one cluster at a time"),
    fresh_clusters: bool = typer.Option(False, "--fresh-clusters", help="boot a cluster for every run; by default "
                                        "runs whose result depends only on their own topic share one, each on a "
                                        "topic of its own (docs/hunt.md)"),
    out: Path = typer.Option(Path("reports"), "--out", help="runs go to OUT/runs, the report to OUT/index.html"),
    spark_master: str = typer.Option(None, "--spark-master", help=SPARK_MASTER_HELP),
) -> None:
    """Run the cross product of scenarios, versions, modes, clients, acks and seeds; check every run; write the report.

    Finished runs are kept, so a second call after an interruption resumes where it stopped."""

    from harness.cluster import reaper
    from harness.run import matrix as matrix_mod

    names = _csv(scenarios) or (QUICK if quick else sorted(p.stem for p in matrix_mod.SCENARIO_DIR.glob("*.toml")))
    with _refusing_bad_input():
        if seeds < 1:
            raise BadOption(f"--seeds: {seeds} runs nothing (allowed: 1 or more)")
        if side_by_side < 1:
            raise BadOption(f"--side-by-side: {side_by_side} runs nothing (allowed: 1 or more)")
        _writable(out, "--out", directory=True)
        p = matrix_mod.plan(names, _csv(versions), _csv(modes), _csv(acks), list(range(1, seeds + 1)), set_,
                            _csv(clients))
        if not p.cells:
            why = "; ".join(f"{c.run_id}: {reason}" for c, reason in p.skipped[:3])
            raise BadOption(f"the options leave no run to make ({why})")
    # The first cell's image before anything starts; the other versions' build while the first runs go on
    first, *later = list(dict.fromkeys(s.kafka_version for c, s, _, _ in p.cells
                                       if not (out / "runs" / c.run_id).exists())) or [None]
    if first is not None:
        _ensure_images([first])
    prefetch = _prefetch(later)
    for cell, why in p.skipped:
        _log(f"[dim]skip {cell.run_id}: {why}[/dim]")
    reaper.install_signal_handlers()
    done = sum((out / "runs" / c.run_id).exists() for c, *_ in p.cells)
    _log(f"{len(p.cells)} runs in the matrix, {done} already done, {len(p.cells) - done} to run")
    finished = _run_matrix_cells(p, out, done, fresh_clusters, prefetch, spark_master, side_by_side)
    if not finished:
        err.print("no run finished; nothing to check")
        raise typer.Exit(EXIT_NOT_RUN)
    from harness.checker import summarize

    unchecked = [d for d in finished if not (d / "verdict.json").exists()]
    if unchecked:
        _log(f"checking {len(unchecked)} runs in one Spark session")
    res = matrix_mod.check_and_report(finished, out, spark_master)
    print_verdicts(res.verdicts, summarize(res.verdicts))
    console.print(res.known_markdown)
    _log(f"report: {res.report.resolve()}")
    if res.errors:
        err.print(f"{len(res.errors)} run(s) could not be carried out; see {out / 'matrix.json'}")
    broken = any(v.failed for v in res.verdicts)
    raise typer.Exit(EXIT_BROKEN if broken else (EXIT_NOT_RUN if res.errors else EXIT_OK))


def _run_matrix_cells(p, out: Path, done: int, fresh: bool, prefetch, spark_master: str | None,
                      side_by_side: int) -> list[Path]:
    """The matrix's runs under a progress bar naming the runs under way: each run's end and its
    check's verdict printed as they come (run/matrix.run_cells)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.run import matrix as matrix_mod

    if done < len(p.cells) and not (spark_master or os.environ.get("KCHAOS_SPARK_MASTER")):
        from harness import checker

        checker.prestart()  # up by the time the first run ends: its check then finds it warm
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:
        task = bar.add_task("matrix", total=len(p.cells), completed=done)
        running: list[str] = []

        def announce(what: str, line: str) -> None:
            if what == "start":
                running.append(line)
                bar.update(task, description="running " + ", ".join(running))
                return
            if what in ("verdict", "check_error"):  # a run's check ended while the next one runs
                colour = "green" if what == "verdict" and ": fail" not in line else "red"
                bar.console.print(f"  [{colour}]checked[/{colour}] {line}")
                return
            bar.console.print(f"  [green]done[/green]  {line}" if what == "done" else f"  [red]error[/red] {line}")
            running[:] = [r for r in running if not line.startswith(r + ":")]
            bar.update(task, advance=1, description="running " + ", ".join(running) if running else "matrix")

        return matrix_mod.run_cells(p, out, announce, fresh=fresh,
                                    image_ready=prefetch.wait if prefetch is not None else None,
                                    check=matrix_mod.check(spark_master), side_by_side=side_by_side)


def _shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise ValueError(f"--shard: {text!r} (allowed: K/N with 1 <= K <= N, e.g. 2/4)")
    return int(k), int(n)


@app.command()
def hunt(
    scenarios: list[str] = typer.Argument(..., help="scenarios (names in scenarios/ or paths): their configuration "
                                          "is kept; fault schedules are drawn within each one's \\[hunt] table"),
    budget: str = typer.Option(None, "--budget", help="stop drawing after this much wall time: 30m, 2h, 90s"),
    runs: int = typer.Option(None, "--runs", help="stop after this many drawn schedules"),
    seed: int = typer.Option(1, "--seed", help="seed of the draws"),
    out: Path = typer.Option(Path("hunts/hunt"), "--out", help="runs go to OUT/runs, findings to OUT/findings, "
                             "progress to OUT/hunt.json; the same command again resumes"),
    anomaly: str = typer.Option(None, "--anomaly", help="hunt these anomaly classes (comma-separated), promised "
                                "or not; default: any broken promise"),
    confirm: int = typer.Option(3, "--confirm", help="re-runs of a finding as found, before it is shrunk"),
    measure: int = typer.Option(None, "--measure", help="runs of the minimal schedule that measure its "
                                "reproduction rate (default: --confirm)"),
    shrink_runs: int = typer.Option(20, "--shrink-runs", help="candidates shrinking may judge per finding"),
    versions: list[str] = typer.Option(None, "--versions", help=f"Kafka versions ({VERSIONS_HELP})"),
    modes: list[str] = typer.Option(None, "--modes", help="zk, kraft"),
    clients: list[str] = typer.Option(None, "--clients", help=f"client libraries: {LIBRARY_NAMES}"),
    set_: list[str] = typer.Option(None, "--set", help="KEY=VALUE override of every scenario; repeatable"),
    shard: str = typer.Option("1/1", "--shard", help="K/N: draw every N-th schedule from the K-th (N machines)"),
    spark_master: str = typer.Option(None, "--spark-master", help=SPARK_MASTER_HELP),
    merge: bool = typer.Option(False, "--merge", help="the arguments are hunt directories (--shard K/N on N "
                               "machines): write one account of them to --out, one finding a signature"),
    parallel: int = typer.Option(1, "--parallel", min=1, help="N shards at once on this machine, a cluster each "
                                 "(OUT/shards/K-of-N), merged into OUT: for machines with the cores"),
    guide: str = typer.Option("precursors", "--guide", help="how the next schedule is chosen: precursors (swarm "
                              "draws and schedules built on dropped acknowledged records), coverage (those, "
                              "draws aimed at the goal's protocol states and mutations of runs that reached new "
                              "ones), swarm (the baseline)"),
    until_found: bool = typer.Option(False, "--until-found", help="stop drawing once the first finding is written"),
    fresh_findings: bool = typer.Option(False, "--fresh-findings", help="confirm, shrink and measure each finding "
                                        "on clusters of their own (default: on the kept cluster where its schedule "
                                        "may share one, each run on a topic of its own)"),
) -> None:
    """Search fault schedules for broken promises; confirm, shrink and write up each finding.

    Exit 0 no finding, 1 findings, 2 bad input, 3 could not run."""
    if merge:
        _merge_hunts([Path(d) for d in scenarios], out)
    from harness.cluster import reaper
    from harness.hunt.goal import Goal
    from harness.hunt.loop import Hunt, HuntOptions, bases, parse_budget
    from harness.hunt.merge import refuse_a_hunts_own_directory
    from harness.hunt.trials import CannotRun, HuntError

    with _refusing_bad_input():
        try:
            opts = HuntOptions(scenarios=tuple(_csv(scenarios) or ()), out=out, goal=Goal.parse(anomaly), seed=seed,
                               budget_s=parse_budget(budget) if budget else None, runs=runs, confirm=confirm,
                               measure=measure, shrink_runs=shrink_runs, versions=tuple(_csv(versions) or ()),
                               modes=tuple(_csv(modes) or ()), sets=tuple(set_ or ()),
                               clients=tuple(_csv(clients) or ()), shard=_shard(shard),
                               spark_master=spark_master, guide=guide,
                               until_found=until_found, fresh_findings=fresh_findings)
            _refuse_hunt_options(opts, budget, parallel, shard)
            drawn_on = bases(opts)  # every scenario validated before anything runs
            if parallel > 1:
                refuse_a_hunts_own_directory(out, "a hunt of one process (--parallel merges shards)")
            h = Hunt(opts, announce=_log) if parallel == 1 else None
        except (ValueError, HuntError) as e:
            _said("bad input", e)
            raise typer.Exit(EXIT_BAD_INPUT) from e
        _ensure_images(sorted({b.scenario.kafka_version for b in drawn_on}))
    if h is None:
        _parallel_hunt(opts, parallel)
    reaper.install_signal_handlers()
    try:
        outcome = h.run()
    except CannotRun as e:
        _said("cannot run", e)
        raise typer.Exit(EXIT_NOT_RUN) from e
    _print_hunt_outcome(outcome, out)
    raise typer.Exit(outcome.exit_code)


def _refuse_hunt_options(opts, budget: str | None, parallel: int, shard: str) -> None:
    """What ``kchaos hunt`` refuses of its options beyond their types: ValueError naming the option."""
    from harness.hunt.loop import GUIDES

    if opts.guide not in GUIDES:
        raise ValueError(f"--guide: {opts.guide!r} (allowed: {', '.join(GUIDES)})")
    if budget is None and opts.runs is None:
        raise ValueError("hunt: give --budget (e.g. 30m) or --runs N")
    _writable(opts.out, "--out", directory=True)
    if opts.runs is not None and opts.runs < 1:
        raise ValueError(f"--runs: {opts.runs} draws nothing (allowed: 1 or more)")
    for option, n in (("--confirm", opts.confirm), ("--measure", opts.measure), ("--shrink-runs", opts.shrink_runs)):
        if n is not None and n < 0:
            raise ValueError(f"{option}: {n} (allowed: 0 or more)")
    if parallel > 1 and shard != "1/1":
        raise ValueError("--parallel N runs shards 1/N .. N/N itself (allowed: --parallel or --shard)")


def _print_hunt_outcome(outcome, out: Path) -> None:
    """What the hunt did, and each finding with where its bug.md is."""
    j = outcome.journal
    _log(f"{j['runs']} runs ({j['drawn']} drawn), {j['workload_s']:g} s of workload in {j['wall_s']:g} s; "
         f"{len(outcome.findings)} findings in {out / 'hunt.json'}")
    for f in outcome.findings:
        console.print(f"  {f.id}: {f.signature}: reproduced {f.reproduced[0]}/{f.reproduced[1]}, "
                      f"{len(f.original.faults)} -> {len(f.minimal.faults)} faults"
                      + (f", known: {f.known}" if f.known else "") + f"  {out / 'findings' / f.id / 'bug.md'}")


def _say_run_line(what: str, line: str) -> None:
    """A run's end and its check's verdict, one line each, as `affected` and `evidence` go."""
    if what in ("done", "error", "verdict", "check_error"):
        console.print(f"  {what:<7} {line}")


@app.command()
def affected(
    finding_dir: Path = typer.Argument(..., help="a finding of `kchaos hunt`: OUT/findings/ID"),
    versions: list[str] = typer.Option(None, "--versions", help=f"Kafka versions ({VERSIONS_HELP}); default: every "
                                       "version of the finding's line and the newest of each later line"),
    clients: list[str] = typer.Option(None, "--clients", help=f"client libraries: {LIBRARY_NAMES}; default: every "
                                      "library that runs the workload"),
    runs: int = typer.Option(10, "--runs", help="runs of the minimal schedule per version and client"),
    side_by_side: int = typer.Option(1, "--side-by-side", help="clusters of different versions at once (1: one at a "
                                     "time, so two clusters sharing the cores do not move the rates)"),
    spark_master: str = typer.Option(None, "--spark-master", help=SPARK_MASTER_HELP),
) -> None:
    """Measure which Kafka versions and client libraries a finding affects: its minimal schedule, --runs times on
    each, each on a cluster of its own, into FINDING_DIR/affected.json and bug.md's affected/unaffected table
    (with 95% intervals).

    Exit 0: measured (whatever the rates); 2: bad input; 3: no run could be carried out."""
    from harness.cluster import reaper
    from harness.hunt import affected as affected_mod

    with _refusing_bad_input():
        if runs < 1:
            raise BadOption(f"--runs: {runs} runs nothing (allowed: 1 or more)")
        if side_by_side < 1:
            raise BadOption(f"--side-by-side: {side_by_side} runs nothing (allowed: 1 or more)")
        m = affected_mod.prepare(finding_dir, _csv(versions), _csv(clients), runs)
    _ensure_images(m.versions)
    reaper.install_signal_handlers()
    _log(f"{len(m.plan.cells)} runs: {', '.join(m.versions)} x {len(m.plan.cells) // max(1, len(m.versions))} "
         f"(clients and runs); not run: {len(m.refused)}")

    rows = affected_mod.measure(m, _say_run_line, side_by_side, spark_master)
    console.print("\n".join(affected_mod.markdown(rows)))
    _log(f"written: {finding_dir / affected_mod.AFFECTED_JSON} and bug.md's affected versions")
    raise typer.Exit(EXIT_OK if any(r.n for r in rows) else EXIT_NOT_RUN)


@app.command()
def evidence(
    finding_dir: Path = typer.Argument(..., help="a finding of `kchaos hunt`: OUT/findings/ID"),
    runs: int = typer.Option(3, "--runs", help="evidence runs of the minimal schedule"),
    spark_master: str = typer.Option(None, "--spark-master", help=SPARK_MASTER_HELP),
) -> None:
    """Re-run a finding's minimal schedule with full logging of what it concerns (the brokers' loggers at DEBUG, the
    librdkafka clients' debug contexts), then pack the unfiltered logs, the runs, the report, bug.md, finding.json and
    affected.json into FINDING_DIR/ID-evidence-TIME.tar.gz, an attachment a tracker takes.

    Exit 0: packed; 2: bad input; 3: no run could be carried out."""
    from harness.cluster import reaper
    from harness.hunt import evidence_runs

    with _refusing_bad_input():
        if runs < 1:
            raise BadOption(f"--runs: {runs} runs nothing (allowed: 1 or more)")
        p = evidence_runs.plan(finding_dir, runs)
    _ensure_images(list(dict.fromkeys(c.kafka_version for c, *_ in p.cells)))
    reaper.install_signal_handlers()

    archive, finished = evidence_runs.run(finding_dir, p, _say_run_line, spark_master)
    _log(f"packed: {archive} ({archive.stat().st_size / 1e6:.1f} MB)")
    raise typer.Exit(EXIT_OK if finished else EXIT_NOT_RUN)


def _parallel_hunt(opts, n: int) -> None:
    """N shards at once, then one account of them in OUT; exits as a hunt does."""
    from harness.hunt.parallel import run_shards, shard_commands, shard_dir

    codes = run_shards(shard_commands(opts, n))
    done = [shard_dir(opts.out, k, n) for k in range(1, n + 1) if (shard_dir(opts.out, k, n) / "hunt.json").exists()]
    if not done:
        _said("cannot run", f"no shard of {n} wrote its hunt.json (exit codes {codes})")
        raise typer.Exit(max(codes) if max(codes) != EXIT_BROKEN else EXIT_NOT_RUN)
    if any(c in (EXIT_BAD_INPUT, EXIT_NOT_RUN) for c in codes):
        err.print(escape(f"shards' exit codes: {codes}; merging the {len(done)} that wrote their hunt.json"))
    _merge_hunts(done, opts.out)


def _merge_hunts(dirs: list[Path], out: Path) -> None:
    from harness.hunt.merge import merge
    from harness.hunt.trials import HuntError

    try:
        doc = merge(dirs, out)
    except HuntError as e:
        _said("bad input", e)
        raise typer.Exit(EXIT_BAD_INPUT) from e
    _log(f"{len(dirs)} hunts: {doc['runs']} runs ({doc['drawn']} drawn), {doc['wall_s']:g} s of machine time; "
         f"{len(doc['findings'])} findings in {out / 'hunt.json'}")
    for f in doc["findings"]:
        console.print(f"  {f['id']}: {f['signature']}: reproduced {f['reproduced']['k']}/{f['reproduced']['n']}"
                      f", from {f['from']}" + (f", also in {len(f['also_in'])} more" if f["also_in"] else ""))
    raise typer.Exit(EXIT_BROKEN if doc["findings"] else EXIT_OK)


@app.command()
def spark(action: str = typer.Argument("status", help="status | stop")) -> None:
    """The warm Spark Connect server checks share: its state, or stop it now."""
    from harness.checker import warm

    if action == "stop":
        _log("stopped the warm Spark server" if warm.stop() else "no warm Spark server was running")
        raise typer.Exit(EXIT_OK)
    if action != "status":
        err.print(escape(f"spark: {action!r} is not an action (allowed: status, stop)"))
        raise typer.Exit(EXIT_BAD_INPUT)
    info = warm.read_info()
    if info is None or not warm.alive(info):
        console.print("no warm Spark server is running; the next check starts one")
    else:
        idle = time.time() - warm.last_use()
        console.print(f"warm Spark {info.spark_version} at {info.url} (pid {info.pid}), idle {idle:.0f} s of "
                      f"{warm.IDLE_S:.0f} s; log {warm.state_dir() / 'server.log'}")
    raise typer.Exit(EXIT_OK)


def main() -> None:
    """Every verb, with kchaos's own failures kept apart from its verdicts: an exception no verb
    handled is a defect of kchaos, not a broken promise, so it exits 3 (not carried out) with its
    traceback, where Python's own exit code, 1, would read as one."""
    try:
        app()
    except Exception:
        sys.excepthook(*sys.exc_info())
        console.print("[red]kchaos failed[/red] (a defect of kchaos, not a verdict: the traceback above)")
        raise SystemExit(EXIT_NOT_RUN) from None
    finally:
        # Whatever the command loaded (Spark's client, pandas, the engine's SDK) stays until the
        # process exits; frozen, the interpreter's last collections skip it: a tenth of the time
        # to exit after a check.
        gc.freeze()
