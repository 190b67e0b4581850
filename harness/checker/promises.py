"""What each configuration promises, under which faults: the one promise table.

The verdict of a run is "fail" only when an anomaly the configuration promises never to show was
counted. Everything else that is counted is reported as expected, with the reason (the setting or
the fault that permits it). Each anomaly class states its own rule (``promise`` in its module under
harness/checker/anomaly/); this module asks every class, and renders the table the README and the
HTML report show (``promise_table_markdown``).
"""

from __future__ import annotations

from harness.checker.anomaly import ANOMALIES, BY_NAME, CLASSES, GROUP_ANOMALIES, V1_ANOMALIES, V2_ANOMALIES
from harness.checker.excuses import Config, Excuses, Promise

__all__ = ["ANOMALIES", "DOC_CASES", "DOC_CASES_V2", "GROUP_ANOMALIES", "V1_ANOMALIES", "Config", "Promise",
           "group_promises", "promise_table_markdown", "promises"]


def promises(c: Config) -> dict[str, Promise]:
    """Every anomaly class's promise for configuration ``c``."""
    x = Excuses.of(c)
    return {k.name: k.promise(x) for k in CLASSES}


def group_promises(topic: Config, commit: str) -> dict[str, Promise]:
    """What a group may show, by how it commits, on a topic of configuration ``topic``."""
    x = Excuses.of(topic)
    return {a: BY_NAME[a].group_promise(x, commit) for a in GROUP_ANOMALIES}  # type: ignore[misc]


GROUP_DOC_CASES = [("manual commits after processing (sync or async), classic or consumer protocol", "sync"),
                   ("auto-commit, classic or consumer protocol", "auto")]


def group_table_markdown() -> str:
    """The group rows for a safe topic (acks=all, min.insync>=2, unclean off)."""
    rows = ["| group (safe topic; crashes, pauses, network faults, member churn) | " + " | ".join(GROUP_ANOMALIES)
            + " |", "|---|" + "---|" * len(GROUP_ANOMALIES)]
    for name, commit in GROUP_DOC_CASES:
        p = group_promises(Config("all", True, 2), commit)
        rows.append(f"| {name} | " + " | ".join("never" if p[a].promised else "may" for a in GROUP_ANOMALIES) + " |")
    return "\n".join(rows)


# Rows of the table as documented: (configuration, faults) -> anomalies promised absent.
DOC_CASES: list[tuple[str, Config]] = [
    ("acks=all, min.insync>=2, unclean off, idempotent", Config("all", True, 2)),
    ("acks=all, min.insync>=2, unclean off", Config("all", False, 2)),
    ("acks=all, min.insync=1", Config("all", False, 1)),
    ("acks=1", Config("1", False, 2)),
    ("acks=0", Config("0", False, 2)),
    ("unclean election on", Config("all", True, 2, unclean_election=True)),
    ("leader epochs off (old IBP)", Config("all", False, 1, leader_epochs=False)),
    ("acks=all, min.insync>=2 + power loss: no ELR, several brokers', or beside another broker's kill -9",
     Config("all", True, 2, faults=frozenset({"power_loss"}))),
    ("acks=all, min.insync>=2 + one broker's power loss and no other unclean shutdown, ELR on",
     Config("all", True, 2, eligible_leader_replicas=True, faults=frozenset({"power_loss"}))),
]


# The transactional rows, for the v2 anomalies (a transactional producer is idempotent with acks=all).
DOC_CASES_V2: list[tuple[str, Config]] = [
    ("transactional, min.insync>=2, unclean off (and the copier)", Config("all", True, 2, transactional=True)),
    ("transactional, min.insync=1", Config("all", True, 1, transactional=True)),
    ("transactional, unclean election on", Config("all", True, 2, unclean_election=True, transactional=True)),
    ("transactional + power loss, no ELR",
     Config("all", True, 2, faults=frozenset({"power_loss"}), transactional=True)),
]


def _table(cases: list[tuple[str, Config]], anomalies: tuple[str, ...]) -> list[str]:
    rows = ["| configuration (crashes, pauses, network faults) | " + " | ".join(anomalies) + " |",
            "|---|" + "---|" * len(anomalies)]
    for name, cfg in cases:
        p = promises(cfg)
        rows.append(f"| {name} | " + " | ".join("never" if p[a].promised else "may" for a in anomalies) + " |")
    return rows


def promise_table_markdown() -> str:
    """The tables the README and the report show: 'never' = promised absent, 'may' = expected. The
    replication anomalies for every configuration, then the v2 ones for transactional writers."""
    return "\n".join([*_table(DOC_CASES, V1_ANOMALIES), "", *_table(DOC_CASES_V2, V2_ANOMALIES), "",
                      group_table_markdown()])
