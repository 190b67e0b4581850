"""events.jsonl, typed: every record type a run writes there, one model each, validated on the way
in (``EventLog.write``) and on the way out (``read``).

The checker, the report and the triggers read these records; docs/run-directory.md documents them
beside run.json. Keys the models do not name are kept (another harness may add its own), but a
line that is not JSON, a record of an unknown type, or a known key of the wrong shape is bad input:
``EventError`` names the file, the line and what is allowed.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

EVENTS = "events.jsonl"


def now_ms() -> int:
    """The history's clock: wall-clock milliseconds, as every row and event of a run is stamped."""
    return time.time_ns() // 1_000_000


class EventError(ValueError):
    """An events.jsonl line that breaks the record types; the message names the file and line."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


# ------------------------------------------------------------------ shared parts

class PartitionSample(_Record):
    partition: int
    leader: int  # -1: offline
    replicas: list[int]  # AR order
    isr: list[int]


class NodeSample(_Record):
    node: int  # 100+K: KRaft controller K; 200+K: ZooKeeper server K
    reachable: bool
    role: str = ""
    lag: int | None = None


class QuorumSample(_Record):
    leader: int  # -1: none
    epoch: int
    voters: list[int]
    majority: bool
    nodes: list[NodeSample] = Field(default_factory=list)


class PowerLossCut(_Record):
    file: str  # partition directory / segment file
    kept_until: int  # bytes kept
    removed: bool


class UpgradeStep(_Record):
    node: str  # kafka-2, controller-1
    before: str  # the version it ran
    after: str  # the version it runs
    begin_ms: int
    stopped_ms: int | None = None
    started_ms: int | None = None
    rejoined_ms: int | None = None  # back in the ISR of every partition it replicates (a controller: a voter)


class FeatureChange(_Record):
    feature: str
    before: int  # the finalized level before
    after: int  # the finalized level after, as the brokers then reported it
    asked: int


class FaultDetail(_Record):
    """What a fault found and did, on its fault_start and fault lines."""

    leader_before: int | None = None  # the fault's partition's leader when it fired
    controller_before: int | None = None
    quorum_before: QuorumSample | None = None
    power_loss: dict[str, list[PowerLossCut]] | None = None  # broker -> what its files kept
    restart_waited_s: dict[str, float] | None = None  # broker -> how long its restart waited for a registration
    stream: Literal["upstream", "downstream"] | None = None
    transactional_id: str | None = None  # txn_coordinator: whose coordinator
    group: str | None = None  # group_coordinator: whose coordinator
    group_id: str | None = None  # that group's id on the cluster, where it is not its name (a kept cluster's run)
    trigger: str | None = None  # a triggered fault: its trigger, what was observed and when
    observed: str | None = None
    trigger_ms: int | None = None
    upgrade: list[UpgradeStep] | None = None  # rolling_upgrade: each node it moved, in order
    upgrade_error: str | None = None  # rolling_upgrade: why the roll stopped before every node was moved
    feature_change: FeatureChange | None = None  # feature_upgrade
    # an election by hand (elect_preferred, elect_unclean): which, the controller's answer ("ok" or the
    # error that said there was nothing to do), and the partition's leader after it
    election: Literal["preferred", "unclean"] | None = None
    answer: str | None = None
    leader_after: int | None = None
    # a reassignment by hand (reassign): the change, the partition's replicas before and asked for,
    # and whether it was complete by the heal ("complete", "in progress")
    change: Literal["move", "add", "remove"] | None = None
    replicas_before: list[int] | None = None
    replicas_after: list[int] | None = None
    reassignment: str | None = None
    # a topic config changed by hand (alter_config): which, its own value before (null: the default)
    # and the value set
    config: str | None = None
    value_before: str | None = None
    value: str | None = None
    # an undo asked again while the cluster did not answer it (alter_config's heal): when, and what each refusal said
    heal_retries: list[str] | None = None
    unregistered: dict[str, str] | None = None  # decommission: broker -> what kafka-cluster unregister said
    # reset_offsets: where the offsets went, and Kafka's answer: "reset" when it moved them, else
    # "refused: " and why (a group with members is refused: only an inactive group's offsets move)
    offsets: Literal["earliest", "latest", "delete"] | None = None
    offsets_reset: str | None = None
    partitions_before: int | None = None  # add_partitions: the topic's partition count before and after
    partitions_after: int | None = None
    # abort_transaction: the producer whose open transaction was aborted, the offset it started at, and
    # Kafka's answer: "aborted", "none open" (no transaction was open on the partition), or "refused: " and why
    producer_id: int | None = None
    start_offset: int | None = None
    transaction_aborted: str | None = None
    # recreate_topic: the topic deleted and created again under its name, when the deletion was asked
    # and when the new topic served (every partition led), both topic ids, and Kafka's answer:
    # "recreated", or "refused: " and why (the deletion or the creation not done in time)
    topic: str | None = None
    deleted_ms: int | None = None
    created_ms: int | None = None
    topic_id_before: str | None = None
    topic_id_after: str | None = None
    # lose_answers: the request type, the links whose answers to it were lost, and how many answers
    # were lost (each one's connection closed with it) by the heal
    answers_to: str | None = None
    answer_links: list[str] | None = None
    answers_lost: int | None = None
    recreated: str | None = None


# ------------------------------------------------------------------ the record types

class WorkloadStart(_Record):
    """The producers start (consumers and groups are already reading)."""

    type: Literal["workload_start"] = "workload_start"
    ts_ms: int


class WorkloadEnd(_Record):
    """The producers have stopped and every delivery report arrived or timed out."""

    type: Literal["workload_end"] = "workload_end"
    ts_ms: int


class Note(_Record):
    """Something the run could not do as planned, said in words (a group that did not form, one that
    had not committed to the end after healing, a broker the heal started again after it exited while
    starting)."""

    type: Literal["note"] = "note"
    ts_ms: int
    msg: str


class EpochsDriven(_Record):
    """A transactional producer's epoch driven up before the run (its ``epoch_from``): the producer id
    and epoch its transactional.id was left at, and the InitProducerId requests that took it there."""

    type: Literal["epochs_driven"] = "epochs_driven"
    ts_ms: int
    transactional_id: str
    producer_id: int
    epoch: int
    requests: int
    seconds: float


class Formation(_Record):
    """The cluster's formation faulted (``[cluster.formation]``, harness/cluster/formation.py): the
    coordination quorum's first leader (node, epoch), seconds from the first node's start to its
    election, the moment the fault counted from (its election, or the first broker registered, and
    how many brokers served then), the fault done to it, when it was done and undone, and who led
    once every broker had registered. Written at the start of the first run on that cluster, with the
    times it happened."""

    type: Literal["formation"] = "formation"
    ts_ms: int  # the fault's start
    kind: str
    after: str = "elected"
    brokers_serving: int = 0
    leader: int
    epoch: int
    elected_after_s: float
    delay_s: float
    duration_s: float
    heal_ms: int
    leader_after: int
    epoch_after: int
    formed_ms: int


class ToolFailed(_Record):
    """One of Kafka's own tools that the run uses to read the brokers after healing failed, or is not in
    the node's image (harness/cluster/kafka_tools.py): the tool, the node, what it said, and what the
    run lacks for it. The verdict states it as an assumption; the terminal and the report say it."""

    type: Literal["tool_failed"] = "tool_failed"
    ts_ms: int
    tool: str
    node: str
    error: str
    lacks: str


class IsrNotRestored(_Record):
    """A topic whose ISR was not whole again when the wait after the heal gave up, although every
    fault was undone: its partitions as last seen (ZooKeeper's state in ZooKeeper mode, the
    controller's metadata in KRaft). Kafka adds a caught-up replica back to the ISR, so this is a
    cluster that did not recover (docs/findings.md F2), unless a broker could not catch up."""

    type: Literal["isr_not_restored"] = "isr_not_restored"
    ts_ms: int
    topic: str
    waited_s: float
    partitions: list[PartitionSample] = Field(default_factory=list)  # those short of their replicas
    why: str = ""  # what the wait saw last (a full ISR whose brokers disagree on its leader, say)


class State(_Record):
    """A sample of the cluster, at least every 250 ms: each partition's leader and ISR, the live
    brokers, the controller, and the coordination quorum; ``error`` when the brokers did not answer
    (the quorum may still have), ``frozen`` when ZooKeeper did not and the last state stands."""

    type: Literal["state"] = "state"
    ts_ms: int
    controller: int | None = None
    brokers: list[int] | None = None
    partitions: list[PartitionSample] | None = None
    quorum: QuorumSample | None = None
    frozen: bool = False
    error: str | None = None


class FaultStart(FaultDetail):
    """A fault applied: what it hit (brokers or nodes), the tag its toxics carry."""

    type: Literal["fault_start"] = "fault_start"
    ts_ms: int
    kind: str
    target: str = ""
    brokers: list[int] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)  # container names: kafka-2, controller-1, zookeeper-3
    tag: str = ""


class Fault(FaultDetail):
    """A fault healed: its whole span, what it hit, the links it put toxics on, what was planned."""

    type: Literal["fault"] = "fault"
    name: str = ""
    kind: str
    target: str = ""
    partition: int = 0
    brokers: list[int] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)
    tag: str = ""
    links: list[str] = Field(default_factory=list)
    start_ms: int
    end_ms: int
    planned_at_s: float | None = None
    planned_duration_s: float | None = None


class FaultSkipped(_Record):
    """A fault of the schedule not applied: its target could not be resolved, or its trigger's
    delay outlasted the schedule; the run is not exercised."""

    type: Literal["fault_skipped"] = "fault_skipped"
    ts_ms: int
    kind: str
    target: str
    reason: str


class TriggerFired(_Record):
    """A trigger's event was observed; the fault follows after ``delay_s``."""

    type: Literal["trigger"] = "trigger"
    ts_ms: int
    fault: int
    kind: str
    target: str
    on: str
    observed: str
    delay_s: float = 0.0


class TriggerUnfired(_Record):
    """A trigger whose event never came before the schedule ended: the run is not exercised."""

    type: Literal["trigger_unfired"] = "trigger_unfired"
    ts_ms: int
    fault: int
    kind: str
    target: str
    on: str
    armed_at_s: float = 0.0


class Rebalance(_Record):
    """A group member's process was given, or gave up, partitions."""

    type: Literal["rebalance"] = "rebalance"
    ts_ms: int
    group: str
    consumer: str  # the member's incarnation (g-1, g-1.2)
    kind: Literal["assign", "revoke", "lost"]
    partitions: list[int]
    generation: int


class CommitRefused(_Record):
    """A group member's commit the coordinator refused (a stale generation, a moving coordinator)."""

    type: Literal["commit_refused"] = "commit_refused"
    ts_ms: int
    group: str
    consumer: str
    error: str
    generation: int


Event = Annotated[WorkloadStart | WorkloadEnd | Note | EpochsDriven | Formation | ToolFailed | IsrNotRestored
                  | State | FaultStart | Fault | FaultSkipped | TriggerFired | TriggerUnfired | Rebalance
                  | CommitRefused, Field(discriminator="type")]
RECORD_TYPES: tuple[type[_Record], ...] = (WorkloadStart, WorkloadEnd, Note, EpochsDriven, Formation, ToolFailed,
                                            IsrNotRestored, State, FaultStart, Fault, FaultSkipped, TriggerFired,
                                            TriggerUnfired, Rebalance, CommitRefused)
TYPE_NAMES = tuple(t.model_fields["type"].default for t in RECORD_TYPES)
_EVENT = TypeAdapter(Event)


def as_line(event: _Record) -> str:
    """One record as its events.jsonl line: its type, then what was set (defaults are left out)."""
    return json.dumps({"type": event.type, **event.model_dump(mode="json", exclude_unset=True)},  # type: ignore[attr-defined]
                      default=str)


def parse(text: str, where: str) -> Event:
    """One line as a validated, typed record; EventError naming ``where`` (file:line)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise EventError(f"{where}: not a JSON object ({e.msg})") from e
    if not isinstance(raw, dict):
        raise EventError(f"{where}: not a JSON object")
    if raw.get("type") not in TYPE_NAMES:
        raise EventError(f"{where}: type {raw.get('type')!r} is not an event type (allowed: {', '.join(TYPE_NAMES)})")
    try:
        return _EVENT.validate_python(raw)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err["loc"][1:] if not str(x).startswith("literal["))
        raise EventError(f"{where}: {raw['type']} record: key '{key}': {err['msg']}") from e


def read(path: Path) -> list[Event]:
    """Every record of an events.jsonl file, validated and typed, in file order; [] when there is none."""
    path = Path(path)
    if not path.exists():
        return []
    return [parse(line, f"{path}:{n}") for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]


def from_dicts(rows: list[dict], where: str = "events") -> list[Event]:
    """Records given as dicts (a test's, another harness's), validated and typed as ``read`` does."""
    return [parse(json.dumps(r), f"{where}[{i}]") for i, r in enumerate(rows)]


class EventLog:
    """events.jsonl being written: typed records appended one line each, safe to share between threads."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._f = open(self.path, "a")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()

    def write(self, event: _Record) -> None:
        line = as_line(event)
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


def _shape(annotation: object) -> str:
    """A key's type in words a table can hold: int, list[int], QuorumSample, one of 'a', 'b'; "or null"."""
    text = str(annotation).replace("typing.", "").replace("harness.history.events.", "").replace("<class '", "")
    text = text.replace("'>", "")
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional["):-1] + " | None"
    if text.startswith("Literal["):
        text = "one of " + text[len("Literal["):].replace("]", "", 1)
    return text.replace(" | None", " or null").replace("NoneType", "null")


def doc_table() -> str:
    """The record types as docs/run-directory.md shows them (a test keeps that copy identical)."""
    rows = ["| type | what it records | keys (? optional) |", "|---|---|---|"]
    for t in RECORD_TYPES:
        detail = issubclass(t, FaultDetail)
        keys = [f"`{n}` {_shape(f.annotation)}" + ("" if f.is_required() else "?")
                for n, f in t.model_fields.items() if n != "type" and not (detail and n in FaultDetail.model_fields)]
        if detail:
            keys.append("the fault details below")
        doc = " ".join((t.__doc__ or "").split()).replace("``", "`")
        rows.append(f"| `{t.model_fields['type'].default}` | {doc} | {', '.join(keys)} |")
    rows += ["", "| fault detail (on `fault_start` and `fault`, each optional) | shape |", "|---|---|"]
    rows += [f"| `{n}` | {_shape(f.annotation)} |" for n, f in FaultDetail.model_fields.items()]
    parts = [("PartitionSample", PartitionSample), ("QuorumSample", QuorumSample), ("NodeSample", NodeSample),
             ("PowerLossCut", PowerLossCut)]
    rows += ["", "| part | keys |", "|---|---|"]
    rows += [f"| {name} | " + ", ".join(f"`{n}` {_shape(f.annotation)}" + ("" if f.is_required() else "?")
                                        for n, f in m.model_fields.items()) + " |" for name, m in parts]
    return "\n".join(rows)
