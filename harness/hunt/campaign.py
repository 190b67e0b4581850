"""A campaign's account: what one or more hunts on a ground drew, ran, reached and broke, written as
docs/findings.md's "Campaigns" entries are (``python -m harness.hunt.campaign HUNT_DIR...``).

Read from the hunts' own files only: hunt.json (options, totals, findings) and each drawn run's
run.json (version, mode, client, the faults as drawn, triggered or timed) and verdict.json (its
verdict, the protocol states it reached, what it put at risk, its anomaly counts and promises). A
ground where nothing broke is still an account: what was covered is what the next campaign starts
past. Confirmation, shrink and measurement runs (under ``findings/``) are not counted as draws.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster.formation import FORMATION_FAILED
from harness.hunt.merge import HUNT_JSON
from harness.hunt.trials import HuntError


@dataclass
class Drawn:
    """One drawn run, as the campaign counts it."""

    line: str  # "4.4.0 kraft"
    client: str
    verdict: str
    kinds: list[str]
    triggered: int
    states: list[str]
    exposed: int
    broken: dict[str, int]  # the anomaly classes that broke a promise (the verdict's), with their counts
    not_broken: dict[str, int]  # every other class counted: not promised, or held to be something else
    formation: str = ""  # the kind of fault its cluster's formation had ("" none)


@dataclass
class Account:
    """What a campaign's hunts add up to."""

    hunts: list[str]
    minutes: float = 0.0
    runs: list[Drawn] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    errors: int = 0
    investigations: int = 0  # runs that confirmed, shrank or measured a finding: not drawn, not counted above
    unformed: list[str] = field(default_factory=list)  # runs whose cluster did not form after its formation fault

    def by(self, what: str) -> Counter:
        return Counter(getattr(r, what) for r in self.runs)

    def kinds(self) -> Counter:
        return Counter(k for r in self.runs for k in r.kinds)

    def states(self) -> Counter:
        """Runs that reached each protocol state."""
        return Counter(s for r in self.runs for s in set(r.states))

    def anomalies(self, broke: bool) -> Counter:
        """Runs that showed each anomaly class: breaking a promise, or (``broke`` False) not."""
        return Counter(a for r in self.runs for a in (r.broken if broke else r.not_broken))


# A run the hunt made to investigate a finding, named after the drawn run it investigates
# (harness/hunt/loop.py): a confirmation (-c1), a shrink candidate (-s03, -s03-2) or a measurement (-m1).
INVESTIGATION = re.compile(r"-(?:c\d+|m\d+|s\d{2}(?:-\d+)?)$")


def drawn(run_dir: Path) -> Drawn | None:
    """A drawn run's account, None when it has no verdict (a run that failed to run: hunt.json's errors)."""
    try:
        run = json.loads((run_dir / "run.json").read_text())
        verdict = json.loads((run_dir / "verdict.json").read_text())
    except FileNotFoundError:
        return None
    broken: dict[str, int] = {}
    not_broken: dict[str, int] = {}
    for cfg in verdict.get("by_config", []):
        for name, n in cfg["counts"].items():
            if n:  # a promised anomaly the verdict held to be something else (NOT_HELD) broke nothing
                side = broken if name in cfg.get("broken", []) else not_broken
                side[name] = side.get(name, 0) + n
    faults = run.get("faults") or []
    client = ",".join(sorted({c["version"] for c in run.get("clients") or []})) or "-"
    formation = ((run.get("cluster") or {}).get("settings") or {}).get("formation") or {}
    return Drawn(f"{run['kafka_version']} {run['mode']}", client, verdict["verdict"], [f["kind"] for f in faults],
                 sum(1 for f in faults if f.get("on")), [k for k, v in (verdict.get("coverage") or {}).items() if v],
                 sum(e.get("exposed") or 0 for e in verdict.get("exposure") or []), broken, not_broken,
                 formation.get("kind", ""))


def did_not_form(run_dir: Path) -> bool:
    """Whether a run set aside as not carried out is one whose cluster did not form after its formation
    fault (the cluster's own error, harness/cluster/formation.py)."""
    error = run_dir / "error.txt"
    return error.is_file() and FORMATION_FAILED in error.read_text()


