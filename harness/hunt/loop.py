"""``kchaos hunt``: draw fault schedules, run them back to back, and turn what breaks into findings.

For each run that shows the goal (a broken promise, or an anomaly class asked for), the same
scenario and seed is run again to measure how often it reproduces, shrunk to the fewest faults and
smallest numbers that still show it, measured again, and written up (write_up.py). Everything is
deterministic given what the runs showed, and every run is kept under ``DIR/runs``, so the same
command again replays what is done from disk and carries on.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.faults import CLIENT_LINK_FAULTS, DISK_FAULTS, FAULTS
from harness.history import write_json_atomic
from harness.hunt import precursors
from harness.hunt import shrink as shrinking
from harness.hunt.affected import FINDING_JSON
from harness.hunt.coverage_guide import CoverageCorpus
from harness.hunt.coverage_guide import next_schedule as coverage_next
from harness.hunt.goal import Goal, Hit, signature
from harness.hunt.guide import Corpus, next_schedule, swarm
from harness.hunt.known import known_id
from harness.hunt.sequential import Judgement, Sprt
from harness.hunt.space import Move, draw, vocabulary
from harness.hunt.trials import (
    CannotRun,
    HuntError,
    Pending,
    RunAndCheck,
    Trial,
    Trials,
    run_and_check,
)
from harness.hunt.write_up import bug_md, scenario_toml
from harness.run import matrix
from harness.run.kept_cluster import (
    KeptCluster,
    may_share_a_cluster,
    with_links_for,
    with_node_faults,
    with_topic_and_ids_of_its_own,
)
from harness.scenario import Scenario, ScenarioError

HUNT_JSON = "hunt.json"
# A finding that did not reproduce on confirmation showed once; a later run that shows it again is a
# second sighting in a schedule of its own, investigated in turn (confirmed, shrunk), up to this many
# findings of one failure while none of them reproduced; after that a sighting is only noted (seen_in).
INVESTIGATIONS_UNREPRODUCED = 3
# How a hunt chooses its next schedule: swarm draws only (the baseline); swarm draws and schedules
# built on runs whose replicas dropped acknowledged records (guide.py); those, and schedules mutated
# from runs that reached protocol states no earlier run had (coverage_guide.py).
GUIDES = {"swarm": "swarm draws only, nothing learnt from the runs (the baseline)",
          "precursors": "swarm draws, and schedules built on runs whose replicas dropped acknowledged records",
          "coverage": "as precursors, and schedules mutated from runs that reached protocol states, exposure or "
                      "anomaly classes no earlier run had, by energy"}


class OutOfTime(Exception):
    """The hunt's time budget is spent: stop where it stands, keep what is found."""


@dataclass(frozen=True)
class HuntOptions:
    scenarios: tuple[str, ...]
    out: Path
    goal: Goal = field(default_factory=Goal)
    seed: int = 1
    budget_s: float | None = None
    runs: int | None = None  # drawn schedules (confirmations and shrinking come on top)
    confirm: int = 3  # re-runs of a finding as found
    measure: int | None = None  # runs of its minimal schedule that measure its rate (default: confirm)
    shrink_runs: int = 20  # re-runs shrinking may spend on one finding
    versions: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()
    clients: tuple[str, ...] = ()
    shard: tuple[int, int] = (1, 1)  # K of N: this machine draws every N-th schedule, from the K-th
    spark_master: str | None = None
    guide: str = "precursors"  # GUIDES: how the next schedule is chosen
    until_found: bool = False  # stop drawing once the first finding is written (a benchmark's time to it)
    # confirmations, shrink candidates and measurements each on a cluster of their own, even where the
    # schedule may share the kept one (by default they share it, each on a topic of its own)
    fresh_findings: bool = False

    def identity(self) -> dict:
        """What must be the same for a directory to be resumed: what decides the draws."""
        return {"scenarios": list(self.scenarios), "seed": self.seed, "versions": list(self.versions),
                "modes": list(self.modes), "sets": list(self.sets), "shard": list(self.shard),
                **({"clients": list(self.clients)} if self.clients else {}),
                **({"guide": self.guide} if self.guide != "precursors" else {}),
                "anomaly": sorted(self.goal.anomalies) if self.goal.anomalies is not None else None}


