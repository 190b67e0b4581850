"""Which finding is already known: a bug the verdict itself names (its ``known_issues``: a Kafka JIRA
or a client issue), or an anomaly the configuration permits whose mechanism a catalogue scenario
demonstrates (docs/known-results.md has each one's measured rate under the scenario's name)."""

from __future__ import annotations

from harness.checker.verdict import Verdict
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


def known_id(hit: Hit, v: Verdict) -> str | None:
    """The known id of a hit, or None for something kchaos has not seen named before."""
    for issue in v.known_issues:
        if hit.anomaly in issue.anomalies:
            return issue.issue
    if hit.promised:
        return None
    for start, ids in EXCUSED_BY:
        if hit.why.startswith(start):
            return ids.get(hit.anomaly, ids["*"])
    return None
