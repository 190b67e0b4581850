"""Which Kafka versions and client libraries a finding affects, measured: its minimal schedule run
``runs`` times on every version of the finding's line and the newest patch of each later line, with
every client library that runs its workload, as one matrix (run/matrix.py) under the finding's
directory. Each row is the share of runs that showed the finding's anomaly where the configuration
promises it never shows (or, for a finding hunted with ``--anomaly``, at all), with its 95%
interval. ``kchaos affected FINDING_DIR`` writes ``affected.json`` and the table into bug.md.

A version without the finding's mode runs in its own (a ZooKeeper-mode finding on Kafka 4, which
has no ZooKeeper mode, is a KRaft row, said so); a library that cannot run the workload is a row
that says why, not a silence.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness.checker.verdict import NOT_HEALED, Verdict
from harness.clients.registry import LIBRARIES
from harness.history import read_run_config, write_json_atomic
from harness.run import matrix
from harness.scenario import Scenario, ScenarioError, load
from harness.versions import KAFKA_VERSIONS, version_key

AFFECTED_JSON = "affected.json"
FINDING_JSON = "finding.json"
SECTION = "## Affected versions"


@dataclass(frozen=True)
class Row:
    """One version, mode and client: ``k`` of ``n`` runs showed the finding (``note``: why not run,
    or what differs from the finding's own cell)."""

    kafka: str
    mode: str
    client: str
    n: int
    k: int
    note: str = ""
    library: str = ""  # the library it was planned with (``client`` is as the runs named it)


class FindingError(ValueError):
    """The directory is not a finding kchaos can measure (bad input: names the file and key)."""


def read_finding(finding_dir: Path) -> dict:
    """finding.json of ``finding_dir`` (the hunt writes it beside minimal.toml), checked for what
    measuring needs: the anomaly and whether it was promised."""
    path = finding_dir / FINDING_JSON
    if not (finding_dir / "minimal.toml").exists():
        raise FindingError(f"{finding_dir / 'minimal.toml'}: missing (a finding directory of `kchaos hunt` holds "
                           "minimal.toml, finding.json, bug.md)")
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise FindingError(f"{path}: {e}") from e
    for key in ("anomaly", "promised"):
        if key not in doc:
            raise FindingError(f"{path}: {key}: missing (allowed: what `kchaos hunt` writes)")
    return doc


def versions_to_try(version: str) -> list[str]:
    """Every version kchaos has of ``version``'s line (major.minor), then the newest patch of each
    later line, oldest first."""
    line = version.rsplit(".", 1)[0]
    lines: dict[str, str] = {}
    for v in sorted(KAFKA_VERSIONS, key=version_key):
        lines[v.rsplit(".", 1)[0]] = v  # the newest of each line, as the sort goes
    same = [v for v in sorted(KAFKA_VERSIONS, key=version_key) if v.rsplit(".", 1)[0] == line]
    later = [v for ln, v in lines.items() if version_key(ln + ".0") > version_key(line + ".0")]
    return same + later


def mode_on(version: str, mode: str) -> tuple[str, str]:
    """The mode the finding runs in on ``version``: its own where the version has it, else the
    version's first, with a note saying so."""
    modes = KAFKA_VERSIONS[version]
    if mode in modes:
        return mode, ""
    return modes[0], f"{mode} mode does not exist on {version}: run in {modes[0]}"


def _without_client_config(s: Scenario) -> list[str]:
    """``--set`` overrides that empty every client table's ``config`` (properties of one library,
    such as librdkafka's ``debug``, that another library refuses)."""
    sets = [f"producers.{i}.config={{}}" for i, p in enumerate(s.producers) if p.config]
    sets += [f"groups.{i}.config={{}}" for i, g in enumerate(s.groups) if g.config]
    return sets + (["consumers.config={}"] if s.consumers.config else [])


def plan(finding_dir: Path, mode: str, versions: list[str], clients: list[str],
         runs: int) -> tuple[matrix.Plan, list[Row], dict[tuple[str, str], str]]:
    """The cells to run; a row for each version and client that cannot run the workload; and a note
    for each version and client run otherwise than the finding was (another mode, or without the
    tables' library-specific config, which another library refuses)."""
    path = finding_dir / "minimal.toml"
    bare = _without_client_config(load(path))
    out, refused, notes = matrix.Plan(), [], {}
    for v in versions:
        m, mode_note = mode_on(v, mode)
        for client in clients:
            note, seeds = mode_note, list(range(1, runs + 1))
            try:
                p = matrix.plan([f"{path}@{v}:{m}"], None, None, None, seeds, None, [client])
            except ScenarioError as e:
                try:  # a property of the finding's library that this one does not take
                    p = matrix.plan([f"{path}@{v}:{m}"], None, None, None, seeds, bare, [client]) if bare else None
                except ScenarioError:
                    p = None
                if p is None:
                    refused.append(Row(v, m, client, 0, 0, f"not run: {str(e).splitlines()[0][:200]}", client))
                    continue
                note = "; ".join(x for x in (note, "the client tables' `config` left out (another library's "
                                                    "properties)") if x)
            out.cells += p.cells
            if note:
                notes[(v, client)] = note
    return out, refused, notes


def showed(v: Verdict, anomaly: str, promised: bool) -> bool:
    """Whether a run's verdict shows the finding: its anomaly counted where a configuration promises
    it never shows (any count, for a finding that was not promised)."""
    if anomaly == NOT_HEALED:
        return bool(v.not_healed)
    if promised:
        return any(a == anomaly for _, a, _ in v.broken())
    return v.anomalies.get(anomaly, 0) > 0


def _with_library_version(row: Row, finished: list[Path]) -> Row:
    """``row`` with its client named as the runs recorded it (``librdkafka 2.16.0``, ``kafka-clients
    3.9.1``), from the run.json of one of its runs; as planned when none says."""
    for d in finished:
        if f"-{row.kafka}-{row.mode}-{row.client}" in d.name and (d / "run.json").exists():
            client = read_run_config(d).client
            if client is not None and client.version:
                return replace(row, client=client.version)
    return row


def rows(p: matrix.Plan, verdicts: dict[str, Verdict], finding: dict,
         notes: dict[tuple[str, str], str]) -> list[Row]:
    """k of n per version and client, from each cell's verdict (a cell that did not finish is not
    counted in n)."""
    counts: dict[tuple[str, str, str], list[int]] = {}
    for cell, *_ in p.cells:
        kn = counts.setdefault((cell.kafka_version, cell.mode, cell.client or "?"), [0, 0])
        v = verdicts.get(cell.run_id)
        if v is not None:
            kn[1] += 1
            kn[0] += showed(v, finding["anomaly"], bool(finding["promised"]))
    return [Row(version, m, client, n, k, notes.get((version, client), ""), client)
            for (version, m, client), (k, n) in counts.items()]


@dataclass
class Measurement:
    """What ``kchaos affected`` will run, checked before any container starts."""

    finding_dir: Path
    finding: dict
    plan: matrix.Plan
    refused: list[Row]
    notes: dict[tuple[str, str], str]

    @property
    def versions(self) -> list[str]:
        return list(dict.fromkeys(cell.kafka_version for cell, *_ in self.plan.cells))


def prepare(finding_dir: Path, versions: list[str] | None, clients: list[str] | None, runs: int) -> Measurement:
    """The cells of a measurement; FindingError or ScenarioError (bad input) before anything runs."""
    finding = read_finding(finding_dir)
    s = load(finding_dir / "minimal.toml")
    for v in versions or []:
        if v not in KAFKA_VERSIONS:
            raise FindingError(f"--versions: {v!r} has no image recipe (allowed: {', '.join(KAFKA_VERSIONS)})")
    for c in clients or []:
        if c not in LIBRARIES:
            raise FindingError(f"--clients: {c!r} has no driver (allowed: {', '.join(sorted(LIBRARIES))})")
    p, refused, notes = plan(finding_dir, s.mode, versions or versions_to_try(s.kafka_version),
                             clients or sorted(LIBRARIES), runs)
    return Measurement(finding_dir, finding, p, refused, notes)


def measure(m: Measurement, announce: matrix.Announce, side_by_side: int = 1,
            spark_master: str | None = None) -> list[Row]:
    """Run every cell of ``m`` under ``FINDING_DIR/affected`` (a measurement stopped halfway resumes
    there), check each run, and write affected.json and bug.md's table. Every run boots a cluster of
    its own: the rate's interval assumes independent runs, which runs on a kept cluster, sharing its
    controller and ZooKeeper sessions, need not be."""
    out = m.finding_dir / "affected"
    finished = matrix.run_cells(m.plan, out, announce, fresh=True, side_by_side=side_by_side,
                                check=matrix.check(spark_master))
    res = matrix.check_and_report(finished, out, spark_master)
    verdicts = {Path(d).name: v for d, v in zip(finished, res.verdicts, strict=True)}
    measured = [_with_library_version(r, finished) for r in rows(m.plan, verdicts, m.finding, m.notes)] + m.refused
    write(m.finding_dir, earlier_rows(m.finding_dir, measured) + measured)
    return measured


def _library_of(row: dict) -> str:
    """The library a stored row was planned with: its own field, else read from its client as the
    runs named it (``kafka-clients 3.9.1`` is the java driver's)."""
    if row.get("library"):
        return row["library"]
    word = row["client"].split()[0]
    return "java" if word == "kafka-clients" else word


def earlier_rows(finding_dir: Path, measured: list[Row]) -> list[Row]:
    """The rows of affected.json that this measurement did not measure again (another version or
    library): measurements of one finding add up, a version measured again replaces its row."""
    path = finding_dir / AFFECTED_JSON
    if not path.exists():
        return []
    now = {(r.kafka, r.library) for r in measured}
    stored = [{**row, "library": _library_of(row)} for row in json.loads(path.read_text()).get("rows", [])]
    return [Row(**row) for row in stored if (row["kafka"], row["library"]) not in now]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a rate of ``k`` in ``n``: honest at 0 of n and n of n, where
    the plain k/n interval collapses to a point."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def markdown(measured: list[Row]) -> list[str]:
    """The affected/unaffected table, as bug.md shows it."""
    out = ["| Kafka | mode | client | runs | showed it | rate (95% interval) | |", "|---|---|---|---|---|---|---|"]
    for r in sorted(measured, key=lambda r: (version_key(r.kafka), r.client)):
        if r.n == 0:
            out.append(f"| {r.kafka} | {r.mode} | {r.client} | 0 | - | - | {r.note} |")
            continue
        lo, hi = wilson(r.k, r.n)
        verdict = "affected" if r.k else "not seen"
        out.append(f"| {r.kafka} | {r.mode} | {r.client} | {r.n} | {r.k} | {r.k / r.n:.0%} ({lo:.0%}-{hi:.0%}) | "
                   f"{verdict}{'; ' + r.note if r.note else ''} |")
    return out


def write(finding_dir: Path, measured: list[Row]) -> None:
    """affected.json, and bug.md's "Affected versions" section replaced by the measured table."""
    write_json_atomic(finding_dir / AFFECTED_JSON, {"rows": [asdict(r) for r in measured]})
    bug = finding_dir / "bug.md"
    if not bug.exists():
        return
    table = "\n".join([SECTION, "", "The minimal schedule on each version and client (`kchaos affected`; \"not "
                       "seen\" is not \"not affected\": the interval says how much a rate of 0 rules out):", "",
                       *markdown(measured), "", ""])
    text = bug.read_text()
    new = re.sub(rf"{re.escape(SECTION)}\n.*?(?=\n## )", table.rstrip("\n") + "\n", text, count=1, flags=re.S)
    tmp = bug.with_name(bug.name + ".partial")
    tmp.write_text(new)
    tmp.replace(bug)