@dataclass
class Base:
    """One scenario at one version and mode: the configuration under test and what may be drawn."""

    id: str
    scenario: Scenario
    moves: list[Move]


@dataclass
class Rate:
    """Runs of one schedule: how many showed the hit (``k`` of ``n``), the first that did, and how many
    did not because a trigger of the schedule never fired."""

    k: int = 0
    n: int = 0
    first: Trial | None = None
    unfired: int = 0


@dataclass
class Finding:
    id: str
    signature: str
    hit: Hit
    known: str | None
    found_in: str
    original: Scenario
    minimal: Scenario
    confirmed: tuple[int, int]
    reproduced: tuple[int, int]
    # re-runs as found that did not show it because a trigger of the schedule never fired: misses of the
    # schedule as written, but not runs in which its faults met the moment the drawn run's met
    confirmed_unfired: int = 0
    shrink_judged: int = 0
    seen_in: list[str] = field(default_factory=list)
    shrink_test: Sprt | None = None  # the sequential test its candidates were judged by
    shrink_judgements: list[Judgement] = field(default_factory=list)
    minimal_run: Trial | None = None
    original_run: Trial | None = None

    def covers(self, hit: Hit, s: Scenario) -> bool:
        """Whether a new hit is this finding again: the same failure, in a schedule that has every
        kind of fault the minimal one needs."""
        return hit.key == self.hit.key and {f.kind for f in self.minimal.faults} <= {f.kind for f in s.faults}

    def to_json(self, root: Path) -> dict:
        return {"id": self.id, "signature": self.signature, "known": self.known, "anomaly": self.hit.anomaly,
                "configuration": self.hit.where, "promised": self.hit.promised,
                "reproduced": {"k": self.reproduced[0], "n": self.reproduced[1]},
                "confirmed": {"k": self.confirmed[0], "n": self.confirmed[1], "unfired": self.confirmed_unfired},
                "faults_before": len(self.original.faults), "faults_after": len(self.minimal.faults),
                "found_in": self.found_in, "seen_in": self.seen_in, "shrink_runs": self.shrink_judged,
                "shrink_test": self.shrink_summary(),
                "dir": str((root / "findings" / self.id).relative_to(root))}

    def shrink_summary(self) -> dict | None:
        """The sequential test and what it decided: candidates kept and dropped, the runs they took,
        and how many ran out of runs undecided (dropped)."""
        if self.shrink_test is None:
            return None
        js = self.shrink_judgements
        return {**self.shrink_test.describe(), "candidates": len(js), "kept": sum(j.kept for j in js),
                "dropped_undecided": sum(not j.decided for j in js), "runs": sum(j.runs for j in js)}


@dataclass
class HuntOutcome:
    findings: list[Finding]
    drawn: int
    journal: dict

    @property
    def exit_code(self) -> int:
        return 1 if self.findings else 0


Announce = Callable[[str], None]


def bases(opts: HuntOptions) -> list[Base]:
    """Every scenario at every version and mode asked, validated, with its vocabulary; ScenarioError
    (exit 2) before anything runs."""
    plan = matrix.plan(list(opts.scenarios), list(opts.versions) or None, list(opts.modes) or None, None,
                       [opts.seed], list(opts.sets), list(opts.clients) or None)
    out = []
    for cell, s, _ov, _path in plan.cells:
        moves = vocabulary(s)
        if not moves:
            raise ScenarioError(f"{cell.scenario}: [hunt]: no fault kind and target of its bounds is one this "
                                "scenario takes (allowed: the kinds and targets of README's fault table it accepts)")
        client = f"-{cell.client}" if cell.client else ""
        out.append(Base(f"{Path(cell.scenario).stem}-{cell.kafka_version}-{cell.mode}{client}", s, moves))
    return out


