"""The verdict of one run, typed: what verdict.json holds, written and read here and nowhere else.

The checker builds it (judge.py), the CLI, the matrix, the pytest plugin and the report read it.
The field names are verdict.json's keys; ``extra="allow"`` keeps a verdict written by a newer
kchaos readable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.history import VERDICT_JSON, HistoryError, write_json_atomic

Example = dict[str, Any]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class PromiseOutcome(_Model):
    promised: bool  # True: the count had to be 0
    why: str  # what guarantees it, or what permits the anomaly


class ConfigVerdict(_Model):
    """One configuration's writes in one run (producers that share a configuration share a row)."""

    config: str
    settings: dict[str, Any]
    producers: list[str]
    counts: dict[str, int]
    promises: dict[str, PromiseOutcome]
    broken: list[str]  # anomalies counted that the configuration promised never to show
    expected: list[str]  # anomalies counted that the configuration permits
    verdict: Literal["pass", "fail"]


class GroupVerdict(_Model):
    """One consumer group in one run: its commit anomalies judged by its protocol and commit mode,
    and how many records it returned more than once (at-least-once, not an anomaly)."""

    group: str
    settings: dict[str, Any]  # protocol, assignor, commit, isolation, topics
    counts: dict[str, int]  # group_unseen, offset_regression
    promises: dict[str, PromiseOutcome]
    broken: list[str]
    expected: list[str]
    redelivered: int  # distinct values the group returned more than once
    # share groups: distinct values given beyond the attempt limit only by repeating a delivery count
    # across a leader change (a new share-partition leader forgot the delivery in flight; not held)
    forgotten: int = 0
    verdict: Literal["pass", "fail"]


class BrokenOutside(_Model):
    """A partition-level anomaly in a topic no producer's configuration covers."""

    anomaly: str
    topic: str
    count: int
    why: str


class Reported(_Model):
    """Counted and shown, but not an anomaly (indeterminate or failed writes that landed)."""

    count: int
    examples: list[Example] = Field(default_factory=list)
    note: str | None = None


class FaultExposure(_Model):
    """What one fault put at risk (harness/checker/exposure.py): records acknowledged with acks=1 that no
    read had shown under their partition's high watermark when it fired, and how many the final log lacks;
    ``measured`` false where no reader had read any partition just before it."""

    fault: int  # its place among the run's faults, in the order they started
    kind: str
    target: str = ""
    start_ms: int
    measured: bool = True
    exposed: int = 0
    lost: int = 0


class Unavailability(_Model):
    threshold_ms: int
    windows: list[dict[str, Any]] = Field(default_factory=list)
    partitions: list[dict[str, Any]] = Field(default_factory=list)
    faults: list[dict[str, Any]] = Field(default_factory=list)


class Elections(_Model):
    """Every leader change the state samples show, judged against Kafka's election rule."""

    count: int = 0
    violations: int = 0
    unclean: int = 0
    changes: list[dict[str, Any]] = Field(default_factory=list, alias="list")


class Failover(_Model):
    """One fault on the coordination layer: whether and how fast a new leader took over, how long the
    quorum had no leader or no majority, and the unavailability the producers saw."""

    fault: str
    kind: str
    target: str
    nodes: list[Any] = Field(default_factory=list)
    start_ms: int
    end_ms: int
    layer: Literal["controller", "zookeeper"]  # Kafka's (active) controller, or the ZooKeeper ensemble's leader
    leader_before: int | None = None
    new_leader: int | None = None  # None: no other leader was seen (the fault spared the leader, or none won)
    failover_ms: int | None = None  # fault start to the first sample showing the new leader
    no_leader_ms: int = 0  # from the fault's start until SETTLE_MS after its end
    no_majority_ms: int = 0
    outage_ms: int = 0  # the unavailability window the fault overlapped
    recovery_ms: int = 0


class Coordination(_Model):
    """The coordination layer over a run (empty for runs sampled without the quorum's state)."""

    failovers: list[Failover] = Field(default_factory=list)
    no_leader: list[dict[str, Any]] = Field(default_factory=list)  # spans without a quorum leader
    no_majority: list[dict[str, Any]] = Field(default_factory=list)  # spans without a majority in touch


NOT_HEALED = "isr_not_restored"  # what a hunt, a known issue and --anomaly call a run's not_healed partitions


class NotHealed(_Model):
    """A partition whose ISR was not whole again when the wait after the heal gave up (partition
    None: the topic did not settle for another reason, ``why``)."""

    topic: str
    partition: int | None = None
    leader: int = -1
    isr: list[int] = Field(default_factory=list)
    replicas: list[int] = Field(default_factory=list)
    waited_s: float = 0.0
    why: str = ""

    def describe(self) -> str:
        if self.partition is None:
            return f"{self.topic}: not settled {self.waited_s:g} s after the heal ({self.why[:200]})"
        return (f"{self.topic}-{self.partition}: ISR {self.isr} of replicas {self.replicas} (leader {self.leader}) "
                f"{self.waited_s:g} s after the heal")


