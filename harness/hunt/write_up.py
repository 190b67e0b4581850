"""A finding written for someone else: ``minimal.toml`` (a scenario ``kchaos run`` runs as it is) and
``bug.md``, in the upstream tracker's language: a title in the project's terms, the environment with
every setting that is not the project's default, the documented guarantee it breaks quoted with its
source, the steps as a timeline, expected against observed, where it was measured, how often (with
an interval), the root cause only where the run's own logs show a known mechanism, the impact, and
how to run it again. What is inferred says so."""

from __future__ import annotations

import json
from pathlib import Path

import tomli_w

from harness.checker.anomaly import BY_NAME
from harness.checker.verdict import NOT_HEALED, KnownIssue, Verdict
from harness.faults import FAULTS
from harness.history import ClientLibrary, RunConfig, read_run_config
from harness.hunt import affected, environment, timeline
from harness.hunt.evidence import evidence
from harness.hunt.goal import Hit
from harness.hunt.guarantees import guarantee
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
    anomaly is unexplained), or consistent with the configuration alone (unexplained too)."""
    what = f"- {i.issue} ({', '.join(i.anomalies)}): {i.why}"
    if i.shown is True:
        return f"{what}. Shown by the run's logs: `{i.evidence}`"
    if i.shown is False:
        return f"{what}. **Not shown**: {i.evidence}; the anomaly is unexplained"
    return f"{what}. Consistent with the configuration only: no log line shows this mechanism, so the anomaly is " \
        "unexplained"


def _observed(hit: Hit, verdict: Verdict) -> list[str]:
    if hit.anomaly == NOT_HEALED:
        return [x.describe() for x in verdict.not_healed[:10]]
    return [json.dumps(e, default=str) for e in verdict.examples.get(hit.anomaly, [])[:10]]


def title(hit: Hit, minimal: Scenario, run: RunConfig) -> str:
    """The finding as a tracker's title: what broke, in the project's words, under which fault, on what."""
    faults = _faults_in_words(minimal)
    return (f"{guarantee(hit.anomaly).title}{' after ' + faults if faults else ''} "
            f"({_client(run.client)}, Kafka {run.kafka_version} {'KRaft' if run.mode == 'kraft' else 'ZooKeeper'} "
            "mode)")


# A fault kind as a tracker's title says it.
FAULT_WORDS = {
    "kill": "a broker is killed (SIGKILL)", "power_loss": "a broker loses power (unflushed writes lost)",
    "pause": "a broker's JVM is paused", "restart": "a broker restarts cleanly", "isolate": "a broker is isolated",
    "cut_replication": "a broker's replication links are cut", "cut_fetch": "a follower's fetches are cut",
    "cut_coordination": "a broker loses ZooKeeper or the controllers", "cut_client": "clients lose a broker",
    "client_cut": "a client's connections are cut", "client_pause": "a client's connections are held",
    "client_restart": "a group member restarts", "client_kill": "a client is killed",
}


def _faults_in_words(s: Scenario) -> str:
    """The schedule's fault kinds as a tracker says them, each once, in schedule order."""
    return ", ".join(dict.fromkeys(FAULT_WORDS.get(f.kind, f.kind.replace("_", " ")) for f in s.faults))


def _settings_table(settings: list[environment.Setting]) -> list[str]:
    rows = ["| setting | value | project default | set by |", "|---|---|---|---|"]
    for x in settings:
        rows.append(f"| `{x.key}` | `{x.value}` | {f'`{x.default}`' if x.default else '-'} | "
                    f"{x.why or 'the scenario'} |")
    return rows


def _environment(run: RunConfig, minimal: Scenario) -> list[str]:
    libraries = run.libraries()
    rows = [("Kafka", f"{run.kafka_version}, {'KRaft' if run.mode == 'kraft' else 'ZooKeeper'} mode, {run.brokers} "
                      f"brokers; Apache Kafka's own jars from Maven Central (image `{run.images.get('kafka')}`)"),
            ("Client", ", ".join(_client(c) for c in libraries) or "?"),
            ("Feature levels", str(run.features or "none (ZooKeeper mode or no features)")),
            ("Eligible leader replicas", str(run.eligible_leader_replicas))]
    rows += [r for r in environment.machine() if r[0] != "Python binding"
             or any(c.name == "librdkafka" for c in libraries)]
    out = ["| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows], "",
           "Broker settings (every broker's server.properties but addresses, ids and paths; the project's "
           "default where it differs):", "", *_settings_table(environment.broker_settings(run)), "",
           "Topic:", "", *_settings_table(environment.topic_settings(minimal)), "", "Clients (beyond the "
           "library's defaults):", ""]
    for table, props in environment.client_settings(minimal):
        out.append(f"- {table}: " + ", ".join(f"`{k}={v}`" for k, v in props.items()))
    return [*out, ""]


def _guarantee(hit: Hit) -> list[str]:
    g = guarantee(hit.anomaly)
    out = []
    if g.quote:
        out += [f"> {g.quote}", "", f"({g.source})", ""]
    if g.inferred:
        out += [f"Inferred, not documented: {g.inferred}.", ""]
    out += [f"kchaos's promise for this configuration: {'promised' if hit.promised else 'not promised'}, "
            f"{hit.why}. Definition of **{hit.anomaly}**: {_definition(hit.anomaly)}", ""]
    return out


def _affected(run: RunConfig) -> list[str]:
    """Where the hunt measured it; `kchaos affected` replaces this section with its table."""
    return [f"Measured on Kafka {run.kafka_version} ({run.mode}) with {_client(run.client)} only: no other "
            "version or client has been run on this schedule yet (`kchaos affected FINDING_DIR` runs them).", ""]


