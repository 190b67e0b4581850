"""A finding written for someone else: ``minimal.toml`` (a scenario ``kchaos run`` runs as it is) and
``bug.md`` (ready for an upstream tracker: what broke, on what, the steps, expected against observed,
how often, how to run it again)."""

from __future__ import annotations

import json
from pathlib import Path

import tomli_w

from harness.checker.anomaly import BY_NAME
from harness.checker.verdict import NOT_HEALED, KnownIssue, Verdict
from harness.faults import FAULTS
from harness.history import ClientLibrary, read_run_config
from harness.hunt.evidence import evidence
from harness.hunt.goal import Hit
from harness.scenario import FaultSpec, Scenario

KEEP_ALWAYS = ("name", "description", "kafka_version", "mode", "seed", "duration_s")


def scenario_toml(s: Scenario) -> str:
    """``s`` as a scenario file: what differs from the defaults, and what a reader needs to see anyway."""
    full = s.model_dump(mode="json")
    data = s.model_dump(mode="json", exclude_defaults=True, exclude={"hunt", "generator"})
    data = {**{k: full[k] for k in KEEP_ALWAYS}, **data}
    return tomli_w.dumps(_no_nulls(data))


def _no_nulls(x):
    """TOML has no null: a key whose value is None is left out (its default)."""
    if isinstance(x, dict):
        return {k: _no_nulls(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_no_nulls(v) for v in x]
    return x


def fault_in_words(i: int, f: FaultSpec) -> str:
    """One fault of a schedule, as a step a person follows."""
    kind = FAULTS[f.kind]
    where = f"{f.target}" + (f" (of partition {f.partition})" if f.target.of_partition else "")
    what = f"**{f.kind}** on {where}" + (f", {f.stream} only" if f.stream != "both" else "")
    if "latency_ms" in kind.takes:
        what += f", {f.latency_ms} ms +- {f.jitter_ms} ms"
    when = f"at {f.at_s:g} s" if f.on is None else f"after {f.at_s:g} s, on {f.on.trigger()}"
    return f"{i}. {when}: {what} for {f.duration_s:g} s ({kind.help})"


def configuration_in_words(s: Scenario) -> list[str]:
    t = s.topic
    lines = [f"- topic `{t.name}`: {t.partitions} partition{'s' if t.partitions != 1 else ''}, replication factor "
             f"{t.replication_factor}, "
             f"min.insync.replicas {t.min_insync_replicas}, unclean leader election "
             f"{'on' if t.unclean_leader_election else 'off'}"]
    for p in s.producers:
        extra = f", config {p.config}" if p.config else ""
        lines.append(f"- producer `{p.name}` x{p.count}: acks={p.acks}, idempotence={p.idempotence}, "
                     f"transactional={p.transactional}, {p.rate:g} records/s{extra}")
    for g in s.groups:
        lines.append(f"- group `{g.name}`: {g.members} members, {json.dumps(g.settings())}")
    if s.copier is not None:
        lines.append(f"- copier: {json.dumps(s.copier.model_dump(mode='json'))}")
    if s.broker_config:
        lines.append(f"- broker config: {s.broker_config}")
    return lines


def _client(client: ClientLibrary | None) -> str:
    """A client library as a report names it: ``java kafka-clients 3.9.1``, ``librdkafka 2.16.0`` (whose
    version already names it)."""
    if client is None:
        return "?"
    return client.version if client.version.startswith(client.name) else f"{client.name} {client.version}".strip()


def _definition(anomaly: str) -> str:
    if anomaly == NOT_HEALED:
        return ("a partition whose ISR is not whole again when the run's wait after healing every fault gives up "
                "(its isr_not_restored event: the partition as the cluster answered then)")
    return "(kchaos's history contract) " + " ".join(BY_NAME[anomaly].definition.split())


def _count(anomaly: str, verdict: Verdict) -> int:
    """How many of ``anomaly`` the run shown counted (not the run the finding was first seen in)."""
    return len(verdict.not_healed) if anomaly == NOT_HEALED else verdict.anomalies.get(anomaly, 0)


def _known_line(i: KnownIssue) -> str:
    """One known issue as the write-up lists it: shown by the run's own logs, not shown (so the
    anomaly is unexplained), or named by configuration alone."""
    what = f"- {i.issue} ({', '.join(i.anomalies)}): {i.why}"
    if i.shown is True:
        return f"{what}. Shown by the run's logs: `{i.evidence}`"
    if i.shown is False:
        return f"{what}. **Not shown**: {i.evidence}; the anomaly is unexplained"
    return f"{what}. Named by configuration: no log line shows this mechanism"


def _observed(hit: Hit, verdict: Verdict) -> list[str]:
    if hit.anomaly == NOT_HEALED:
        return [x.describe() for x in verdict.not_healed[:10]]
    return [json.dumps(e, default=str) for e in verdict.examples.get(hit.anomaly, [])[:10]]


def bug_md(finding: dict, hit: Hit, minimal: Scenario, run_dir: Path, verdict: Verdict) -> str:
    """The report of one finding. ``run_dir``/``verdict``: a run of the minimal schedule that shows it."""
    run = read_run_config(run_dir)
    client = run.client
    k, n = finding["reproduced"]["k"], finding["reproduced"]["n"]
    kinds = sorted({f.kind for f in minimal.faults})
    title = (f"{hit.anomaly.replace('_', ' ')} under {', '.join(kinds) or 'no fault'}: {hit.where} on Kafka "
             f"{run.kafka_version} ({run.mode}), {_client(client)}").strip()
    out = [f"# {title}", ""]
    if k == 0:
        out += [f"> Not reproduced: none of {n} re-runs on a clean cluster showed it again; it showed once, in "
                f"`{finding['found_in']}`. Report it only once it reproduces.", ""]
    if not hit.promised:
        out += [f"> Not a bug report: this configuration does not promise to prevent {hit.anomaly} ({hit.why}). "
                "The hunt was asked for this anomaly class (`--anomaly`).", ""]
    out += [
        "| | |", "|---|---|",
        f"| Kafka | {run.kafka_version} ({run.mode}), {run.brokers} brokers, "
        f"image `{run.images.get('kafka')}` |",
        f"| Client | {', '.join(_client(c) for c in run.libraries()) or '?'} |",
        f"| Feature levels | {run.features or 'none (ZooKeeper mode or no features)'} |",
        f"| Eligible leader replicas | {run.eligible_leader_replicas} |",
        f"| Reproduced | {k} of {n} runs of the minimal schedule "
        f"(the schedule as found: {finding['confirmed']['k']} of {finding['confirmed']['n']} re-runs) |",
        f"| Known | {finding['known'] or 'not known to kchaos'} |",
        f"| Signature | `{finding['signature']}` |", "",
        "## Configuration", "", *configuration_in_words(minimal), "",
        "## The promise", "",
        f"{'Promised' if hit.promised else 'Not promised'}: {hit.why}.", "",
        f"Definition of **{hit.anomaly}**: {_definition(hit.anomaly)}", "",
        "## Steps", "",
        f"A workload of {minimal.duration_s:g} s (seed {minimal.seed}) writes to the topic above and reads it back; "
        "meanwhile:", "",
        *([fault_in_words(i + 1, f) for i, f in enumerate(minimal.faults)] or ["(no fault)"]), "",
        "Then every fault is healed, every partition is read from offset 0, and every replica's log is read from "
        "its broker's files.", "",
        "## Expected", "", f"{hit.anomaly}: 0" + (f" ({hit.why})" if hit.promised else ""), "",
        "## Observed", "",
        f"{hit.anomaly}: {_count(hit.anomaly, verdict)} in the run `{run_dir.name}` (`minimal/` beside this file); "
        "its first "
        "records:", "", "```", *_observed(hit, verdict), "```", "",
    ]
    out += evidence(hit.anomaly, run_dir, verdict)
    if verdict.known_issues:
        out += ["Known issues in this configuration:", "", *[_known_line(i) for i in verdict.known_issues], ""]
    out += ["## Run it again", "", "```", f"kchaos run {finding['dir']}/minimal.toml", "```", "",
            "The brokers' and clients' own logs are in `minimal/logs/` and `original/logs/`; `report.html` "
            "shows both runs' timelines.", ""]
    return "\n".join(out)