class KnownIssue(_Model):
    """A known Kafka or client bug whose symptoms a run shows, in the configuration it needs. The run
    still fails where the bug breaks a promise (the promise is Kafka's); this names the likely
    cause where the run's own logs show its mechanism (harness/checker/known_issues.py)."""

    issue: str  # e.g. "KAFKA-17754"
    anomalies: list[str]  # the counted anomalies it explains
    why: str
    # True: the run's logs hold the line that shows the mechanism (``evidence``); False: they do not,
    # so the anomalies stay unexplained (``evidence`` says what was looked for); None: no log line
    # shows this bug's mechanism, so the run's configuration is merely consistent with it
    shown: bool | None = None
    evidence: str | None = None

    @property
    def explains(self) -> bool:
        """Whether this names the cause. Only a mechanism the run's own logs show does: a bug that fits
        the configuration but that no log line shows leaves the anomaly unexplained, so a new bug with
        a known bug's symptoms is never filed away under the known one."""
        return self.shown is True


class NotJudged(_Model):
    """What a run could not judge because a client library does not report it (checker/capabilities.py)."""

    client: str  # "verifiable kafka-tools 4.4.0"
    capability: str  # what the client does not report ("poll_hw")
    unjudged: str  # the anomaly class or measure it leaves unjudged
    extent: Literal["part", "whole"]
    why: str


class Verdict(_Model):
    contract: str = "v1"  # "v2" when the run directory has any v2 file or column
    run_id: str
    run_dir: str
    # "not exercised": no promise broken, but a fault of the schedule never acted (a trigger that never
    # fired, a fault the nemesis could not apply), so the run did not test what its scenario is for
    verdict: Literal["pass", "fail", "not exercised"]
    anomalies: dict[str, int]
    examples: dict[str, list[Example]]
    by_config: list[ConfigVerdict]
    by_group: list[GroupVerdict] = Field(default_factory=list)
    broken_outside_configs: list[BrokenOutside] = Field(default_factory=list)
    indeterminate_landed: Reported
    failed_but_present: Reported
    acks0_missing: int = 0
    # lost writes below their partition's log start after the run: deleted by retention, not held
    # against the durability promise (harness/checker/reported.py)
    retention_deleted: Reported = Field(default_factory=lambda: Reported(count=0))
    # reads uncommitted_read counts of records retention deleted: not held against the promise
    retention_read: Reported = Field(default_factory=lambda: Reported(count=0))
    # lost writes acknowledged before their topic was created again (recreate_topic): deleted with the
    # old topic, not held against the durability promise; and reads uncommitted_read counts of them
    topic_deleted: Reported = Field(default_factory=lambda: Reported(count=0))
    topic_deleted_read: Reported = Field(default_factory=lambda: Reported(count=0))
    final_log_records: int = 0
    rows: dict[str, int] = Field(default_factory=dict)
    unavailability: Unavailability
    elections: Elections = Field(default_factory=Elections)
    coordination: Coordination = Field(default_factory=Coordination)
    assumptions: list[str] = Field(default_factory=list)
    known_issues: list[KnownIssue] = Field(default_factory=list)
    # what the run's clients do not report, and so what it could not judge (not a zero: not looked for)
    not_judged: list[NotJudged] = Field(default_factory=list)
    not_exercised: list[str] = Field(default_factory=list)  # the faults that never acted (unfired, not applied)
    # how often the run entered each protocol state (harness/checker/coverage.py): what its faults
    # reached, so that "0 lost" reads against what was at risk
    coverage: dict[str, int] = Field(default_factory=dict)
    # what each fault put at risk: "0 lost of 412 exposed", or nothing exposed
    exposure: list[FaultExposure] = Field(default_factory=list)
    # partitions whose ISR was not whole again when the wait after the heal gave up: a cluster that
    # did not recover, which fails the run (a follower rejoins the ISR once its log reaches the hw)
    not_healed: list[NotHealed] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.verdict == "fail"

    @property
    def exercised(self) -> bool:
        return not self.not_exercised

    def exposure_words(self) -> str:
        """"0 lost of 412 exposed", "nothing exposed", or "" where no fault's exposure was measured."""
        measured = [e for e in self.exposure if e.measured]
        if not measured:
            return ""
        exposed, lost = sum(e.exposed for e in measured), sum(e.lost for e in measured)
        unmeasured = len(self.exposure) - len(measured)
        tail = f" ({unmeasured} fault{'s' if unmeasured != 1 else ''} not measured)" if unmeasured else ""
        return (f"{lost:,} lost of {exposed:,} exposed" if exposed else "nothing exposed") + tail

    def broken(self) -> list[tuple[str, str, int]]:
        """(configuration, anomaly, count) of every promise broken."""
        return [(c.config, a, c.counts[a]) for c in self.by_config for a in c.broken] + [
            (f"group {g.group}", a, g.counts[a]) for g in self.by_group for a in g.broken] + [
            (f"topic {b.topic}", b.anomaly, b.count) for b in self.broken_outside_configs]


def write(run_dir: Path, v: Verdict) -> None:
    """verdict.json of ``run_dir``, atomically."""
    write_json_atomic(Path(run_dir) / VERDICT_JSON, v.model_dump(mode="json", by_alias=True))


def read(run_dir: Path) -> Verdict | None:
    """verdict.json of ``run_dir``; None when the run has not been checked; HistoryError naming the
    file when it is not a verdict kchaos wrote (check the run again to write it anew)."""
    f = Path(run_dir) / VERDICT_JSON
    if not f.exists():
        return None
    try:
        return Verdict.model_validate_json(f.read_bytes())
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "the file"
        raise HistoryError(f"{f}: not a verdict kchaos wrote ({where}: {err['msg']}); check the run again: "
                           f"kchaos check {run_dir}") from e