def _root_cause(verdict: Verdict, logs_shown: bool) -> list[str]:
    shown = [i for i in verdict.known_issues if i.explains]
    if shown:
        return [*[_known_line(i) for i in shown], ""]
    out = ["Unexplained: no known mechanism is shown by this run's logs." + (
        " Below, what the brokers' and clients' own logs show around it; what it means is for the maintainers "
        "to say." if logs_shown else " The brokers' and clients' own logs are attached (`minimal/logs/`)."), ""]
    others = [i for i in verdict.known_issues if not i.explains]
    if others:
        out += ["Known issues of this configuration, their mechanism not shown:", "",
                *[_known_line(i) for i in others], ""]
    return out


def _shrunk_how(test: dict | None) -> list[str]:
    """How the minimal schedule was found: the sequential test that judged each smaller candidate."""
    if not test:
        return []
    return [f"Shrunk by judging each smaller schedule with a {test['test']} test: kept once its runs made "
            f"showing the anomaly at the confirmed rate (p1 = {test['p1']:.2f}) more likely than at p0 = "
            f"{test['p0']:.3f} by the test's bounds (a candidate without the bug kept at most about "
            f"{test['alpha']:.0%} of the time, one with it dropped at most about {test['beta']:.0%}; at most "
            f"{test['max_runs']} runs each, undecided dropped). {test['candidates']} candidates in "
            f"{test['runs']} runs: {test['kept']} kept, {test['dropped_undecided']} dropped undecided.", ""]


def bug_md(finding: dict, hit: Hit, minimal: Scenario, run_dir: Path, verdict: Verdict) -> str:
    """The report of one finding, in the tracker's language: a title in the project's terms, the
    environment with every non-default setting, the documented guarantee quoted with its source, a
    timeline with timestamps, expected against observed, affected versions, the rate with its
    interval, the root cause where the logs show one (else "unexplained"), the impact, and how to
    run it again. ``run_dir``/``verdict``: a run of the minimal schedule that shows it."""
    run = read_run_config(run_dir)
    k, n = finding["reproduced"]["k"], finding["reproduced"]["n"]
    lo, hi = affected.wilson(k, n)
    logs = evidence(hit.anomaly, run_dir, verdict)
    impact = guarantee(hit.anomaly).impact
    out = [f"# {title(hit, minimal, run)}", ""]
    if k == 0:
        unfired = finding["confirmed"].get("unfired", 0)
        out += [f"> Not reproduced: none of {n} re-runs on a clean cluster showed it again"
                + (f" ({unfired} of them with a fault of the schedule that never acted)" if unfired else "")
                + f"; it showed once, in `{finding['found_in']}`. Report it only once it reproduces.", ""]
    if not hit.promised:
        out += [f"> Not a bug report: this configuration does not promise to prevent {hit.anomaly} ({hit.why}). "
                "The hunt was asked for this anomaly class (`--anomaly`).", ""]
    out += [
        "## Summary", "",
        f"{guarantee(hit.anomaly).title}: {_count(hit.anomaly, verdict)} ({hit.anomaly}) for `{hit.where}` in a "
        f"{minimal.duration_s:g} s workload while {_faults_in_words(minimal) or 'no fault ran'}. "
        f"Reproduced in {k} of {n} runs of the minimal schedule (95% interval {lo:.0%}-{hi:.0%}; the schedule as "
        f"found: {finding['confirmed']['k']} of {finding['confirmed']['n']} re-runs). "
        f"Known: {finding['known'] or 'not known to kchaos'}. Signature `{finding['signature']}`.", "",
        *_shrunk_how(finding.get("shrink_test")),
        "## Environment", "", *_environment(run, minimal),
        "## The guarantee", "", *_guarantee(hit),
        "## Steps", "",
        f"A workload of {minimal.duration_s:g} s (seed {minimal.seed}) writes to the topic above and reads it back; "
        "the faults, as scheduled:", "",
        *([fault_in_words(i + 1, f) for i, f in enumerate(minimal.faults)] or ["(no fault)"]), "",
        f"As they happened in `{run_dir.name}` (kchaos's events; the cluster's lines are its metadata as "
        "kchaos polled it, every 0.2-0.3 s):", "", *(timeline.steps(run_dir) or ["(no events recorded)"]), "",
        "## Expected", "", f"{hit.anomaly}: 0" + (f" ({hit.why})" if hit.promised else ""), "",
        "## Observed", "",
        f"{hit.anomaly}: {_count(hit.anomaly, verdict)} in the run `{run_dir.name}` (`minimal/` beside this file); "
        "its first records:", "", "```", *_observed(hit, verdict), "```", "",
        "## Affected versions", "", *_affected(run),
        "## Root cause", "", *_root_cause(verdict, bool(logs)), *logs,
        "## Proposed fix", "",
        "None proposed: kchaos does not propose a fix before a person has confirmed the root cause in the "
        "project's source.", "",
        "## Impact", "", f"{impact[:1].upper()}{impact[1:]}.", "",
        "## Run it again", "",
        "With kchaos (it builds the same images and cluster, applies the same faults, and checks the result):", "",
        "```", f"kchaos run {finding['dir']}/minimal.toml", "```", "",
        "Without kchaos: not generated for this finding; docs/findings.md says which findings have a standalone "
        "reproducer (Docker and the client library alone). The brokers' and clients' own logs are in "
        "`minimal/logs/` and `original/logs/`; `report.html` shows both runs' timelines.", "",
    ]
    return "\n".join(out)
