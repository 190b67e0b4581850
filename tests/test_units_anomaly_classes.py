"""The anomaly-class registry: one complete record per class, nothing decided by its place in a list."""

from __future__ import annotations

import importlib

from harness.checker.anomaly import ANOMALIES, CLASSES, GROUP_ANOMALIES, PRODUCER_ANOMALIES, V1_ANOMALIES
from harness.checker.promises import DOC_CASES, DOC_CASES_V2, group_promises, promises


def test_every_class_is_one_module_with_a_complete_record():
    for c in CLASSES:
        module = importlib.import_module(f"harness.checker.anomaly.{c.name}")
        assert module.CLASS is c
        assert c.definition.startswith(f"{c.name}: "), "the definition is the contract's, named"
        assert c.count.__module__ == c.reference.__module__ == c.promise.__module__ == module.__name__
        assert c.label and len(c.label) <= 14, "a terminal column head"
        assert (c.group_promise is not None) == (c.owner == "group")
    assert len({c.label for c in CLASSES}) == len(CLASSES)


def test_the_contracts_split_and_owners_come_from_the_records():
    assert V1_ANOMALIES == ("lost", "divergence", "uncommitted_read", "duplicate", "nonmonotonic_send",
                            "nonmonotonic_poll", "phantom", "old_topic_read")
    assert set(GROUP_ANOMALIES) == {"group_unseen", "offset_regression", "coordinator_regression", "share_unseen",
                                    "share_accepted_redelivered", "share_rejected_redelivered", "share_over_delivered"}
    assert set(PRODUCER_ANOMALIES) == {"lost", "duplicate", "nonmonotonic_send", "torn_txn", "eos_duplicate",
                                       "eos_lost"}


def test_every_class_answers_for_every_documented_configuration():
    for _, cfg in DOC_CASES + DOC_CASES_V2:
        p = promises(cfg)
        assert list(p) == list(ANOMALIES) and all(p[a].anomaly == a and p[a].why for a in p)
    for commit in ("sync", "async", "auto", "transaction", "share"):
        assert set(group_promises(DOC_CASES[0][1], commit)) == set(GROUP_ANOMALIES)


def test_the_share_group_doc_has_each_share_class_definition_as_the_code_says():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "share-groups.md").read_text()
    for c in CLASSES:
        if c.name.startswith("share_"):
            text = c.definition.split("\n\n")[0].replace("\n", " ").split(": ", 1)[1]
            assert f"| `{c.name}` | {text} |" in doc, c.name
