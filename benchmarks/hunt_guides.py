"""Coverage-guided hunting against swarm draws, on kchaos's known answers: the time to the first
finding and the protocol coverage reached over time, several hunts per answer and guide.

    python benchmarks/hunt_guides.py [--answers a,b] [--guides swarm,coverage] [--seeds 5] [--budget 40m]
                                     [--only-seed S] [--out DIR] [--report-only]

Each hunt is ``kchaos hunt SCENARIO ... --guide G --seed S --budget B --until-found`` into
``OUT/ANSWER/G/sS`` (a directory already there is resumed, so a stopped benchmark carries on), with no
confirmation beyond one re-run and no shrinking: what is measured is the search. A finished hunt's
hunt.json is copied to ``benchmarks/results/hunt-guides/ANSWER/G/sS.json``, which is committed: the
table is read from there, and a hunt with a result there is not run again, so the benchmark, a day of
this machine, accumulates across sessions and machines (a machine's ``OUT`` does not outlive it). The time to the
first finding is the hunt's wall time (its runs, their checks) when it looked at the drawn run that
showed it (hunt.json's ``timeline``); a hunt that found nothing counts as the time it searched, a
lower bound (censored), and the median says so when it is one. A kept hunt that found nothing in less
than ``--budget`` is hunted again for the whole of it (hunts of a shorter budget bound a median only
that far). Coverage is the distinct features the hunt's runs reached (harness/hunt/coverage_guide.py),
read at fixed times. One hunt at a time: two clusters on two cores would slow each other.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from harness.hunt.loop import GUIDES

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "hunt-guides"
NO_POWER_LOSS = ('hunt.kinds=["kill", "restart", "pause", "isolate", "cut_fetch", "slow_fetch", "cut_coordination", '
                 '"cut_replication"]')
# The known answers (benchmarks/README.md, "Coverage-guided hunting"): the scenario and goal of each.
ANSWERS: dict[str, list[str]] = {
    "acks1-loss": ["acks1-leader-kill", "--anomaly", "lost"],
    "epochs-off-divergence": ["hw-truncation-loss", "--anomaly", "lost,divergence", "--set", NO_POWER_LOSS],
    "f1-offset-regression": ["group-async-commits", "--anomaly", "offset_regression,coordinator_regression"],
    "f2-frozen-isr": ["zk-isr-update-lost", "--anomaly", "isr_not_restored"],
}
COVERAGE_AT_MIN = (5, 10, 20, 40)
BAD_INPUT = 2  # kchaos's exit code for input it refuses before running anything


def refuse(message: str) -> NoReturn:
    """Bad input: the message on stderr, exit 2, as every kchaos command refuses it."""
    print(message, file=sys.stderr)
    raise SystemExit(BAD_INPUT)


def hunt_dir(out: Path, answer: str, guide: str, seed: int) -> Path:
    return out / answer / guide / f"s{seed}"


def result_path(answer: str, guide: str, seed: int, results: Path | None = None) -> Path:
    """Where a finished hunt's hunt.json is kept (committed with the code it measured)."""
    return (results or RESULTS) / answer / guide / f"s{seed}.json"


def run_hunt(out: Path, answer: str, guide: str, seed: int, budget: str) -> None:
    """One hunt, unless its result is kept already; its hunt.json kept once the hunt ended by itself.
    A kept hunt that found nothing in less than ``budget`` is hunted again, from the same seed, for the
    whole of it (resumed where its directory is still under ``out``), and the longer hunt replaces it:
    a censored time bounds a median only up to the time the hunt searched."""
    kept_at = result_path(answer, guide, seed)
    if kept_at.exists() and not searched_less(json.loads(kept_at.read_text()), budget_seconds(budget)):
        return
    d = hunt_dir(out, answer, guide, seed)
    cmd = [sys.executable, "-m", "harness", "hunt", *ANSWERS[answer], "--guide", guide, "--seed", str(seed),
           "--budget", budget, "--until-found", "--confirm", "1", "--measure", "0", "--shrink-runs", "0",
           "--out", str(d)]
    print(" ".join(cmd[2:]), flush=True)
    r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
    if r.returncode == BAD_INPUT:  # e.g. OUT holds a hunt of another goal there: no later hunt would do better
        refuse(f"{answer}, {guide}, seed {seed}: the hunt refused its input (its message is above); nothing was "
               "run or kept")
    if r.returncode in (0, 1):  # found, or spent its budget; a stopped or failed hunt is run again
        keep(d / "hunt.json", result_path(answer, guide, seed))