class Hunt:
    def __init__(self, opts: HuntOptions, announce: Announce = print, go: RunAndCheck | None = None):
        """``go`` runs and checks one scenario (real Kafka unless a test gives its own)."""
        self.opts = opts
        self.announce = announce
        self.bases = bases(opts)
        self.journal = _open_journal(opts)
        self.kept = KeptCluster()
        go = go or run_and_check(opts.spark_master, self.kept)
        self.trials = Trials(opts.out / "runs", self.journal["spent"], go, opts.spark_master, log=announce)
        self.findings: list[Finding] = []
        self.corpora = {b.id: Corpus() for b in self.bases}  # schedules that came close (guide.py)
        self.coverage = {b.id: CoverageCorpus(on_the_way=opts.goal.on_the_way)  # schedules that reached new states
                         for b in self.bases}
        self.journal.setdefault("timeline", [])
        del self.journal["timeline"][:]  # rebuilt as the runs are read back or run
        self.t0 = time.monotonic()

    # ------------------------------------------------------------------ the loop

    def run(self) -> HuntOutcome:
        """Draw, run and look at schedules until the budget or ``--runs`` is spent. A drawn run's
        check goes on while the next drawn run runs, and the hunt looks at it once that run is done:
        the same decisions in the same order as one run at a time, given what the runs showed."""
        drawn = 0
        looking: tuple[Pending, Scenario, Base, str, str] | None = None  # a drawn run whose check goes on
        try:
            for number in self._draw_numbers():
                if self.opts.runs is not None and drawn >= self.opts.runs:
                    break
                if self.opts.until_found and self.findings:
                    break
                base = self.bases[number % len(self.bases)]
                rng = random.Random(f"{self.opts.seed}/{base.id}/{number}")
                candidate, origin = self._next(base, rng, f"h{number:04d}-{base.id}")
                if origin != "swarm draw":
                    self.announce(f"h{number:04d}: {origin}")
                reuse = may_share_a_cluster(candidate)
                # On a shared cluster the run gets a topic of its own; a finding from it is confirmed and
                # shrunk from the schedule as drawn (its minimal.toml names the topic the scenario does,
                # not the shared cluster's), each of those runs on a topic of its own in turn (_run).
                ran = self._on_the_kept_cluster(candidate, base, str(number)) if reuse else candidate
                if self.out_of_time:
                    raise OutOfTime
                pending = self.trials.start(f"h{number:04d}-{base.id}", ran, reuse)
                drawn += 1
                if looking is not None:
                    earlier, looking = looking, None
                    self._look_at_pending(*earlier)
                looking = (pending, candidate, base, ran.topic.name, origin)
            if looking is not None:
                self._look_at_pending(*looking)
        except OutOfTime:
            if looking is not None:  # it ran within the budget: it counts
                self._look_at_pending(*looking)
            self.announce("time budget spent")
        finally:
            self.trials.close()
            self.kept.close()
            self._save(drawn)
        return HuntOutcome(self.findings, drawn, self.journal)

    def _next(self, base: Base, rng: random.Random, name: str) -> tuple[Scenario, str]:
        """The next schedule of ``base`` as the hunt's guide chooses it, and where it came from."""
        if self.opts.guide == "swarm":
            return draw(base.scenario, rng, swarm(rng, base.moves)), "swarm draw"

        def precursor_guided() -> Scenario:
            nonlocal origin
            s, origin = next_schedule(base.scenario, rng, base.moves, self.corpora[base.id])
            return s

        origin = "swarm draw"
        if self.opts.guide == "coverage":
            s, came = coverage_next(base.scenario, rng, base.moves, self.coverage[base.id], name, precursor_guided)
            return s, (came if came != "swarm draw" else origin)
        return precursor_guided(), origin

    @staticmethod
    def _on_the_kept_cluster(s: Scenario, base: Base, tag: str) -> Scenario:
        """A run of ``base`` as it runs on the kept cluster: on a topic of its own (``NAME-tag``), with
        links of their own for every client the hunt may aim a link fault at, skewable clocks when it
        may skew one, faultable disks when it may fail one and the Kafka toxics when it may lose
        answers, whether this draw does or not, so that draws with and without those faults share
        the cluster."""
        aimed = sorted({m.target.client for m in base.moves
                        if m.target.role == "client" and m.kind in CLIENT_LINK_FAULTS})
        clocks = any(FAULTS[m.kind].clock and not FAULTS[m.kind].on_clients for m in base.moves)
        disks = any(m.kind in DISK_FAULTS for m in base.moves)
        answers = any(FAULTS[m.kind].loses_answers for m in base.moves)
        return with_node_faults(with_links_for(with_topic_and_ids_of_its_own(s, tag), aimed), clocks, disks, answers)

    def _look_at_pending(self, pending: Pending, s: Scenario, base: Base, topic: str, origin: str) -> None:
        """Look at a drawn run (schedule ``s``, which came about as ``origin`` says) once its check is
        done; one that came close without showing the goal joins its base's corpus, for later draws
        to build on."""
        trial = pending.result()
        self._progress(trial, s)
        looked_at_s = self.trials.wall_through(trial.name)  # before any investigation of what it showed
        if not self._look_at(trial, s, base) and trial.verdict is not None:
            # What happened after the workload (the heal's own truncations) is not where a fault can go.
            seen = [p for p in precursors.read(trial.path, topic) if p.at_s <= s.duration_s]
            if seen:
                self.announce(f"{trial.name}: precursor: " + "; ".join(
                    f"broker {p.broker} dropped {p.acknowledged} acknowledged records of partition "
                    f"{p.partition} at {p.at_s:g} s" for p in seen))
            self.corpora[base.id].add(trial.name, s, seen)
        corpus = self.coverage[base.id]
        new = corpus.look(trial.name, s, trial.verdict)
        if new and self.opts.guide == "coverage":
            self.announce(f"{trial.name}: new coverage: {', '.join(sorted(new))}")
        reached = sorted(k for k, n in trial.verdict.coverage.items() if n > 0) if trial.verdict else []
        self.journal["timeline"].append({"run": trial.name, "wall_s": round(looked_at_s, 1),
                                         "features": sum(len(c.seen) for c in self.coverage.values()),
                                         "findings": len(self.findings), "came": origin, "states": reached})

    def _draw_numbers(self):
        k, n = self.opts.shard
        number = k - 1
        while True:
            yield number
            number += n

    @property
    def out_of_time(self) -> bool:
        return self.opts.budget_s is not None and self.trials.wall_s >= self.opts.budget_s

    def _run(self, name: str, s: Scenario) -> Trial:
        """Run (or read back) one run of a finding (a confirmation, a shrink candidate, a
        measurement), named after the drawn run it came from: on the kept cluster, on a topic of its
        own, where the schedule may share one and ``--fresh-findings`` was not given; else on a
        cluster of its own."""
        if self.out_of_time:
            raise OutOfTime
        reuse = not self.opts.fresh_findings and may_share_a_cluster(s)
        ran = s
        if reuse:
            base = max((b for b in self.bases if name[6:].startswith(b.id)), key=lambda b: len(b.id))
            ran = self._on_the_kept_cluster(s, base, str(int(name[1:5])) + name[6 + len(base.id):])
        trial = self.trials.run(name, ran, reuse)
        self._progress(trial, s)
        return trial

    def _progress(self, trial: Trial, s: Scenario) -> None:
        v = trial.verdict
        outcome = "could not run" if trial.error else (v.verdict if v else "?")
        left = ""
        if self.opts.budget_s is not None:
            left = f" · {max(0, self.opts.budget_s - self.trials.wall_s) / 60:.0f} min left"
        self.announce(f"{trial.name}: {len(s.faults)} faults, {s.duration_s:g} s: {outcome} "
                      f"({trial.wall_s:g} s) · {len(self.trials.spent)} runs · {len(self.findings)} findings{left}")
        self._save(None)

    def _look_at(self, trial: Trial, s: Scenario, base: Base) -> bool:
        """Whether the run showed the goal (a finding, new or seen before)."""
        if trial.verdict is None:
            return False
        hits = self.opts.goal.hits(trial.verdict)
        for hit in hits:
            same = [f for f in self.findings if f.covers(hit, s)]
            if same and (any(f.confirmed[0] > 0 for f in same) or len(same) >= INVESTIGATIONS_UNREPRODUCED):
                same[0].seen_in.append(trial.name)
                continue
            if same:
                self.announce(f"{trial.name}: {hit.anomaly} again, as in {same[-1].id}, which did not reproduce: "
                              "investigating this run too")
            self.findings.append(self._investigate(hit, trial, s, base))
            break  # one investigation per run: the other hits of it show up again if they are real
        return bool(hits)

    # ------------------------------------------------------------------ one finding

    def _investigate(self, hit: Hit, trial: Trial, s: Scenario, base: Base) -> Finding:
        fid = f"{len(self.findings) + 1:02d}-{hit.anomaly}"
        self.announce(f"{trial.name}: {hit.anomaly} ({hit.count}) in {hit.where}: confirming")
        kinds = [f.kind for f in s.faults]
        finding = Finding(fid, signature(hit, kinds), hit, known_id(hit, trial.verdict, kinds),
                          trial.name, s, s, (0, 0), (0, 0), original_run=trial)
        confirming = self._rate(s, f"{trial.name}-c", hit, self.opts.confirm)
        finding.confirmed, finding.confirmed_unfired = (confirming.k, confirming.n), confirming.unfired
        finding.reproduced = finding.confirmed
        if finding.confirmed[0] > 0 and not self.out_of_time:
            self._shrink(finding, trial.name, confirming.first or trial)
        if self.out_of_time:
            self.announce(f"{fid}: the time budget ran out while investigating it; written as it stands")
        finding.signature = signature(hit, [f.kind for f in finding.minimal.faults])
        self._write(finding)
        k, n = finding.confirmed
        missed = finding.confirmed_unfired
        unfired = f", {missed} of them with a fault that never acted" if missed else ""
        self.announce(f"finding {fid}: {finding.signature}: confirmed {k} of {n}{unfired}, reproduced "
                      f"{finding.reproduced[0]} of {finding.reproduced[1]}, {len(s.faults)} -> "
                      f"{len(finding.minimal.faults)} faults"
                      + (f" (known: {finding.known})" if finding.known else ""))
        return finding

    def _rate(self, s: Scenario, prefix: str, hit: Hit, n: int) -> Rate:
        """In how many of ``n`` runs of ``s`` the hit shows again (fewer runs than ``n`` when the
        time budget runs out)."""
        rate = Rate()
        try:
            for i in range(1, n + 1):
                trial = self._run(f"{prefix}{i}", s)
                rate.n += 1
                if self._shows(trial, hit):
                    rate.k += 1
                    rate.first = rate.first or trial
                elif trial.verdict is not None and trial.verdict.not_exercised:
                    rate.unfired += 1
        except OutOfTime:
            pass
        return rate

    def _shows(self, trial: Trial, hit: Hit) -> bool:
        return trial.verdict is not None and any(h.key == hit.key for h in self.opts.goal.hits(trial.verdict))

    def _shrink(self, finding: Finding, name: str, showing: Trial) -> None:
        """Shrink the finding's schedule; ``showing``: a run of it as found that showed the hit. Each
        candidate is judged by a sequential test knowing the confirmed rate (sequential.py)."""
        test = Sprt.for_rate(*finding.confirmed)
        finding.shrink_test = test
        count = iter(range(1, 10_000))
        shown: dict[int, Trial] = {}

        def still_fails(c: Scenario) -> bool:
            step = next(count)

            def run(t: int) -> bool:
                trial = self._run(f"{name}-s{step:02d}" + (f"-{t}" if t > 1 else ""), c)
                if self._shows(trial, finding.hit):
                    shown.setdefault(id(c), trial)
                    return True
                return False

            judged = test.judge(run)
            finding.shrink_judgements.append(judged)
            return judged.kept

        self.announce(f"{name}: shrinking {len(finding.original.faults)} faults (each candidate judged by a sequential "
                      f"test: p1 {test.p1:.2f}, p0 {test.p0:.3f}, alpha {test.alpha}, beta {test.beta}, at most "
                      f"{test.max_runs} runs; at most {self.opts.shrink_runs} candidates)")
        result = shrinking.shrink(finding.original, still_fails, self.opts.shrink_runs, stop=OutOfTime)
        finding.shrink_judged = result.judged
        finding.minimal = result.scenario
        if result.scenario is finding.original and self.opts.measure is None:  # the confirmations measured it
            finding.minimal_run = showing
            return
        measured = self._rate(result.scenario, f"{name}-m", finding.hit, self.opts.measure or self.opts.confirm)
        if measured.n == 0:  # the budget ran out before the minimal schedule's first measurement: report it as found
            self.announce(f"{name}: no time left to measure the shrunk schedule; written as found, with its rate")
            finding.minimal, finding.minimal_run = finding.original, showing
            return
        finding.reproduced = (measured.k, measured.n)
        finding.minimal_run = measured.first or shown.get(id(result.scenario))

    # ------------------------------------------------------------------ what is written

    def _write(self, f: Finding) -> None:
        """findings/ID: minimal.toml, bug.md, the original and a minimal run, one report of both;
        written beside and renamed into place, so a killed hunt leaves no half-written finding."""
        from harness.report.page import write_report

        root = self.opts.out
        final = root / "findings" / f.id
        tmp = final.with_name(f".{f.id}.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        f.minimal = f.minimal.model_copy(update={"name": f"{f.minimal.name}-{f.id}", "description": (
            f"kchaos hunt finding {f.id}: {f.signature}")})
        (tmp / "minimal.toml").write_text(scenario_toml(f.minimal))
        (tmp / "original.toml").write_text(scenario_toml(f.original))
        runs = []
        for label, trial in (("original", f.original_run), ("minimal", f.minimal_run)):
            if trial is not None and trial.path.exists():
                shutil.copytree(trial.path, tmp / label)
                runs.append(tmp / label)
        shown = f.minimal_run or f.original_run
        if shown is not None and shown.verdict is not None:
            doc = f.to_json(root)
            (tmp / FINDING_JSON).write_text(json.dumps(doc, indent=1) + "\n")  # what `kchaos affected` reads
            (tmp / "bug.md").write_text(bug_md(doc, f.hit, f.minimal, shown.path, shown.verdict))
        if runs:
            write_report(runs, tmp / "report.html", title=f"kchaos hunt finding {f.id}")
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)

    def _save(self, drawn: int | None) -> None:
        j = self.journal
        if drawn is not None:
            j["drawn"] = drawn
        j.update({"runs": len(self.trials.spent), "workload_s": round(self.trials.workload_s, 1),
                  "wall_s": round(self.trials.wall_s, 1),
                  "errors": sum(1 for x in self.trials.spent.values() if "error" in x),
                  "findings": [f.to_json(self.opts.out) for f in self.findings]})
        write_json_atomic(self.opts.out / HUNT_JSON, j)


