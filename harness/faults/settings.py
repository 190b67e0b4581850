"""The settings a fault takes beyond when, what and where: declared once, here, with their types,
bounds, defaults and meaning. A scenario's ``[[faults]]`` table, the nemesis's planned fault, the
pytest plugin's ``nemesis.fault`` and the fault reference (docs/faults.md) all read this model;
which kinds take which setting is each kind's record (``FaultKind.takes``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.mechanisms import DISK_OPS, KAFKA_APIS

DiskOp = Literal[DISK_OPS]  # type: ignore[valid-type]
KafkaApi = Literal[tuple(KAFKA_APIS)]  # type: ignore[valid-type]
# The topic configs an operator's alter_config changes at run time: what decides a write's durability
# (min.insync.replicas, unclean election) and how long the log keeps it (retention).
TOPIC_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable", "retention.ms", "retention.bytes")
TopicConfig = Literal[TOPIC_CONFIGS]  # type: ignore[valid-type]


class FaultSettings(BaseModel):
    """What a fault of some kinds takes: a delay's latency, a throttle's rate, a cut's direction, an
    upgrade's version or feature, a skew's offset, a disk fault's operation and directory. A setting
    a kind does not take keeps its default, which every kind that does take it may rely on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    latency_ms: int = Field(200, ge=0, description="delays and slow disks: the added latency (ms)")
    jitter_ms: int = Field(0, ge=0, description="delays and slow disks: +- this much on each (ms)")
    rate_kbps: int = Field(64, ge=1, description="bandwidth: the rate every link is throttled to (KB/s)")
    stream: Literal["both", "upstream", "downstream"] = Field(
        "both", description="cuts and delays: one direction only. upstream is what the connecting side sends (a "
                            "follower's fetch requests), downstream what it receives (the leader's fetch responses, "
                            "which carry the high watermark)")
    to: str | None = Field(None, description="rolling_upgrade: the Kafka version every node is moved to")
    feature: str | None = Field(None, description="feature_upgrade: the feature (metadata.version, "
                                                  "transaction.version, ...)")
    level: int | None = Field(None, ge=0, description="feature_upgrade: the level (default: the newest production "
                                                      "level the running version has)")
    offset_s: float | None = Field(None, description="clock_skew, client_clock_skew: how far the node's or the "
                                                     "client's wall clock jumps (seconds, forward or back)")
    op: DiskOp | None = Field(None, description="disk_error: the operation that fails (default write)")
    change: Literal["move", "add", "remove"] | None = Field(
        None, description="reassign: the target's replica moved to to_broker, a replica added on to_broker, or the "
                          "target's replica removed (default move)")
    to_broker: int | None = Field(None, ge=1, description="reassign: the broker that takes the replica (default: the "
                                                          "lowest broker holding none)")
    throttle_kbps: int | None = Field(None, ge=1, description="reassign: the replication throttle while the "
                                                              "reassignment runs (KB/s; default none)")
    config: TopicConfig | None = Field(None, description="alter_config: the run's topic config to change")
    value: str | None = Field(None, description="alter_config: the value it takes until the heal, which gives the "
                                                "topic its own value back")
    offsets: Literal["earliest", "latest", "delete"] | None = Field(
        None, description="reset_offsets: where the group's committed offsets of the run's topic go: its "
                          "partitions' first or last offsets, or deleted (the group then starts where its "
                          "auto.offset.reset says; default earliest)")
    new_partitions: int | None = Field(None, ge=1, le=16, description="add_partitions: how many partitions the "
                                                                      "run's topic gains (default 1)")
    dir: int | None = Field(None, ge=1, description="disk faults: which log directory of the broker (from 1; "
                                                    "default: every one; log_dir_failure: 1)")
    api: KafkaApi | None = Field(None, description="lose_answers: the request type whose answers are lost (Kafka's "
                                                   "name for it in snake case: write_txn_markers, end_txn, produce, "
                                                   "...)")

    @model_validator(mode="after")
    def _check_config_value(self) -> FaultSettings:
        if self.config is not None and self.value is not None and (why := config_value_refused(self.config,
                                                                                                self.value)):
            raise ValueError(f"value: {why}")
        return self

    def settings(self) -> dict:
        """Each setting's value, whatever else the model holds (a planned fault's when and where)."""
        return {k: getattr(self, k) for k in SETTINGS}

    def not_taken(self, takes: tuple[str, ...]) -> list[str]:
        """The settings given another value than their default that a kind taking ``takes`` ignores."""
        return [k for k in SETTINGS if k not in takes and getattr(self, k) != FaultSettings.model_fields[k].default]


# Every setting, in the order the reference and run.json list them.
SETTINGS: tuple[str, ...] = tuple(FaultSettings.model_fields)


def config_value_refused(config: str, value: str) -> str | None:
    """Why ``value`` is no value of topic config ``config`` as Kafka reads it, or None."""
    if config == "unclean.leader.election.enable":
        return None if value in ("true", "false") else f"{value!r} is no value of {config} (allowed: true, false)"
    least = 1 if config == "min.insync.replicas" else -1
    if not value.lstrip("-").isdigit() or int(value) < least:
        return f"{value!r} is no value of {config} (allowed: a whole number from {least})"
    return None
