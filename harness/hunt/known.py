"""Which finding is already known: a bug the verdict itself names (its ``known_issues``: a Kafka JIRA
or a client issue), or an anomaly the configuration permits whose mechanism a catalogue scenario
demonstrates (docs/known-results.md has each one's measured rate under the scenario's name)."""

from __future__ import annotations

from collections.abc import Iterable

from harness.checker.verdict import Verdict
from harness.faults import FAULTS
from harness.hunt.goal import Hit

# What permits an anomaly (the start of the promise's reason, harness/checker/excuses.py), and the
# catalogue scenario that shows it happening, per anomaly class ("*": any class it permits).
EXCUSED_BY = (
    ("acks=0", {"*": "acks1-leader-kill"}),
    ("acks=1", {"*": "acks1-leader-kill"}),
    ("unclean.leader.election.enable=true", {"*": "unclean-election"}),
    ("leader epochs off", {"divergence": "hw-truncation-divergence", "*": "hw-truncation-loss"}),
    ("power loss", {"*": "power-loss"}),
)


def known_id(hit: Hit, v: Verdict, kinds: Iterable[str] = ()) -> str | None:
    """The known id of a hit, or None for something kchaos has not seen named before. An anomaly the
    configuration permits is labelled with every catalogue mechanism that may explain it: the one the
    promise names first (``hit.why``) and, when the schedule (fault ``kinds``) has a fault beyond what
    Kafka promises to survive, that fault's too (a power loss of every broker diverges replicas with
    leader epochs on or off: "hw-truncation-divergence, power-loss")."""
    for issue in v.known_issues:
        if issue.explains and hit.anomaly in issue.anomalies:
            return issue.issue
    if hit.promised:
        return None
    first = _excused_by(hit.why, hit.anomaly)
    if first is None:
        return None
    elr = any(c.settings.get("eligible_leader_replicas") for c in v.by_config)
    several = {k for c in v.by_config for k in c.settings.get("faults_on_several_brokers", [])}
    unclean = max((c.settings.get("brokers_shut_down_uncleanly", 0) for c in v.by_config), default=0)
    covered = {k for k in FAULTS if FAULTS[k].elr_covers and elr and k not in several and unclean <= 1}
    ids = [first] + [_excused_by(FAULTS[k].excuse, hit.anomaly) for k in sorted(set(kinds))
                     if k in FAULTS and FAULTS[k].excuse and k not in covered]
    return ", ".join(dict.fromkeys(i for i in ids if i))


def _excused_by(why: str, anomaly: str) -> str | None:
    for start, ids in EXCUSED_BY:
        if why.startswith(start):
            return ids.get(anomaly, ids["*"])
    return None