def keep(hunt_json: Path, kept: Path) -> None:
    """A finished hunt's hunt.json, with the commit of the code that ran it (``measured_with``) and
    the machine it ran on (``measured_on``: its cores and memory, as a table row names them)."""
    doc = json.loads(hunt_json.read_text())
    doc["measured_with"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                          text=True).stdout.strip()
    doc["measured_on"] = machine()
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(doc, indent=1))


def machine() -> str:
    """This machine as a benchmark row names it: cores and memory (hunts on other machines are kept
    beside these; their times are theirs)."""
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores, {memory_gib:.0f} GiB"


def ran_at(doc: dict) -> dict[str, float]:
    """Each run's time in the hunt: the wall time of every run before it and its own (hunt.json's
    ``spent``, in the order they ran). A hunt's timeline gave a run it read back on resuming the
    time of every earlier session (fixed in the hunt); this reads every kept hunt the same way."""
    out, total = {}, 0.0
    for run, cost in doc.get("spent", {}).items():
        total += cost["wall_s"]
        out[run] = total
    return out


def searched_s(doc: dict) -> float:
    """How long the hunt searched: the wall time of all its runs, so of a hunt that found nothing the
    time it is known not to have found its answer in."""
    return sum(cost["wall_s"] for cost in doc.get("spent", {}).values())


def searched_less(doc: dict, budget_s: float) -> bool:
    """Whether a kept hunt found nothing and stopped before ``budget_s`` (its budget was shorter)."""
    return not doc.get("findings") and searched_s(doc) < budget_s


def time_or_bound(doc: dict) -> tuple[float, bool]:
    """The time to the hunt's first finding, or, when it found none, the time it searched: a lower
    bound (True: censored)."""
    t = first_finding_s(doc)
    return (searched_s(doc), True) if t is None else (t, False)


def first_finding_s(doc: dict) -> float | None:
    """The hunt's wall time when it looked at the drawn run that showed its first finding."""
    if not doc.get("findings"):
        return None
    found = doc["findings"][0]["found_in"]
    return ran_at(doc).get(found)


def first_finding_draw(doc: dict) -> int | None:
    """Which drawn run (1 for the first) showed the hunt's first finding: the guide's own measure,
    apart from how long each run took."""
    if not doc.get("findings"):
        return None
    found = doc["findings"][0]["found_in"]
    return next((k for k, t in enumerate(doc.get("timeline", []), 1) if t["run"] == found), None)


def draw_or_bound(doc: dict) -> tuple[float, bool]:
    """The draw that showed the hunt's first finding, or, when none did, how many it drew: a lower
    bound (True: censored)."""
    k = first_finding_draw(doc)
    return (len(doc.get("timeline", [])), True) if k is None else (k, False)


def features_at(doc: dict, minutes: float) -> int:
    at = ran_at(doc)
    seen = [t["features"] for t in doc.get("timeline", []) if at.get(t["run"], t["wall_s"]) <= minutes * 60]
    return seen[-1] if seen else 0


def median_censored(times: list[tuple[float, bool]]) -> str:
    """The median of (time, censored) pairs: exact when the median of the known times and bounds is a
    known time with no bound below it, else ``>`` that median, a lower bound (the median of lower
    bounds is never above the median of what they bound). Hunts of different budgets mix rightly."""
    m = statistics.median(t for t, _ in times)
    if any(censored and t <= m for t, censored in times):
        return f">{m / 60:.1f} min"
    return f"{m / 60:.1f} min"


def median_draw(draws: list[int | None]) -> str:
    """The median draw, ``-`` when half or more hunts found nothing (their draw is not known)."""
    if sum(k is None for k in draws) * 2 >= len(draws):
        return "-"
    return f"{statistics.median(float('inf') if k is None else k for k in draws):g}"


