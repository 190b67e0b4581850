"""From the analysis's findings and run.json to a Verdict: counts, examples, promises, unavailability."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness.checker.analysis import JobResult
from harness.checker.anomaly import ANOMALIES, GROUP_ANOMALIES, PRODUCER_ANOMALIES
from harness.checker.capabilities import not_judged
from harness.checker.clients_logged import epoch_bumps, group_commits
from harness.checker.coordination import failovers, quorum_spans
from harness.checker.coverage import Logged, coverage
from harness.checker.elections_logged import ControllerAccount, controller_account
from harness.checker.excuses import (
    Config,
    Promise,
    client_label,
    offsets_reset_by_hand,
    topics_recreated,
    transactions_aborted_by_hand,
    weakest_during,
)
from harness.checker.known_issues import known_issues
from harness.checker.measures import BUCKET_MS
from harness.checker.promises import group_promises, promises
from harness.checker.replicas_logged import broker_lines, logged_leaderships, logged_truncations
from harness.checker.verdict import (
    NOT_HEALED,
    BrokenOutside,
    ConfigVerdict,
    Coordination,
    Elections,
    FaultExposure,
    GroupVerdict,
    NotHealed,
    PromiseOutcome,
    Reported,
    Unavailability,
    Verdict,
)
from harness.faults import FAULTS
from harness.history import ProducerConfig, RunConfig, RunDir, read_events
from harness.history.events import Event, Fault, FaultSkipped, IsrNotRestored, Note, State, ToolFailed, TriggerUnfired
from harness.versions import leader_epochs_on


@dataclass
class RunConfigs:
    topics: dict[str, Config]
    producers: dict[str, Config]
    producer_topic: dict[str, str]
    notes: list[str]
    offsets_moved: dict[str, frozenset[str]] = field(default_factory=dict)  # group -> an operator's resets


def _bool(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes", "on")


def eligible_leader_replicas(run: RunConfig) -> bool:
    """Whether the cluster ran with ELR: its own finalized feature level when run.json read one, else
    what the run asked for."""
    level = run.features.get("eligible.leader.replicas.version")
    return level >= 1 if level is not None else bool(run.eligible_leader_replicas)


def fault_kinds(run: RunConfig, events: list[Event]) -> frozenset[str]:
    kinds = {f.kind for f in run.faults if f.kind}
    kinds |= {e.kind for e in events if isinstance(e, Fault) and e.kind}
    return frozenset(kinds)


def kinds_on_several_brokers(events: list[Event]) -> frozenset[str]:
    """The fault kinds that hit two or more distinct brokers over the run (a healed fault's brokers)."""
    hit: dict[str, set[int]] = {}
    for e in events:
        if isinstance(e, Fault) and e.kind:
            hit.setdefault(e.kind, set()).update(e.brokers)
    return frozenset(k for k, brokers in hit.items() if len(brokers) > 1)


def brokers_shut_down_uncleanly(events: list[Event]) -> int:
    """How many distinct brokers a fault that ends the broker's process uncleanly hit over the run."""
    return len({b for e in events if isinstance(e, Fault) and e.kind in FAULTS and FAULTS[e.kind].unclean_shutdown
                for b in e.brokers})


def resolve_configs(run: RunConfig, producers_seen: dict[str, dict[str, list[str]]],
                    events: list[Event]) -> RunConfigs:
    """The Config of every topic and producer, from run.json, with stated assumptions where it is silent."""
    notes: list[str] = []
    version = run.kafka_version or ""
    broker_cfg = run.broker_config
    epochs = run.leader_epochs if run.leader_epochs is not None else leader_epochs_on(version, broker_cfg)
    elr = eligible_leader_replicas(run)
    faults = fault_kinds(run, events)
    several = kinds_on_several_brokers(events)
    unclean = brokers_shut_down_uncleanly(events)
    recreated = topics_recreated(events)

    topics_declared = run.topics if run.topics is not None else [run.topic] if run.topic is not None else []
    topics: dict[str, Config] = {}
    for t in topics_declared:
        cfg = t.config
        topics[t.name] = weakest_during(run, Config(
            acks="all",
            min_insync=int(cfg.get("min.insync.replicas", broker_cfg.get("min.insync.replicas", 1))),
            replication_factor=t.replication_factor if t.replication_factor is not None else 3,
            unclean_election=_bool(cfg.get("unclean.leader.election.enable",
                                           broker_cfg.get("unclean.leader.election.enable", False))),
            leader_epochs=epochs,
            eligible_leader_replicas=elr,
            faults=faults,
            on_several=several,
            unclean_shutdowns=unclean,
            topic_recreated=t.name in recreated,
        ), t.name)
    # A topic run.json does not list takes the brokers' settings, as Kafka gives it (Kafka's defaults
    # where broker_config names none).
    default_topic = weakest_during(run, Config(
        min_insync=int(broker_cfg.get("min.insync.replicas", 1)),
        unclean_election=_bool(broker_cfg.get("unclean.leader.election.enable", False)),
        leader_epochs=epochs, eligible_leader_replicas=elr, faults=faults, on_several=several,
        unclean_shutdowns=unclean))
    if not topics:
        notes.append(f"run.json names no topics: assumed the brokers' settings (min.insync.replicas="
                     f"{default_topic.min_insync}, unclean "
                     f"{'on' if default_topic.unclean_election else 'off'}; Kafka's defaults where broker_config "
                     "names none)")

    declared = {p.name: p for p in run.producers}
    copier_producers = {c.producer for c in run.copiers}
    aborted = transactions_aborted_by_hand(events)
    producers: dict[str, Config] = {}
    producer_topic: dict[str, str] = {}
    for name, seen in producers_seen.items():
        d = declared.get(name, ProducerConfig(name=name))
        topic = d.topic or sorted(seen["topics"])[0]
        if name not in declared:
            notes.append(f"producer {name} is not in run.json: assumed not idempotent, acks as recorded")
        # The weakest acks level the producer actually used decides what it was promised.
        acks = d.acks or min(seen["acks"], key=lambda a: {"0": 0, "1": 1}.get(a, 2))
        txn = bool(d.transactional) or name in copier_producers
        # "enable.idempotence": the key run.json held before "idempotence"
        idem = txn or (d.idempotence if d.idempotence is not None
                       else _bool((d.model_extra or {}).get("enable.idempotence", False)))
        producers[name] = replace(topics.get(topic, default_topic), acks=acks, idempotence=idem, transactional=txn,
                                  client=client_label(d.client or run.client), txn_aborted_by_hand=txn and aborted)
        producer_topic[name] = topic
    return RunConfigs(topics, producers, producer_topic, notes, offsets_reset_by_hand(events))


def unavailability(buckets: list[dict], lo: int | None, hi: int | None, threshold_ms: int,
                   faults: list[Fault]) -> dict:
    """Spans with no successful acknowledgement longer than threshold_ms, overall and per partition,
    and the recovery time after each fault (fault start to the end of the outage it overlaps)."""
    if threshold_ms < BUCKET_MS:
        raise ValueError(f"unavailability threshold must be >= {BUCKET_MS} ms")

    def windows(bs: list[tuple[int, int]]) -> list[dict]:
        bs = sorted(bs)
        out = []
        prev_end = lo
        for first, last in bs:
            if prev_end is not None and first - prev_end > threshold_ms:
                out.append({"start_ms": prev_end, "end_ms": first, "duration_ms": first - prev_end})
            prev_end = last if prev_end is None else max(prev_end, last)
        if hi is not None and prev_end is not None and hi - prev_end > threshold_ms:
            out.append({"start_ms": prev_end, "end_ms": hi, "duration_ms": hi - prev_end, "open": True})
        return out

    by_sec: dict[int, tuple[int, int]] = {}
    per_part: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for b in buckets:
        s = b["sec"]
        f, la = b["first_ack"], b["last_ack"]
        cur = by_sec.get(s)
        by_sec[s] = (min(cur[0], f), max(cur[1], la)) if cur else (f, la)
        per_part.setdefault((b["topic"], b["partition"]), []).append((f, la))
    overall = windows(list(by_sec.values()))
    partitions = [{"topic": t, "partition": p, "windows": w}
                  for (t, p), bs in sorted(per_part.items()) if (w := windows(bs))]
    recovery = []
    for f in faults:
        start, end = f.start_ms, f.end_ms or f.start_ms
        hit = next((w for w in overall if w["start_ms"] <= end and w["end_ms"] >= start), None)
        recovery.append({
            "fault": f.name or f.kind, "kind": f.kind, "start_ms": start, "end_ms": end, "brokers": f.brokers,
            "recovery_ms": max(0, hit["end_ms"] - start) if hit else 0,
            "outage_ms": hit["duration_ms"] if hit else 0,
        })
    return {"threshold_ms": threshold_ms, "windows": overall, "partitions": partitions, "faults": recovery}


LOGGED_SLACK_MS = 2000  # a controller's line against the samples around the leader change it made


def elections(events: list[Event], account: ControllerAccount | None = None, clocks_moved: bool = False) -> dict:
    """Every leader change seen in the state samples, checked against Kafka's election rule, and
    every election the controllers logged that the samples could not show.

    Rule: the new leader is the first replica in assignment (AR) order that was in the ISR sampled
    last under the old leader and is alive when the new leader is first seen. A new leader outside
    that ISR is an unclean election (allowed only with unclean election on). Preferred-leader
    elections (back to the first AR replica while the old leader lives) are reported as such, and so
    are reassigned ones: a new leader outside the assignment last sampled is a replica a
    reassignment added, which joined the ISR and took the lead between two samples (Kafka moves the
    leadership off a replica the reassignment removes, to one of the new assignment's ISR).

    Where the controllers' logs name the topic (``account``, KRaft: harness/checker/elections_logged.py),
    Kafka's own word decides what the samples cannot: a change the controller logged as made from the
    eligible leader replicas is ``elr``, one it logged as unclean is ``unclean``, and a leader from
    outside the sampled ISR that the controller did not log as unclean joined the ISR between two
    samples (``isr_joined``; Kafka logs every unclean election it makes). That last reading needs
    the controllers' clocks to be the samples' (no clock fault in the run). An unclean election the
    samples cannot show (the partition's last leader elected back after its ISR and ELR emptied:
    KIP-966's last known leader) is added from the log with ``old_leader`` None.
    """
    last: dict[int, dict] = {}  # partition -> last sample with a live leader
    out: list[dict] = []
    matched: set = set()
    for e in events:
        if not isinstance(e, State) or e.partitions is None:
            continue
        alive = set(e.brokers or [])
        for p in e.partitions:
            part, leader = p.partition, p.leader
            if leader < 0:
                continue
            before = last.get(part)
            last[part] = {"leader": leader, "isr": p.isr, "replicas": p.replicas, "ts_ms": e.ts_ms}
            if before is None or before["leader"] == leader:
                continue
            kind, expected = _sampled_kind(before, leader, alive)
            logged = account.near(part, leader, before["ts_ms"] - LOGGED_SLACK_MS, e.ts_ms + LOGGED_SLACK_MS) \
                if account is not None and account.known else None
            if logged is not None:
                matched.add(logged)
                kind, expected = logged.how, leader
            elif kind == "unclean" and account is not None and account.known and not clocks_moved:
                kind, expected = "isr_joined", leader
            out.append({"partition": part, "ts_ms": e.ts_ms, "old_leader": before["leader"],
                        "new_leader": leader, "replicas": before["replicas"], "isr_before": before["isr"],
                        "alive": sorted(alive), "kind": kind, "expected": expected,
                        "ok": kind in ("preferred", "reassigned", "elr", "isr_joined")
                        or (kind == "clean" and leader == expected)})
    for logged in account.elections if account is not None else ():
        if logged not in matched and logged.how == "unclean":
            out.append({"partition": logged.partition, "ts_ms": logged.ts_ms, "old_leader": None,
                        "new_leader": logged.leader, "replicas": None, "isr_before": None, "alive": None,
                        "kind": "unclean", "expected": logged.leader, "ok": False, "source": "controller log"})
    out.sort(key=lambda x: x["ts_ms"])
    return {"count": len(out), "violations": sum(not x["ok"] and x["kind"] == "clean" for x in out),
            "unclean": sum(x["kind"] == "unclean" for x in out), "list": out}


def _first_topic(run: RunConfig) -> str:
    """The topic the run's state samples follow: its first (the scenario's own)."""
    topics = run.topic_list()
    return topics[0].name if topics else ""


def _sampled_kind(before: dict, leader: int, alive: set[int]) -> tuple[str, int | None]:
    """A leader change's kind by Kafka's rule on the samples alone, and the leader the rule expects."""
    ar, isr = before["replicas"], before["isr"]
    live_isr = [r for r in ar if r in isr and r in alive and r != before["leader"]]
    if before["leader"] in alive and leader == ar[0]:
        return "preferred", ar[0]
    if leader not in ar:
        return "reassigned", leader
    if leader not in isr:
        return "unclean", (live_isr[0] if live_isr else None)
    return "clean", (live_isr[0] if live_isr else leader)


# Reads counted by a contract rule that is no evidence against the promise on its own: the anomaly,
# the reported finding that holds those rows, and why. Counts stay the contract's; the verdict only
# holds what remains against the promise.
NOT_HELD: dict[str, tuple[tuple[str, str], ...]] = {
    "uncommitted_read": (
        ("stale_hw_read",
         "the records were read at or above the hw their fetch response carried, and are in the final log "
         "there: Kafka's fetch response carries the hw from before its read (Partition.readRecords), so a "
         "record committed while the leader read it comes back at or above it"),
        ("retention_read",
         "the records were below their partition's log start offset after the run: retention deleted them, "
         "so the final log cannot tell whether they were committed")),
    "share_over_delivered": (
        ("share_forgotten_delivery",
         "every delivery beyond the limit repeated a delivery count across a leader change of its partition: "
         "a share-partition leader keeps an acquisition in memory only (KIP-932), so a new leader gives a "
         "delivery that was in flight again as the same attempt"),),
    "lost": (
        ("retention_deleted",
         "the records were below their partition's log start offset after the run: retention deleted their "
         "segments (by design: a leader whose clock ran past retention.ms finds them expired)"),
        ("topic_deleted",
         "the records were acknowledged before their topic was created again under its name: an operator "
         "deleted the topic they were in (recreate_topic)")),
}
NOT_HELD["divergence"] = (
    ("topic_deleted_offset",
     "at each offset at most one value was the new topic's (a replica's, the final read's, or a read of a record "
     "sent after the topic was created again under its name): the others were read from the topic an operator "
     "deleted (recreate_topic), whose offsets the new topic uses again"),)
NOT_HELD["uncommitted_read"] += (
    ("topic_deleted_read",
     "the records were sent before their topic was created again under its name: they were read from the "
     "topic an operator deleted (recreate_topic), which the final log, the new topic's, cannot hold"),)


def _judged(job: JobResult, idx: int, prom: dict[str, Promise], counts: dict[str, int],
            who: set[str]) -> tuple[list[str], list[str], dict[str, PromiseOutcome]]:
    """(broken, expected, promise outcomes) for ``counts``: an anomaly breaks its promise when what
    remains after NOT_HELD's rows of ``who`` is above 0; a promised anomaly counted only in those rows
    is expected, and its outcome says why."""
    outcomes = {a: PromiseOutcome(promised=p.promised, why=p.why) for a, p in prom.items()}
    broken, expected = [], []
    for a in (a for a in ANOMALIES if a in prom and counts.get(a, 0) > 0):
        held_by = {kind: sum(n for (r, w), n in job.of(kind).counts.items() if r == idx and w in who)
                   for kind, _ in NOT_HELD.get(a, ())}
        if not prom[a].promised:
            expected.append(a)
        elif counts[a] > sum(held_by.values()):
            broken.append(a)
        else:
            expected.append(a)
            outcomes[a] = PromiseOutcome(promised=True, why="; ".join(
                why for kind, why in NOT_HELD[a] if held_by[kind]))
    return broken, expected, outcomes


def config_verdicts(idx: int, job: JobResult, cfgs: RunConfigs) -> list[ConfigVerdict]:
    """One row per configuration the run's producers used: each anomaly counted against it (a
    producer's anomalies for its own writes, a partition's for its topic) and judged by its promises."""
    by_label: dict[str, list[str]] = {}
    for name, cfg in cfgs.producers.items():
        by_label.setdefault(cfg.label(), []).append(name)
    label_cfg = {cfg.label(): cfg for cfg in cfgs.producers.values()}
    rows = []
    for label, members in sorted(by_label.items()):
        cfg, topics = label_cfg[label], {cfgs.producer_topic[m] for m in members}
        counts = {a: sum(n for (r, who), n in job.of(a).counts.items()
                         if r == idx and who in (members if a in PRODUCER_ANOMALIES else topics))
                  if a not in GROUP_ANOMALIES else 0 for a in ANOMALIES}  # a group's are judged in its own row
        broken, expected, outcomes = _judged(job, idx, promises(cfg), counts, topics)
        rows.append(ConfigVerdict(
            config=label,
            settings={"acks": cfg.acks, "min_insync": cfg.min_insync, "replication_factor": cfg.replication_factor,
                      "unclean_election": cfg.unclean_election, "idempotence": cfg.idempotence,
                      "leader_epochs": cfg.leader_epochs, "eligible_leader_replicas": cfg.eligible_leader_replicas,
                      "transactional": cfg.transactional, "client": cfg.client,
                      "faults": sorted(cfg.faults), "faults_on_several_brokers": sorted(cfg.on_several),
                      "brokers_shut_down_uncleanly": cfg.unclean_shutdowns},
            producers=sorted(members), counts=counts, promises=outcomes,
            broken=broken, expected=expected, verdict="fail" if broken else "pass"))
    return rows


def broken_outside(idx: int, job: JobResult, cfgs: RunConfigs) -> list[BrokenOutside]:
    """Partition-level anomalies in topics no producer's configuration covers, judged by the topic's."""
    orphan_topics = {who for a in ANOMALIES if a not in PRODUCER_ANOMALIES and a not in GROUP_ANOMALIES
                     for (r, who) in job.of(a).counts if r == idx} - set(cfgs.producer_topic.values())
    out = []
    for t in sorted(orphan_topics):
        prom = {a: p for a, p in promises(cfgs.topics.get(t, Config())).items()
                if a not in PRODUCER_ANOMALIES and a not in GROUP_ANOMALIES}
        counts = {a: job.of(a).counts.get((idx, t), 0) for a in prom}
        broken, _, _ = _judged(job, idx, prom, counts, {t})
        out += [BrokenOutside(anomaly=a, topic=t, count=counts[a], why=prom[a].why) for a in broken]
    return out


def declared_groups(run: RunConfig, notes: list[str], seen: set[str]) -> dict[str, dict]:
    """Every group of the run and how it commits: run.json's groups, its share groups (commit
    "share": they acknowledge records), the copiers' groups (their offsets go in transactions), and
    any other group the history names (assumed to commit after processing, synchronously, which the
    assumptions say)."""
    groups = {g.name: g.model_dump(exclude={"name"}, exclude_unset=True) for g in run.groups}
    for g in run.share_groups:
        groups.setdefault(g.name, {"commit": "share", **g.model_dump(
            exclude={"name", "start_offsets", "final_start_offsets"}, exclude_unset=True)})
    for c in run.copiers:
        groups.setdefault(c.group, {"protocol": "classic", "commit": "transaction", "topics": list(c.input_topics),
                                    **({"client": c.client.model_dump()} if c.client else {})})
    for name, g in groups.items():
        if g.get("commit", "sync") is None:
            notes.append(f"group {name}: run.json's commit is null: assumed to commit after processing (commit=sync)")
    for name in sorted(seen - set(groups)):
        notes.append(f"group {name} is not in run.json: assumed to commit after processing (commit=sync)")
        groups[name] = {"commit": "sync"}
    return groups


def group_verdicts(idx: int, job: JobResult, run: RunConfig, cfgs: RunConfigs) -> list[GroupVerdict]:
    """One row per group: its commit anomalies judged by its commit mode and its topic's settings."""
    seen = {who for a in (*GROUP_ANOMALIES, "group_redelivered") for (r, who) in job.of(a).counts if r == idx}
    rows = []
    for name, g in declared_groups(run, cfgs.notes, seen).items():
        topic = next((cfgs.topics[t] for t in g.get("topics") or [] if t in cfgs.topics), Config())
        topic = replace(topic, offsets_moved=cfgs.offsets_moved.get(name, frozenset()))
        commit = str(g.get("commit") or "sync")  # run.json's null is its absence
        # A share group is judged by the share classes, a consumer group (or a copier's) by the others.
        classes = [a for a in GROUP_ANOMALIES if a.startswith("share_") == (commit == "share")]
        prom = {a: p for a, p in group_promises(topic, commit).items() if a in classes}
        counts = {a: job.of(a).counts.get((idx, name), 0) for a in classes}
        broken, expected, outcomes = _judged(job, idx, prom, counts, {name})
        rows.append(GroupVerdict(
            group=name, settings=g, counts=counts, promises=outcomes, broken=broken, expected=expected,
            redelivered=job.of("group_redelivered").counts.get((idx, name), 0),
            forgotten=job.of("share_forgotten_delivery").counts.get((idx, name), 0),
            verdict="fail" if broken else "pass"))
    return rows


def _not_healed(e: IsrNotRestored) -> list[NotHealed]:
    """What one isr_not_restored event says: each partition short of its replicas."""
    common = {"topic": e.topic, "waited_s": e.waited_s}
    if not e.partitions:
        return [NotHealed(**common, why=e.why)]
    return [NotHealed(**common, partition=p.partition, leader=p.leader, isr=p.isr, replicas=p.replicas)
            for p in e.partitions]


def _reported(job: JobResult, kind: str, idx: int, note: str | None = None) -> Reported:
    return Reported(count=job.of(kind).count(idx), examples=job.of(kind).examples.get(idx, []), note=note)


def not_exercised(events: list[Event]) -> list[str]:
    """The faults of the schedule that never acted on the cluster: a trigger whose event never came,
    and a fault the nemesis could not apply (its target not resolvable then, its container already
    stopped by another fault, an operator's request that failed) or whose trigger's delay outlasted
    the schedule. A run with any did not test what it was drawn or written for, so it is "not
    exercised" rather than a pass."""
    unfired = [f"fault {e.fault} ({e.kind} {e.target}) on {e.on}" for e in events if isinstance(e, TriggerUnfired)]
    skipped = [f"{e.kind} {e.target} not applied: {e.reason}" for e in events if isinstance(e, FaultSkipped)]
    return unfired + skipped


def logged_by(rd: RunDir, clocks_moved: bool) -> Logged:
    """What the run's own logs say of its topics that its events do not (coverage's ``Logged``)."""
    topics = [t.name for t in rd.config.topic_list()]
    lines = list(broker_lines(rd.path))  # the brokers' logs read once for both accounts
    return Logged(logged_truncations(rd.path, topics, clocks_moved, lines),
                  logged_leaderships(rd.path, topics, clocks_moved, lines),
                  epoch_bumps(rd.path), group_commits(rd.path))


def build_verdict(idx: int, rd: RunDir, job: JobResult, threshold_ms: int) -> Verdict:
    """Run ``idx`` of the analysis, judged: counts, examples, a verdict per configuration."""
    events = read_events(rd.path)
    cfgs = resolve_configs(rd.config, job.producers.get(idx, {}), events)
    rows = config_verdicts(idx, job, cfgs)
    groups = group_verdicts(idx, job, rd.config, cfgs)
    outside = broken_outside(idx, job, cfgs)
    wl = rd.config.workload
    lo, hi = job.span.get(idx, (None, None))
    faults = [e for e in events if isinstance(e, Fault)]
    counts = {a: job.of(a).count(idx) for a in ANOMALIES}
    never_acted = not_exercised(events)
    not_healed = [healed for e in events if isinstance(e, IsrNotRestored) for healed in _not_healed(e)]
    broken = any(r.broken for r in rows) or any(g.broken for g in groups) or bool(outside) or bool(not_healed)
    account = controller_account(rd.path, _first_topic(rd.config)) if rd.config.mode == "kraft" else None
    clocks_moved = any(FAULTS[e.kind].clock for e in faults if e.kind in FAULTS)
    election_record = Elections.model_validate(elections(events, account, clocks_moved=clocks_moved))
    outage = Unavailability(**unavailability(job.buckets.get(idx, []), wl.start_ms if wl.start_ms is not None else lo,
                                             wl.end_ms if wl.end_ms is not None else hi,
                                             threshold_ms, faults))
    return Verdict(
        contract="v2" if rd.v2 else "v1",
        run_id=rd.run_id, run_dir=str(rd.path),
        verdict="fail" if broken else ("not exercised" if never_acted else "pass"), not_exercised=never_acted,
        not_healed=not_healed,
        anomalies=counts,
        examples={a: job.of(a).examples.get(idx, []) for a in ANOMALIES},
        by_config=rows, by_group=groups, broken_outside_configs=outside,
        indeterminate_landed=_reported(job, "landed_info", idx),
        failed_but_present=_reported(job, "landed_fail", idx,
                                     "writes the client reported as definitely failed that are in the final log"),
        acks0_missing=job.of("acks0_missing").count(idx),
        retention_deleted=_reported(job, "retention_deleted", idx,
                                    "acknowledged writes below their partition's log start after the run: retention "
                                    "deleted their segments"),
        retention_read=_reported(job, "retention_read", idx,
                                 "reads of records below their partition's log start after the run: retention "
                                 "deleted them"),
        topic_deleted=_reported(job, "topic_deleted", idx,
                                "acknowledged writes to a topic an operator then deleted and created again"),
        topic_deleted_read=_reported(job, "topic_deleted_read", idx,
                                     "reads of records sent to a topic an operator then deleted and created again"),
        final_log_records=job.final_rows.get(idx, 0),
        rows=rd.rows,
        unavailability=outage,
        elections=election_record,
        coordination=Coordination(failovers=failovers(events, outage.faults), **quorum_spans(events)),
        assumptions=assumptions(cfgs, events),
        known_issues=known_issues(rd.config, cfgs.producers.values(), {**counts, NOT_HEALED: len(not_healed)},
                                  rd.path),
        not_judged=not_judged(rd.config),
        coverage=coverage(rd.config, events, election_record.changes, logged_by(rd, clocks_moved)),
        exposure=fault_exposure(sorted(faults, key=lambda f: f.start_ms), job.exposure.get(idx, {})),
    )


def assumptions(cfgs: RunConfigs, events: list[Event]) -> list[str]:
    """What the verdict assumes where run.json is silent, what it lacks where a tool failed on a node,
    and what the run itself says it could not do as planned (its notes): each a reason to read the
    counts with care, said where the counts are."""
    return cfgs.notes + [f"{e.tool} failed on {e.node}: the run lacks {e.lacks} ({e.error})"
                         for e in events if isinstance(e, ToolFailed)] \
        + [f"the run: {e.msg}" for e in events if isinstance(e, Note)]


def fault_exposure(faults: list[Fault], rows: dict[int, dict]) -> list[FaultExposure]:
    """Each fault, in the order they started, with what the exposure job measured of it."""
    out = []
    for n, f in enumerate(faults):
        row = rows.get(n, {"measured": False, "exposed": 0, "lost": 0})
        out.append(FaultExposure(fault=n, kind=f.kind, target=f.target, start_ms=f.start_ms,
                                 measured=bool(row["measured"]), exposed=int(row["exposed"]), lost=int(row["lost"])))
    return out
