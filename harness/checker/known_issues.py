"""Known bugs whose symptoms are anomalies kchaos counts, each matched by its mechanism, not its
symptom. A record names the anomalies the bug produces, the machinery a run must use for it to
apply (a configuration), and where it can, the line of the run's own logs that shows the mechanism
at work. A run is labelled with a bug only when its logs hold that line; a run that shows the
symptom in the right configuration without it is listed as unexplained, with the line that was
looked for, so that a stall or a regression nobody has explained does not arrive pre-labelled.

A record without log evidence (``evidence=None``: nothing a broker or client logs by default shows
the mechanism) is listed as consistent with the run's configuration, never as its cause: the anomaly
stays unexplained, as for a record whose line the run's logs lack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.checker.excuses import Config, client_label
from harness.checker.verdict import NOT_HEALED, KnownIssue
from harness.history import RunConfig
from harness.versions import version_key


@dataclass(frozen=True)
class Evidence:
    """A line of the run's logs that shows a mechanism at work: the brokers' and the in-process
    clients' under ``logs/``, each group member's (a process of its own) under ``members/GROUP/``."""

    logs: tuple[str, ...]  # globs under the run directory: "logs/kafka-*.log", "members/*/*.log"
    pattern: str  # a regular expression one line must match
    shows: str  # what such a line shows

    def find(self, run_dir: Path | None) -> str | None:
        """The first matching line, as "file: line" (cut at 400 characters), or None."""
        if run_dir is None or not run_dir.is_dir():
            return None
        rx = re.compile(self.pattern)
        for path in [p for g in self.logs for p in sorted(run_dir.glob(g))]:
            with path.open(errors="replace") as f:
                for line in f:
                    if rx.search(line):
                        return f"{path.relative_to(run_dir)}: {line.rstrip()[:400]}"
        return None

    def missing(self) -> str:
        """What a run without the line lacks, for the verdict to say."""
        return f"no line matching /{self.pattern}/ in {' or '.join(self.logs)}: {self.shows}"


@dataclass(frozen=True)
class KnownIssueRecord:
    issue: str  # e.g. "KAFKA-17754", or "kchaos-F1" for kchaos's own findings (docs/findings.md)
    anomalies: tuple[str, ...]  # what it produces
    needs: str  # the machinery the run must use (a key of ``_machinery``)
    why: str  # the mechanism, in a sentence
    evidence: Evidence | None  # the log line that shows the mechanism; None: none does


KNOWN_ISSUES = (
    KnownIssueRecord(
        "KAFKA-17754", ("aborted_read", "torn_txn", "lost", "precommitted_read"), "transactions_v1",
        "a delayed produce or AddPartitions request from one transaction can land in the next, so read_committed "
        "readers see aborted records and committed transactions lose records or tear; KIP-890 (transaction "
        "version 2, Kafka 4.0+) fences such requests only with client support, which librdkafka lacks", None),
    KnownIssueRecord(
        "KAFKA-17582", ("eos_lost", "group_unseen"), "copier",
        "after an aborted transaction the consumer does not rewind to the committed offsets, so a later commit "
        "can skip input records that were never copied", None),
    KnownIssueRecord(
        "librdkafka#4953", ("duplicate",), "librdkafka_idempotent",
        "after a produce request times out or is refused with OUT_OF_ORDER_SEQUENCE, librdkafka bumps the "
        "idempotent producer's epoch and sends the batch again with new sequence numbers, which the broker cannot "
        "recognise as a retry: a record written twice",
        Evidence(("logs/clients.log",), r"Beginning partition drain in state \S+ for PID\{[^}]*\} epoch bump",
                 "librdkafka bumped the idempotent producer's epoch after in-flight requests failed (its debug "
                 "context eos, on for kchaos's idempotent producers; the reason follows the colon: messages timed "
                 "out, or a sequence refused), after which it sends the batches again under new sequence numbers")),
    KnownIssueRecord(
        "confluent-kafka-go#921", ("lost",), "librdkafka_idempotent",
        "librdkafka's idempotent producer takes a later batch's success as proof that the partition's earlier "
        "batches were written and reports them delivered without an offset (an implicit ack); a partition that "
        "does not know the producer (a new or recreated topic, a producer new to the partition) refuses one "
        "request with a retriable error (NOT_ENOUGH_REPLICAS, NOT_LEADER) and accepts the next, whatever its "
        "sequence, so the refused batch is reported delivered and is in no log (librdkafka's own report, "
        "confluentinc/confluent-kafka-go#921, open)",
        Evidence(("logs/clients.log",), r"implicitly acked by subsequent batch success",
                 "librdkafka acknowledged messages for a later batch's success (its debug context eos, on for "
                 "kchaos's idempotent producers; the line follows a request that timed out with its batch written "
                 "too, so a lost record's own delivery report without an offset is what ties the two)")),
    KnownIssueRecord(
        "kchaos-F3", ("lost", "torn_txn"), "librdkafka_transactional",
        "librdkafka's transactional producer aborts a transaction that holds a batch whose Produce request may have "
        "been written (its answer lost with the connection) without bumping the producer epoch: the abort purges "
        "the batch and moves the partition's sequence base past it, so the next transaction's first batch goes out "
        "with the purged batch's sequence numbers in the same epoch, the broker answers it as a duplicate with the "
        "aborted batch's offsets, and the committed records are in no log (docs/findings.md F3)",
        Evidence(("logs/clients.log",),
                 r"advancing epoch base msgid to \d+ due to \d+ message\(s\) in aborted transaction",
                 "librdkafka purged an aborted transaction's messages and moved the partition's sequence base past "
                 "them (its ADVBASE line, debug context eos, on for kchaos's transactional producers)")),
    KnownIssueRecord(
        "KAFKA-14034", ("duplicate",), "java_idempotent",
        "when Kafka's Java idempotent producer bumps its epoch (a batch expired or failed), it gives the batches "
        "still in flight new sequence numbers under the new epoch and sends them again; a batch the broker had "
        "already appended is then written a second time under its new identity",
        Evidence(("logs/clients.log",), r"Resetting sequence number of batch with current sequence",
                 "the Java producer re-sequenced an in-flight batch after an epoch bump (its TransactionManager "
                 "logs it at INFO)")),
    KnownIssueRecord(
        "kchaos-F2", (NOT_HEALED,), "zookeeper",
        "in ZooKeeper mode, an ISR change whose ZooKeeper write was applied but unanswered (the controller's "
        "connection lost meanwhile) is refused when the controller sends it again; the controller keeps the old "
        "ISR and the leader waits for metadata that never comes (docs/findings.md F2; not reported upstream)",
        Evidence(("logs/kafka-*.log",), r"Failed to update ISR to .* bad ZK version",
                 "the controller refused its own retried ISR write (\"bad ZK version\")")),
    KnownIssueRecord(
        "KAFKA-19972", ("share_over_delivered",), "share_release_decrease",
        "Kafka 4.1 gives a share-group member's acquired records back with their delivery count lowered when its "
        "share session ends (a crash, a connection closed), so a record that kills every member given it is "
        "delivered again and again under the same count, past the attempt limit; fixed in 4.2.0, which keeps "
        "the count the acquisition raised", None),
    KnownIssueRecord(
        "kafka-go#1446", ("uncommitted_read",), "kafka_go_reader",
        "kafka-go's readers hand the control records that mark a transaction's commit or abort to the "
        "application as messages (a 4-byte key and 6-byte value at an offset that holds no data), and under "
        "read_committed they return aborted records too: kafka-go implements no client side of transactions "
        "(segmentio/kafka-go PR #1446, open; issue #1332, open)",
        Evidence(("logs/clients.log", "members/*/*.log"), r"kafka-go returned a transaction marker as a record",
                 "a kafka-go reader returned a message with a control record's key and value (the kafka-go driver "
                 "logs each)")),
    KnownIssueRecord(
        "kchaos-F1", ("offset_regression", "coordinator_regression"), "librdkafka_async_commits",
        "librdkafka retries an OffsetCommit that failed with the coordinator's connection and sends the retry "
        "after newer commits of the same partition; the coordinator keeps the last one it is given "
        "(docs/findings.md F1; not reported upstream)",
        Evidence(("members/*/*.log", "logs/clients.log"),
                 r"Retrying OffsetCommitRequest|marking the coordinator \(-?\d+\) dead: .*OffsetCommit"
                 r"|possibly held back by preceeding OffsetCommitRequest",
                 "a member's OffsetCommit failed with its connection and was queued again (librdkafka's debug "
                 "log, contexts cgrp or protocol), or a request timed out behind an OffsetCommit in flight, which "
                 "takes the connection down with the commit (socket.max.fails=1; logged at every level)")),
)


def known_issues(run: RunConfig, producers: Iterable[Config], anomalies: dict[str, int],
                 run_dir: Path | None = None) -> list[KnownIssue]:
    """Every known bug whose anomalies the run counted in the configuration it needs (``producers``:
    each producer's resolved settings): ``shown`` True where the run's logs hold its evidence
    (``evidence`` is that line), False where they do not (the run's anomaly is unexplained), None
    for a bug no log line shows."""
    uses = _machinery(run, list(producers))
    out = []
    for k in KNOWN_ISSUES:
        seen = [a for a in k.anomalies if anomalies.get(a)]
        if not seen or not uses[k.needs]:
            continue
        if k.evidence is None:
            out.append(KnownIssue(issue=k.issue, anomalies=seen, why=k.why))
            continue
        line = k.evidence.find(run_dir)
        out.append(KnownIssue(issue=k.issue, anomalies=seen, why=k.why, shown=line is not None,
                              evidence=line or k.evidence.missing()))
    return out


def _machinery(run: RunConfig, producers: list[Config]) -> dict[str, bool]:
    """Which of the machinery known bugs live in the run used."""
    tv = run.features.get("transaction.version", 0)
    return {"transactions_v1": any(c.transactional and not speaks_transaction_v2(c.client, tv) for c in producers),
            "copier": bool(run.copiers),
            "librdkafka_idempotent": any(_librdkafka(c.client) and c.idempotence and not c.transactional
                                         for c in producers),
            "librdkafka_transactional": any(_librdkafka(c.client) and c.transactional for c in producers),
            "java_idempotent": any(c.client.startswith("java") and c.idempotence and not c.transactional
                                   for c in producers),
            "zookeeper": run.mode == "zk",
            "share_release_decrease": bool(run.share_groups) and run.kafka_version is not None
                                      and version_key(run.kafka_version) < (4, 2),
            "kafka_go_reader": any(c.name == "kafka-go" for c in run.clients),
            "librdkafka_async_commits": any(_librdkafka(client_label(g.client or run.client))
                                            and g.commit in ("async", "auto") for g in run.groups)}


def speaks_transaction_v2(client: str, cluster_level: int) -> bool:
    """Whether a transactional client's transactions run on KIP-890's second version: the cluster
    finalized transaction.version 2 and the client is kafka-clients 4.0 or later (librdkafka speaks
    the first version only)."""
    name, _, version = client.partition(" ")
    major = version.split(".")[0]
    return cluster_level >= 2 and name == "java" and major.isdigit() and int(major) >= 4


def _librdkafka(client: str) -> bool:
    """A client label is librdkafka's; a run.json that names no client is from before the Java driver: librdkafka's."""
    return client == "" or client.startswith("librdkafka")