def budget_seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)


def collect(downloaded: Path) -> list[Path]:
    """The hunts the CI workflow's jobs uploaded (``DIR/hunt-guides-ANSWER-GUIDE-sS/sS.json``, one
    artifact each) put where the benchmark keeps them; returns where each went."""
    placed = []
    for found in sorted(downloaded.glob("hunt-guides-*/s*.json")):
        answer, guide, seed = _artifact(found.parent.name)
        to = result_path(answer, guide, seed)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, to)
        placed.append(to)
    return placed


def _artifact(name: str) -> tuple[str, str, int]:
    """(answer, guide, seed) of an artifact named hunt-guides-ANSWER-GUIDE-sS."""
    rest, _, seed = name.removeprefix("hunt-guides-").rpartition("-s")
    answer, _, guide = rest.rpartition("-")
    if answer not in ANSWERS or not seed.isdigit():
        raise SystemExit(f"{name}: not hunt-guides-ANSWER-GUIDE-sS (answers: {', '.join(ANSWERS)})")
    return answer, guide, int(seed)


def goal_of(answer: str) -> list[str] | None:
    """The anomaly classes an answer's hunts look for (``--anomaly``), None for any broken promise."""
    args = ANSWERS[answer]
    return sorted(args[args.index("--anomaly") + 1].split(",")) if "--anomaly" in args else None


def stands_for(answer: str, doc: dict) -> bool:
    """Whether a kept hunt measured ``answer`` as it is hunted now: its goal is the answer's, or it
    is a swarm hunt for any broken promise in which no run showed one. A swarm hunt's draws do not
    depend on its goal, which only decides what counts as a finding (and so which runs its mutations
    build on), so such a hunt is what a hunt of any narrower goal would have been."""
    hunted = doc["options"].get("anomaly")
    if hunted == goal_of(answer):
        return True
    return doc["options"].get("guide") == "swarm" and hunted is None and not doc["findings"]


def kept(answer: str, guide: str, seeds: int, results: Path | None = None) -> dict[int, dict]:
    """The kept hunts of an answer and guide, by seed. The current results must all measure the
    answer as it is hunted now; an earlier set (``results``) keeps what its hunts looked for."""
    paths = {s: result_path(answer, guide, s, results) for s in range(1, seeds + 1)}
    docs = {s: json.loads(p.read_text()) for s, p in paths.items() if p.exists()}
    for s, doc in docs.items():
        if results is None and not stands_for(answer, doc):
            refuse(f"{paths[s]}: options.anomaly: hunted {doc['options'].get('anomaly') or 'any broken promise'} "
                   f"(allowed: {answer}'s {', '.join(goal_of(answer) or ['any broken promise'])}); move it to a "
                   "hunt-guides-before-* set")
    return docs


def report(answers: list[str], guides: list[str], seeds: int, results: Path | None = None) -> None:
    """One row per answer and guide: the time to the first finding (median, and each seed's: "-" found
    nothing, ">T" in the T minutes it searched), the code that ran them, and the median coverage at
    fixed times."""
    print("| answer | guide | hunts | found | time to the first finding, median (each seed's, min) | "
          "draw that showed it, median (each seed's) | code | machine | "
          + " | ".join(f"features at {m} min (median)" for m in COVERAGE_AT_MIN) + " |")
    print("|---|---|---|---|---|---|---|---|" + "---|" * len(COVERAGE_AT_MIN))
    for answer in answers:
        for guide in guides:
            docs = kept(answer, guide, seeds, results)
            if not docs:
                continue
            times = {s: time_or_bound(d) for s, d in docs.items()}
            each = ", ".join(f"s{s} " + (f"- (>{t / 60:.1f})" if censored else f"{t / 60:.1f}")
                             for s, (t, censored) in times.items())
            draws = {s: first_finding_draw(d) for s, d in docs.items()}
            code = ", ".join(sorted({d.get("measured_with", "?") for d in docs.values()}))
            machines = ", ".join(sorted({d.get("measured_on", "?") for d in docs.values()}))
            cov = [statistics.median(features_at(d, m) for d in docs.values()) for m in COVERAGE_AT_MIN]
            print(f"| {answer} | {guide} | {len(docs)} | {sum(not c for _, c in times.values())} | "
                  f"{median_censored(list(times.values()))} ({each}) | {median_draw(list(draws.values()))} "
                  f"({', '.join(f's{s} ' + ('-' if k is None else str(k)) for s, k in draws.items())}) | "
                  f"{code} | {machines} | "
                  + " | ".join(f"{c:g}" for c in cov) + " |")


