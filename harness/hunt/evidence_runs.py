"""A finding's evidence runs and the archive a tracker takes as an attachment.

Once a finding is confirmed, its minimal schedule runs again with the components it concerns
logging in full: the brokers' loggers of the partition, its state changes and the controller (for
replication anomalies), of the group coordinator (for groups), of the transaction coordinator (for
transactions), all at DEBUG; the librdkafka clients with the debug contexts of what they do. The
unfiltered logs of those runs, the finding's own runs, its report, bug.md, finding.json and
affected.json go into one ``.tar.gz`` beside the finding (``kchaos evidence FINDING_DIR``).
"""

from __future__ import annotations

import tarfile
import time
from pathlib import Path

from harness.checker.verdict import NOT_HEALED
from harness.hunt.affected import AFFECTED_JSON, FINDING_JSON, read_finding
from harness.hunt.write_up import scenario_toml
from harness.run import matrix
from harness.scenario import Scenario, load

# The leader's requests to change the ISR log under their class's name: DefaultAlterPartitionManager
# from 3.x, DefaultAlterIsrManager in 2.8 (its interface's name is no parent logger of either).
REPLICATION = {"kafka.cluster.Partition": "DEBUG", "state.change.logger": "TRACE", "kafka.controller": "DEBUG",
               "kafka.zk.KafkaZkClient": "DEBUG", "org.apache.kafka.controller": "DEBUG",
               "kafka.server.ReplicaFetcherThread": "DEBUG", "kafka.server.DefaultAlterPartitionManager": "DEBUG",
               "kafka.server.DefaultAlterIsrManager": "DEBUG"}
GROUPS = {"kafka.coordinator.group": "DEBUG", "org.apache.kafka.coordinator.group": "DEBUG",
          "kafka.request.logger": "DEBUG"}
TRANSACTIONS = {"kafka.coordinator.transaction": "DEBUG", "org.apache.kafka.coordinator.transaction": "DEBUG",
                "kafka.request.logger": "DEBUG"}

# The brokers' loggers each anomaly class concerns.
LOGGERS: dict[str, dict[str, str]] = {
    **dict.fromkeys(("lost", "divergence", "uncommitted_read", NOT_HEALED, "duplicate", "nonmonotonic_send",
                     "phantom"), REPLICATION),
    **dict.fromkeys(("offset_regression", "coordinator_regression", "group_unseen", "poll_skip", "nonmonotonic_poll"),
                     GROUPS),
    **dict.fromkeys(("aborted_read", "torn_txn", "precommitted_read", "eos_duplicate", "eos_lost"), TRANSACTIONS),
}
# librdkafka's debug contexts for each kind of client table.
PRODUCER_DEBUG = "msg,protocol,broker,eos"
GROUP_DEBUG = "cgrp,protocol,broker,fetch"

EVIDENCE_TOML = "evidence.toml"
ARCHIVED = ("bug.md", FINDING_JSON, AFFECTED_JSON, "minimal.toml", "original.toml", EVIDENCE_TOML, "report.html",
            "minimal", "original", "evidence")


def overrides(s: Scenario, anomaly: str) -> list[str]:
    """``--set`` overrides that turn on full logging of what ``anomaly`` concerns in ``s``: the
    brokers' loggers, and the debug contexts of each librdkafka table (a Java table logs through
    kafka-clients' own configuration, unchanged)."""
    levels = {**LOGGERS.get(anomaly, REPLICATION), **s.cluster.get("log_levels", {})}
    out = ["cluster.log_levels={" + ", ".join(f'"{k}" = "{v}"' for k, v in levels.items()) + "}"]
    for i, p in enumerate(s.producers):
        if _librdkafka(s, p):
            out.append(f'producers.{i}.config.debug="{PRODUCER_DEBUG}"')
    for i, g in enumerate(s.groups):
        if _librdkafka(s, g):
            out.append(f'groups.{i}.config.debug="{GROUP_DEBUG}"')
    return out


def _librdkafka(s: Scenario, table) -> bool:
    return (getattr(table, "client", None) or s.client or "librdkafka") == "librdkafka"


def plan(finding_dir: Path, runs: int) -> matrix.Plan:
    """The evidence runs: ``FINDING_DIR/evidence.toml`` (the minimal schedule with full logging, on
    its own version and mode) at seeds 1..runs; bad input (FindingError, ScenarioError) before
    anything runs."""
    finding = read_finding(finding_dir)
    minimal = finding_dir / "minimal.toml"
    s = load(minimal, overrides(load(minimal), finding["anomaly"]))
    path = finding_dir / EVIDENCE_TOML
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(scenario_toml(s.model_copy(update={"name": f"{s.name}-evidence"})))
    tmp.replace(path)
    return matrix.plan([str(path)], None, None, None, list(range(1, runs + 1)))


def run(finding_dir: Path, p: matrix.Plan, announce: matrix.Announce,
        spark_master: str | None = None) -> tuple[Path, list[Path]]:
    """Run and check the evidence runs under ``FINDING_DIR/evidence``, then pack the archive: the
    archive, and the evidence runs of ``p`` that finished (now or in an earlier call)."""
    out = finding_dir / "evidence"
    finished = matrix.run_cells(p, out, announce, check=matrix.check(spark_master))
    matrix.check_and_report(finished, out, spark_master)
    return pack(finding_dir), finished


def pack(finding_dir: Path) -> Path:
    """``FINDING_DIR/NAME-evidence-TIME.tar.gz``: what the finding holds of ARCHIVED (the affected
    runs' directories left out: their table is in affected.json and bug.md), written beside and
    renamed when complete."""
    name = f"{finding_dir.name}-evidence-{time.strftime('%Y%m%d-%H%M%S')}"
    final = finding_dir / f"{name}.tar.gz"
    tmp = final.with_name(final.name + ".partial")
    with tarfile.open(tmp, "w:gz") as tar:
        for item in ARCHIVED:
            if (finding_dir / item).exists():
                tar.add(finding_dir / item, arcname=f"{name}/{item}")
    tmp.replace(final)
    return final
