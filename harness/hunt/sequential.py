"""Whether a shrink candidate still shows a finding, decided by Wald's sequential probability ratio
test (SPRT) on its runs, knowing the finding's measured rate.

A finding that shows in 2 of 3 runs cannot be shrunk by judging each candidate on a fixed number of
runs: one run rejects a true candidate a third of the time, and every rejection keeps a fault the
bug does not need. The test instead weighs each run's outcome as evidence between two rates:

- ``p1``: the candidate still has the bug, and shows it as often as the finding did (its confirmed
  rate, k of n);
- ``p0``: the candidate lost what the bug needs, and shows it only as a schedule without it does
  (a twentieth of ``p1`` by default: rare, but not impossible, since another fault may show the
  same anomaly).

Each run adds log(p1/p0) when it shows the anomaly and log((1-p1)/(1-p0)) when it does not; the
candidate is kept once the sum reaches log((1-beta)/alpha) and dropped once it falls to
log(beta/(1-alpha)), so that a candidate without the bug is kept with probability at most about
``alpha`` and one with it dropped at most about ``beta``. At ``max_runs`` without a decision the
candidate is dropped: keeping a wrong candidate would break the finding, dropping a right one only
leaves a fault in it. A finding that always shows (p1 = 1) is judged as before, one run: a run that
shows it keeps the candidate, one that does not drops it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

ALPHA = 0.05  # how often a candidate without the bug may be kept
BETA = 0.10  # how often a candidate with it may be dropped
MAX_RUNS = 8  # runs of one candidate at most
P0_SHARE = 0.05  # p0 as a share of p1 when not given


@dataclass(frozen=True)
class Sprt:
    """The test's two rates and error bounds."""

    p1: float
    p0: float
    alpha: float = ALPHA
    beta: float = BETA
    max_runs: int = MAX_RUNS

    def __post_init__(self) -> None:
        if not 0 < self.p0 < self.p1 <= 1:
            raise ValueError(f"a sequential test needs 0 < p0 < p1 <= 1 (got p0={self.p0}, p1={self.p1})")
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise ValueError(f"alpha and beta must be in (0, 0.5) (got {self.alpha}, {self.beta})")

    @classmethod
    def for_rate(cls, k: int, n: int, **bounds: float) -> Sprt:
        """The test for a finding confirmed in ``k`` of ``n`` runs."""
        if not 0 < k <= n:
            raise ValueError(f"a finding to shrink shows in at least one run (got {k} of {n})")
        p1 = 1.0 if k == n else k / n
        return cls(p1, p1 * P0_SHARE, **bounds)

    @property
    def accept_at(self) -> float:
        """The evidence at which the candidate is kept: log((1-beta)/alpha)."""
        return math.log((1 - self.beta) / self.alpha)

    @property
    def reject_at(self) -> float:
        """The evidence at which the candidate is dropped: log(beta/(1-alpha))."""
        return math.log(self.beta / (1 - self.alpha))

    def weight(self, shown: bool) -> float:
        """One run's evidence for p1 over p0."""
        if shown:
            return math.log(self.p1 / self.p0)
        if self.p1 >= 1:
            return -math.inf  # a bug that always shows cannot have been kept by a run that did not
        return math.log((1 - self.p1) / (1 - self.p0))

    def judge(self, run: Callable[[int], bool]) -> Judgement:
        """Run the candidate (``run(i)``: whether its i-th run, from 1, showed the anomaly) until the
        evidence decides, or ``max_runs``."""
        outcomes: list[bool] = []
        evidence = 0.0
        while len(outcomes) < self.max_runs:
            shown = run(len(outcomes) + 1)
            outcomes.append(shown)
            evidence += self.weight(shown)
            if evidence >= self.accept_at:
                return Judgement(True, outcomes, evidence, decided=True)
            if evidence <= self.reject_at:
                return Judgement(False, outcomes, evidence, decided=True)
        return Judgement(False, outcomes, evidence, decided=False)

    def describe(self) -> dict:
        """The test as hunt.json and bug.md state it."""
        return {"test": "sequential probability ratio (Wald)", "p1": round(self.p1, 4), "p0": round(self.p0, 4),
                "alpha": self.alpha, "beta": self.beta, "max_runs": self.max_runs,
                "keep_at": round(self.accept_at, 3), "drop_at": round(self.reject_at, 3)}


@dataclass(frozen=True)
class Judgement:
    """A candidate's runs and what they decided: kept (it still shows the finding) or dropped;
    ``decided`` False when ``max_runs`` ran out first (then it is dropped)."""

    kept: bool
    outcomes: list[bool] = field(default_factory=list)
    evidence: float = 0.0
    decided: bool = True

    @property
    def runs(self) -> int:
        return len(self.outcomes)