Mark = tuple[float, bool]  # a time or draw, and whether it is only a lower bound (the hunt found nothing)


def sooner_one(x: Mark, y: Mark) -> float:
    """1 when ``x`` is surely sooner than ``y``, 0 when surely later, a half when it is not known (a
    tie, or a bound that does not reach the other): Gehan's scoring of censored pairs."""
    (tx, x_bound), (ty, y_bound) = x, y
    if not x_bound and (tx < ty or (y_bound and tx <= ty)):
        return 1.0
    if not y_bound and (ty < tx or (x_bound and ty <= tx)):
        return 0.0
    return 0.5


def sooner_p(guided: list[float | Mark], baseline: list[float | Mark]) -> float:
    """How likely hunts of two equally good guides would put ``guided`` this far ahead: the exact
    one-sided permutation test of the Mann-Whitney statistic (pairs in which ``guided`` is sooner,
    ties and unknowns half: Gehan's, for hunts that found nothing in the time they searched), over
    every split of the pooled figures into groups of the same sizes. A bare number is a known time."""

    def sooner(a: list[Mark], b: list[Mark]) -> float:
        return sum(sooner_one(x, y) for x in a for y in b)

    guided, baseline = ([v if isinstance(v, tuple) else (v, False) for v in vs] for vs in (guided, baseline))
    pooled = guided + baseline
    seen = sooner(guided, baseline)
    splits = [sooner([pooled[i] for i in chosen], [pooled[i] for i in range(len(pooled)) if i not in chosen])
              for chosen in itertools.combinations(range(len(pooled)), len(guided))]
    return sum(s >= seen for s in splits) / len(splits)


def against_swarm(answers: list[str], seeds: int, results: Path | None = None) -> None:
    """For each answer with hunts of both guides: whether the coverage guide found it sooner than
    swarm by more than chance, by time and by draw (a hunt that found nothing: after the time it
    searched and the draws it made)."""
    for answer in answers:
        guided, baseline = kept(answer, "coverage", seeds, results), kept(answer, "swarm", seeds, results)
        if not guided or not baseline:
            continue
        times = [[time_or_bound(d) for d in docs.values()] for docs in (guided, baseline)]
        draws = [[draw_or_bound(d) for d in docs.values()] for docs in (guided, baseline)]
        print(f"{answer}: coverage sooner than swarm, p = {sooner_p(*times):.3f} by time, "
              f"{sooner_p(*draws):.3f} by draw ({len(guided)} against {len(baseline)} hunts; exact, one-sided)")


def origin(came: str) -> str:
    """What a drawn run's schedule was, as hunt.json's timeline says where it came from: a fresh draw,
    one aimed at a state on the goal's way, a mutation of a corpus entry, or one built on a precursor."""
    for prefix, kind in (("swarm draw aimed", "aimed"), ("swarm draw", "fresh"), ("mutated", "mutated"),
                         ("built on", "built")):
        if came.startswith(prefix):
            return kind
    return "?"


def origins(answers: list[str], guides: list[str], seeds: int, results: Path | None = None) -> None:
    """Where the drawn runs came from and which of them showed the first finding, for the hunts whose
    timeline records it (hunts kept before it did are left out)."""
    print("| answer | guide | hunts | drawn runs: fresh, aimed, mutated, built | "
          "the draw that showed it (each seed's) |")
    print("|---|---|---|---|---|")
    kinds = ("fresh", "aimed", "mutated", "built")
    for answer in answers:
        for guide in guides:
            docs = {s: d for s, d in kept(answer, guide, seeds, results).items()
                    if all("came" in t for t in d.get("timeline", []))}
            if not docs:
                continue
            drawn = [origin(t["came"]) for d in docs.values() for t in d["timeline"]]
            showed = {}
            for s, d in docs.items():
                found = d["findings"][0]["found_in"] if d.get("findings") else None
                showed[s] = next((origin(t["came"]) for t in d["timeline"] if t["run"] == found), "-")
            print(f"| {answer} | {guide} | {len(docs)} | {', '.join(str(drawn.count(k)) for k in kinds)} | "
                  f"{', '.join(f's{s} {k}' for s, k in showed.items())} |")


