"""What a hunt looks for in a verdict, and how its findings are told apart.

By default a hunt looks for a broken promise: an anomaly counted that the configuration promised
never to show. ``--anomaly lost,divergence`` looks for those anomaly classes whether or not the
configuration promises them ("what is the smallest schedule under which acks=1 loses data?").
A finding's signature is its anomaly class, the configuration it showed in and the kinds of fault
in the schedule: findings with one signature are one finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checker.anomaly import ANOMALIES
from harness.checker.excuses import client_label
from harness.checker.verdict import NOT_HEALED, ConfigVerdict, GroupVerdict, Verdict

# Not an anomaly of the history: a partition whose ISR was not whole again after the heal (the run
# fails, docs/findings.md F2). A hunt for broken promises looks for it; ``--anomaly`` may name it.
NOT_HEALED_WHY = "a follower rejoins the ISR once its log reaches the high watermark"

# The protocol states (harness/checker/coverage.py) that the known mechanisms of each goal pass
# through, from the findings and known results kchaos has (docs/findings.md, docs/known-results.md):
# a record is lost or diverges only where a replica without it comes to lead; a read is uncommitted,
# or goes back, where a replica removes what was read; a write is duplicated or reordered where a
# producer's epoch or an answer is lost; a group's offsets move back across its rebalances and
# coordinator moves; an ISR stays frozen where the controller lost ZooKeeper's answer. The coverage
# guide spends more of its mutations on schedules that reached them (coverage_guide.py).
_LEADS_WITHOUT_IT = frozenset({"leader_change", "partition_offline", "unclean_election", "elr_election",
                               "unflushed_data_lost", "replica_truncated", "truncated_below_hw", "successor_lagging"})
_READ_REMOVED = frozenset({"leader_change", "replica_truncated", "truncated_below_hw", "successor_lagging",
                           "unclean_election"})
_PRODUCER_RETRIED = frozenset({"producer_epoch_bumped", "answer_lost", "leader_change", "coordinator_lost"})
_GROUP_MOVED = frozenset({"group_rebalance", "partitions_lost", "commit_across_rebalance", "commit_refused",
                          "coordinator_lost"})
ON_THE_WAY: dict[str, frozenset[str]] = {
    "lost": _LEADS_WITHOUT_IT, "divergence": _LEADS_WITHOUT_IT, "eos_lost": _LEADS_WITHOUT_IT | _PRODUCER_RETRIED,
    "uncommitted_read": _READ_REMOVED, "nonmonotonic_poll": _READ_REMOVED, "phantom": _READ_REMOVED,
    "duplicate": _PRODUCER_RETRIED, "nonmonotonic_send": _PRODUCER_RETRIED, "eos_duplicate": _PRODUCER_RETRIED,
    "torn_txn": _PRODUCER_RETRIED, "aborted_read": _PRODUCER_RETRIED, "precommitted_read": _PRODUCER_RETRIED,
    "offset_regression": _GROUP_MOVED, "coordinator_regression": _GROUP_MOVED, "group_unseen": _GROUP_MOVED,
    "poll_skip": _GROUP_MOVED,
    NOT_HEALED: frozenset({"answer_lost", "controller_failover", "below_min_insync", "isr_leader_alone"}),
}


@dataclass(frozen=True)
class Hit:
    """One anomaly class counted in one configuration of one run."""

    anomaly: str
    where: str  # the configuration: a producer configuration's label, "group ..." or "topic ..."
    count: int
    promised: bool  # whether the configuration promised it would never show
    why: str  # what the promise rests on, or what permits the anomaly

    @property
    def key(self) -> tuple[str, str]:
        """What a re-run must show again to count as the same failure."""
        return (self.anomaly, self.where)


def config_label(c: ConfigVerdict) -> str:
    """A producer configuration as a signature names it: its label without the faults it ran under
    (the signature names those itself)."""
    return c.config.split(" +")[0]


def group_label(g: GroupVerdict) -> str:
    s = g.settings
    client = client_label(s.get("client"))
    return (f"group {client + ' ' if client else ''}{s.get('protocol', '?')} assignor={s.get('assignor', '?')} "
            f"commit={s.get('commit', '?')} isolation={s.get('isolation', '?')}")


@dataclass(frozen=True)
class Goal:
    """Broken promises (``anomalies`` None) or these anomaly classes, promised or not."""

    anomalies: frozenset[str] | None = None

    @classmethod
    def parse(cls, text: str | None) -> Goal:
        """``--anomaly a,b``; ValueError naming the allowed classes."""
        if not text:
            return cls()
        names = [a.strip() for a in text.split(",") if a.strip()]
        allowed = (*ANOMALIES, NOT_HEALED)
        bad = [a for a in names if a not in allowed]
        if bad or not names:
            raise ValueError(f"--anomaly: {', '.join(bad) or repr(text)} (allowed: {', '.join(allowed)})")
        return cls(frozenset(names))

    @property
    def on_the_way(self) -> frozenset[str]:
        """The protocol states the goal's known mechanisms pass through (ON_THE_WAY); for broken
        promises, every class's."""
        classes = self.anomalies if self.anomalies is not None else ON_THE_WAY
        return frozenset().union(*(ON_THE_WAY.get(a, frozenset()) for a in classes))

    def describe(self) -> str:
        return "a broken promise" if self.anomalies is None else "any of " + ", ".join(sorted(self.anomalies))

    def hits(self, v: Verdict) -> list[Hit]:
        """What of the goal this verdict shows, one hit per anomaly class and configuration."""
        out = []
        for c in v.by_config:
            out += self._of(config_label(c), c.counts, c.promises, c.broken)
        for g in v.by_group:
            out += self._of(group_label(g), g.counts, g.promises, g.broken)
        for b in v.broken_outside_configs:
            if self.anomalies is None or b.anomaly in self.anomalies:
                out.append(Hit(b.anomaly, f"topic {b.topic}", b.count, True, b.why))
        if v.not_healed and (self.anomalies is None or NOT_HEALED in self.anomalies):
            topics = ",".join(sorted({x.topic for x in v.not_healed}))
            out.append(Hit(NOT_HEALED, f"topic {topics}", len(v.not_healed), True, NOT_HEALED_WHY))
        return out

    def _of(self, where: str, counts: dict[str, int], promises: dict, broken: list[str]) -> list[Hit]:
        wanted = broken if self.anomalies is None else [a for a in sorted(self.anomalies) if counts.get(a, 0) > 0]
        return [Hit(a, where, counts[a], promises[a].promised, promises[a].why) for a in wanted if a in promises]


def signature(hit: Hit, fault_kinds: list[str]) -> str:
    """``anomaly | configuration | kind+kind``: the identity of a finding."""
    return f"{hit.anomaly} | {hit.where} | {'+'.join(sorted(set(fault_kinds))) or 'no faults'}"