def parse_budget(text: str) -> float:
    """``30m``, ``2h``, ``90s`` or seconds; ValueError naming the forms allowed."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        seconds = float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)
    except ValueError:
        raise ValueError(f"--budget: {text!r} (allowed: 90s, 30m, 2h or seconds)") from None
    if not seconds > 0:  # NaN too
        raise ValueError(f"--budget: {text!r} leaves no time to hunt (allowed: more than 0, e.g. 90s, 30m, 2h)")
    return seconds


def _open_journal(opts: HuntOptions) -> dict:
    """hunt.json: a new one, or the one of the hunt this directory holds if it is the same hunt."""
    import json

    path = opts.out / HUNT_JSON
    if path.exists():
        j = json.loads(path.read_text())
        if j.get("options") != opts.identity():
            raise HuntError(f"{path}: options: this directory holds another hunt ({j.get('options')}); allowed: the "
                            "same scenarios, --seed, --versions, --modes, --set, --anomaly and --shard, or a new --out")
        return j
    opts.out.mkdir(parents=True, exist_ok=True)
    return {"options": opts.identity(), "spent": {}, "findings": []}


def hunt(opts: HuntOptions, announce: Announce = print, go: RunAndCheck | None = None) -> HuntOutcome:
    """Run a hunt; raises ScenarioError/HuntError (bad input, exit 2) or CannotRun (exit 3)."""
    return Hunt(opts, announce, go).run()


__all__ = ["CannotRun", "HuntError", "HuntOptions", "HuntOutcome", "hunt", "parse_budget"]