def read_progress(d: Path) -> dict:
    """A hunt directory's hunt.json, finished or still being written; HuntError naming what it lacks."""
    path = d / HUNT_JSON
    try:
        doc = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError) as e:
        raise HuntError(f"{path}: {e} (allowed: directories a `kchaos hunt --out` wrote)") from None
    if missing := [k for k in ("options", "findings", "wall_s", "errors") if k not in doc]:
        raise HuntError(f"{path}: keys {', '.join(missing)} missing (allowed: the hunt.json of a hunt)")
    return doc


def account(hunt_dirs: list[Path]) -> Account:
    """The campaign's account over its hunt directories; HuntError (exit 2) for one that is not a hunt's."""
    acc = Account([str(d) for d in hunt_dirs])
    for d in hunt_dirs:
        doc = read_progress(d)
        acc.minutes += doc["wall_s"] / 60
        acc.errors += doc["errors"]
        acc.findings += doc["findings"]
        for run_dir in sorted((d / "runs").iterdir()) if (d / "runs").is_dir() else []:
            if INVESTIGATION.search(run_dir.name):
                acc.investigations += 1
            elif (r := drawn(run_dir)) is not None:
                acc.runs.append(r)
            elif did_not_form(run_dir):
                acc.unformed.append(run_dir.name)
    return acc


def _counts(c: Counter) -> str:
    return ", ".join(f"{k} {n}" for k, n in c.most_common()) or "none"


def _finding(f: dict) -> str:
    """A hunt finding as the table's cell shows it: its signature (its ``|`` escaped, so the row keeps
    its columns), its re-runs, and the known issue the run's own logs named, if any."""
    signature = f.get("signature", "?").replace("|", "\\|")
    again = f.get("reproduced", {})
    known = f": known: {f['known']}, shown by its log" if f.get("known") else ""
    return f"{signature} ({again.get('k')}/{again.get('n')}){known}"


def markdown(acc: Account, ground: str) -> str:
    """The campaign's entry: a table row, then what it drew, reached and broke."""
    lines = " / ".join(sorted(acc.by("line")))
    clients = ", ".join(sorted(acc.by("client")))
    broken = acc.anomalies(broke=True)
    found = "; ".join(_finding(f) for f in acc.findings) or "none"
    exposed = [r.exposed for r in acc.runs]
    return "\n".join([
        "| ground | Kafka | clients | drawn runs | minutes | broken promises (runs) | findings |",
        "|---|---|---|---|---|---|---|",
        f"| {ground} | {lines} | {clients} | {len(acc.runs)} | {acc.minutes:.0f} | {_counts(broken)} | {found} |",
        "",
        f"- hunts: {', '.join(acc.hunts)}; runs that could not run: {acc.errors}; runs that confirmed, shrank or "
        f"measured findings (not counted here): {acc.investigations}",
        f"- verdicts: {_counts(acc.by('verdict'))}",
        f"- runs per client: {_counts(acc.by('client'))}",
        f"- faults drawn: {_counts(acc.kinds())}; {sum(r.triggered for r in acc.runs)} of "
        f"{sum(len(r.kinds) for r in acc.runs)} fired on the protocol's events",
        f"- protocol states reached (runs): {_counts(acc.states())}",
        f"- exposure: {sum(1 for x in exposed if x)} of {len(exposed)} runs put acknowledged records at risk "
        f"({sum(exposed)} in all)",
        f"- anomalies that broke no promise (runs): {_counts(acc.anomalies(broke=False))}",
        *_formation_line(acc),
    ])


def _formation_line(acc: Account) -> list[str]:
    """The runs whose cluster's first quorum leader was faulted while it formed, where the campaign drew any."""
    formed = acc.by("formation")
    formed.pop("", None)
    if not formed and not acc.unformed:
        return []
    return [f"- formation faults (runs): {_counts(formed)} formed; {len(acc.unformed)} did not form"
            + (f" ({', '.join(acc.unformed)})" if acc.unformed else "")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.hunt.campaign", description=__doc__.splitlines()[0])
    ap.add_argument("hunts", nargs="+", type=Path, help="hunt directories (kchaos hunt --out)")
    ap.add_argument("--ground", default="", help="the ground's name for the table row")
    a = ap.parse_args(argv)
    try:
        print(markdown(account(a.hunts), a.ground or ", ".join(d.name for d in a.hunts)))
    except HuntError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