AIMED_AT = "swarm draw aimed at "


def with_states(doc: dict, runs: Path) -> dict:
    """``doc`` with each timeline entry's ``states`` (the protocol states its run reached), read from
    the run's verdict.json in ``runs`` where the hunt was kept before its timeline recorded them and
    its runs are still on this machine."""
    timeline = []
    for t in doc.get("timeline", []):
        verdict = runs / t["run"] / "verdict.json"
        if "states" not in t and verdict.exists():
            coverage = json.loads(verdict.read_text()).get("coverage", {})
            t = {**t, "states": sorted(k for k, n in coverage.items() if n > 0)}
        timeline.append(t)
    return {**doc, "timeline": timeline}


def aims_entered(docs: list[dict]) -> tuple[int, int]:
    """(aimed draws whose run entered the state it was aimed at, aimed draws), over the timeline
    entries that say which states their run reached."""
    aimed = [t for d in docs for t in d.get("timeline", []) if "states" in t and t.get("came", "").startswith(AIMED_AT)]
    return sum(t["came"][len(AIMED_AT):] in t["states"] for t in aimed), len(aimed)


def aims(answers: list[str], seeds: int, out: Path, results: Path | None = None) -> None:
    """How many of the coverage guide's aimed draws entered the state they were aimed at: a fault
    meant to enter a state that its run did not enter is a draw the aim spent for nothing. Hunts kept
    before their timeline recorded the states count where their runs are still under ``out``."""
    print("| answer | hunts | aimed draws that entered the state they were aimed at |")
    print("|---|---|---|")
    for answer in answers:
        docs = [with_states(d, hunt_dir(out, answer, "coverage", s) / "runs")
                for s, d in kept(answer, "coverage", seeds, results).items()]
        entered, aimed = aims_entered(docs)
        counted = sum(any("states" in t for t in d.get("timeline", [])) for d in docs)
        if aimed:
            print(f"| {answer} | {counted} | {entered} of {aimed} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", default=",".join(ANSWERS))
    ap.add_argument("--guides", default="swarm,coverage")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", default="40m")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "hunt-guides")
    ap.add_argument("--only-seed", type=int, help="run this seed alone (one job of the CI workflow hunt-guides.yml)")
    ap.add_argument("--report-only", action="store_true", help="print the table of the hunts already done")
    ap.add_argument("--results", type=Path,
                    help="the kept hunts to report (default: benchmarks/results/hunt-guides; an earlier "
                         "guide's: hunt-guides-before-*)")
    ap.add_argument("--collect", type=Path, help="place the hunts the CI workflow's jobs uploaded, then stop")
    a = ap.parse_args()
    if a.collect:
        for placed in collect(a.collect):
            print(placed.relative_to(ROOT))
        return
    answers, guides = a.answers.split(","), a.guides.split(",")
    for option, given, allowed in (("--answers", answers, ANSWERS), ("--guides", guides, GUIDES)):
        unknown = [x for x in given if x not in allowed]
        if unknown:
            print(f"{option}: {', '.join(unknown)} (allowed: {', '.join(allowed)})", file=sys.stderr)
            sys.exit(2)
    if not a.report_only:
        seeds = [a.only_seed] if a.only_seed else range(1, a.seeds + 1)
        for seed in seeds:  # seed-major: a stopped benchmark has every guide at the same depth
            for answer in answers:
                for guide in guides:
                    run_hunt(a.out, answer, guide, seed, a.budget)
    report(answers, guides, a.seeds, a.results)
    print()
    against_swarm(answers, a.seeds, a.results)
    print()
    origins(answers, guides, a.seeds, a.results)
    print()
    aims(answers, a.seeds, a.out, a.results)


if __name__ == "__main__":
    main()
