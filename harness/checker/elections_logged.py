"""Kafka's own account of its leader elections, from the run's container logs.

The state samples (every 250 ms) show who led before and after, and the ISR last sampled under the
old leader; they cannot show a replica that joined the ISR and took the lead between two samples,
nor the eligible leader replicas (KIP-966) a KRaft controller elects from when the ISR is empty.
Judged from the samples alone, both look like unclean elections. The active KRaft controller logs
the elections that are not clean ones at INFO (``PartitionChangeBuilder``):

    Setting new leader for topicId T, partition P to N using ELR. Previous partition: ...
    Setting new leader for topicId T, partition P to N using an unclean election. Previous ...

and a clean election at TRACE only. The second line is also what an election from the last known
leader (``canElectLastKnownLeader``: the ISR and ELR empty, the last leader back) writes, unclean
in Kafka's own words whatever ``unclean.leader.election.enable`` says. Topic ids are read from the
controllers' ``Replayed TopicRecord for topic NAME with topic ID T`` lines (a topic created again
under its name has one id per life). Only KRaft runs are read so: a ZooKeeper-mode controller logs
its elections otherwise, and they stay judged by the samples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.broker_log import log4j_epoch_ms

LOGS = "logs"
_STAMP = r"^\[(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO "
_ELECTED = re.compile(_STAMP + r"Setting new leader for topicId (?P<id>[\w-]+), partition (?P<partition>\d+) to "
                      r"(?P<leader>\d+) using (?P<how>ELR|an unclean election)")
_TOPIC_ID = re.compile(r"(?:Replayed TopicRecord for topic|Created topic) (?P<name>\S+) with topic ID (?P<id>[\w-]+)")


@dataclass(frozen=True)
class LoggedElection:
    """One election the controller logged: when, of which partition, to whom, and how ("elr" or
    "unclean")."""

    ts_ms: int
    partition: int
    leader: int
    how: str


@dataclass(frozen=True)
class ControllerAccount:
    """What the controllers logged of one topic's elections; ``known`` False where their logs do not
    name the topic (ZooKeeper mode, or no controller log): then nothing is known either way."""

    known: bool
    elections: tuple[LoggedElection, ...] = ()

    def near(self, partition: int, leader: int, after_ms: int, until_ms: int) -> LoggedElection | None:
        """The logged election of ``partition`` to ``leader`` in (after_ms, until_ms], the latest."""
        found = [e for e in self.elections if e.partition == partition and e.leader == leader
                 and after_ms < e.ts_ms <= until_ms]
        return max(found, key=lambda e: e.ts_ms, default=None)


def controller_account(run_dir: Path, topic: str) -> ControllerAccount:
    """The controllers' logged elections of ``topic``'s partitions in the run directory's logs."""
    lines = [line for path in sorted((run_dir / LOGS).glob("*.log")) for line in _read(path)]
    ids = {m["id"] for line in lines if (m := _TOPIC_ID.search(line)) and m["name"] == topic}
    if not ids:
        return ControllerAccount(known=False)
    seen = {LoggedElection(log4j_epoch_ms(m["stamp"]), int(m["partition"]), int(m["leader"]),
                           "elr" if m["how"] == "ELR" else "unclean")
            for line in lines if (m := _ELECTED.match(line)) and m["id"] in ids}
    return ControllerAccount(known=True, elections=tuple(sorted(seen, key=lambda e: e.ts_ms)))


def _read(path: Path) -> list[str]:
    """A log's lines that may be an election or a topic's id (the rest of a busy broker's log is skipped)."""
    with path.open(errors="replace") as f:
        return [line for line in f if "topic ID" in line or "Setting new leader" in line]
