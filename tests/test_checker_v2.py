"""The v2 anomalies (transactions, the exactly-once copier, group commits) on histories built here:
a clean transactional history, each anomaly planted alone, the promises they break, v2 bad input.

The clean history, partition 0 of topic t (markers take offsets 2, 5 and 8 and hold no record):

    offset  0   1   3   4   6   7
    value   a0  a1  b0  b1  c0  c1
    txn     p0:0    p0:1    p0:2      (p0:1 aborted, the others committed)

read live by c-ru (read_uncommitted: every record), c-rc (read_committed: a0 a1 c0 c1) and the
copier's consumer x-in (group gx, read_committed), whose producer x copies a0 a1 c0 c1 to topic
"out" in two committed transactions and commits gx's offsets 3 and 9 with them.
"""

from __future__ import annotations

import pytest

from harness.checker import ANOMALIES, check_runs, group_label
from harness.checker.promises import V1_ANOMALIES
from harness.history import HistoryError, RunConfig
from tests.histories import History

pytestmark = pytest.mark.spark

# Share groups' classes have their own histories (tests/test_checker_share.py).
V2_ANOMALIES = tuple(a for a in ANOMALIES if a not in V1_ANOMALIES and not a.startswith("share_"))
LOG = [("a0", 0, "p0:0"), ("a1", 1, "p0:0"), ("b0", 3, "p0:1"), ("b1", 4, "p0:1"), ("c0", 6, "p0:2"),
       ("c1", 7, "p0:2")]
COPIES = [("x-0", 0, "a0", "x:0"), ("x-1", 1, "a1", "x:0"), ("x-2", 3, "c0", "x:1"), ("x-3", 4, "c1", "x:1")]
RC = "read_committed"


def run_json() -> dict:
    safe = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    return {
        "run_id": "txn", "kafka_version": "3.9.1", "contract": "v2",
        "topics": [{"name": t, "replication_factor": 3, "config": safe} for t in ("t", "out")],
        "producers": [{"name": "p0", "acks": "all", "idempotence": True, "transactional": True, "topic": "t"},
                      {"name": "x", "acks": "all", "idempotence": True, "transactional": True, "topic": "out"}],
        "copiers": [{"producer": "x", "group": "gx", "input_topics": ["t"], "output_topics": ["out"]}],
    }


def txn_history(plant: str | None = None) -> History:
    """The clean history above, with one anomaly planted (``plant``: its name) where it belongs."""
    h = History(run=run_json())
    h.topic = "t"
    for value, offset, txn in LOG:
        ok = not (plant == "torn_txn" and value == "c1")  # indeterminate: not acknowledged, so not "lost"
        h.send(value, offset if ok else None, status="ok" if ok else "info", txn=txn)
    h.txn("p0:0", "committed", commit=h.ts - 45).txn("p0:1", "aborted").txn("p0:2", "committed", commit=h.ts - 5)
    h.ts += 100  # every live read below comes after every commit
    final = [(v, o) for v, o, _ in LOG if not (plant == "torn_txn" and v == "c1")]
    ru = [(v, o) for v, o in final if not (plant == "poll_skip" and v == "b0")]
    for v, o in ru:
        h.read(v, o, consumer="c-ru", isolation="read_uncommitted")
    committed = [(v, o) for v, o in final if not v.startswith("b")]
    rc = sorted(committed + ([("b0", 3)] if plant == "aborted_read" else []), key=lambda x: x[1])
    for v, o in rc:
        early = plant == "precommitted_read" and v == "a0"
        h.read(v, o, consumer="c-rc", isolation=RC, ts=h.txns[0]["commit_ts_ms"] - 1 if early else None)
    for v, o in committed:
        if not (plant == "group_unseen" and v == "c1"):
            h.read(v, o, consumer="x-in", isolation=RC, group="gx", generation=1)
    for v, o in final:
        h.read(v, o, phase="final", consumer="final")
        for b in (1, 2, 3):
            h.replica(b, v, o)
    h.commit("gx", 3).commit("gx", 9)
    if plant == "offset_regression":
        h.commit("gx", 6)
    # The coordinator's record, in the order it wrote it: the commit of 6 failed at the member and
    # was written after 9 when the regression is the coordinator's alone. The acknowledged commit of
    # 6 is not in it (lost with the coordinator's log), so the acknowledged regression stands.
    written = [3, 9, 6] if plant == "coordinator_regression" else [3, 9]
    for log_offset, offset in enumerate(reversed(written)):  # rows in any order: the log orders them
        h.commit("gx", offset, phase="written", log_offset=len(written) - 1 - log_offset)
    h.commit("gx", 9, phase="final")
    copier_output(h, plant)
    return h


def copier_output(h: History, plant: str | None) -> None:
    """The copier's sends to "out" and their transactions; the final log of "out"."""
    h.topic = "out"
    copies = list(COPIES)
    if plant == "eos_duplicate":
        copies.append(("x-4", 6, "a0", "x:2"))
    if plant == "eos_lost":  # c1's only copy is in a transaction of its own, aborted
        copies[3] = ("x-3", 4, "c1", "x:9")
    for value, offset, source, txn in copies:
        h.send(value, offset, producer="x", txn=txn, source=source)
        h.read(value, offset, phase="final", consumer="final")
        for b in (1, 2, 3):
            h.replica(b, value, offset)
    h.txn("x:0", "committed", producer="x").txn("x:1", "committed", producer="x")
    if plant == "eos_duplicate":
        h.txn("x:2", "committed", producer="x")
    if plant == "eos_lost":
        h.txn("x:9", "aborted", producer="x")
    h.topic = "t"


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    """The clean history and one with each v2 anomaly planted, checked together in one Spark job
    (as `kchaos check` checks many runs): name -> verdict, each checked against the reference."""
    root = tmp_path_factory.mktemp("v2")
    hs = {name: txn_history(None if name == "clean" else name) for name in ("clean", *V2_ANOMALIES)}
    hs |= {f"group-{commit}": group_history(commit) for commit in ("auto", "sync")}
    hs["group-async-regressed"] = async_commits_regressed()
    hs["group-async-regressed-no-retry"] = async_commits_regressed(client_log="")
    hs["group-async-regressed-timed-out"] = async_commits_regressed(client_log=TIMED_OUT_BEHIND_COMMIT)
    hs["group-async-regressed-java"] = async_commits_regressed({"name": "java", "version": "kafka-clients 3.9.1"})
    hs["group-async-regressed-java-group"] = async_commits_regressed(group_client={"name": "java",
                                                                                  "version": "kafka-clients 4.1.2"})
    hs |= {f"acknowledged-2-9-6-written-{'-'.join(map(str, w))}": acknowledged_then_written(w) for w in WRITTEN_ORDERS}
    hs["torn-across-producers"] = torn_across_producers()
    hs["aborted-and-unknown"] = aborted_and_unknown()
    hs["v1-poll-skip"] = v1_poll_skip()
    hs["poll-skip-by-generation"] = poll_skip_by_generation()
    verdicts = check_runs([h.write(root / name) for name, h in hs.items()])
    for h, v in zip(hs.values(), verdicts, strict=True):
        assert v.anomalies == h.reference(), f"{v.run_dir}: the Spark checker and the reference must agree"
    return dict(zip(hs, verdicts, strict=True))


def test_clean_transactional_history_has_no_anomaly(planted):
    """Aborted records are in the final log and read by the read_uncommitted reader: not an anomaly."""
    v = planted["clean"]
    assert v.contract == "v2"
    assert v.anomalies == dict.fromkeys(ANOMALIES, 0)
    assert v.verdict == "pass" and not v.known_issues
    labels = {c.config for c in v.by_config}
    assert all(" txn" in label for label in labels)


@pytest.mark.parametrize("anomaly", V2_ANOMALIES)
def test_each_v2_anomaly_planted_alone_is_counted_once_and_breaks_a_promise(planted, anomaly):
    v = planted[anomaly]
    assert v.anomalies == {**dict.fromkeys(ANOMALIES, 0), anomaly: 1}
    assert len(v.examples[anomaly]) == 1
    assert v.verdict == "fail"
    assert anomaly in {a for _, a, _ in v.broken()}


def group_history(commit: str) -> History:
    """A subscribing group g on the clean history's partition: members g-1 and g-2 return a0 a1 b0 b1
    c0 between them, a1 twice (g-2 again after a rebalance), never c1, and g commits offset 9 (past
    c1): one group_unseen, one record redelivered."""
    run = {**run_json(), "groups": [{"name": "g", "protocol": "classic", "assignor": "range", "commit": commit,
                                     "topics": ["t"]}]}
    h = txn_history(None)
    h.run = run
    for v, o, member, gen in [("a0", 0, "g-1", 1), ("a1", 1, "g-1", 1), ("a1", 1, "g-2", 1), ("b0", 3, "g-2", 1),
                              ("b1", 4, "g-2", 1), ("c0", 6, "g-2", 1)]:
        h.read(v, o, consumer=member, isolation="read_uncommitted", group="g", generation=gen)
    h.commit("g", 2).commit("g", 9).commit("g", 9, phase="final")
    return h


RETRIED_COMMIT = ("%7|1795610000.468|RETRY|rdkafka#consumer-1| [thrd:GroupCoordinator]: GroupCoordinator: Retrying "
                  "OffsetCommitRequest (v9, 102 bytes, retry 1/2, prev CorrId 12) in 100ms\n")

# A request on the coordinator's connection timed out with an OffsetCommit in flight ahead of it:
# librdkafka takes the connection down (socket.max.fails=1) and the commit with it. Logged at
# librdkafka's default level, where the retry itself is logged only at debug.
TIMED_OUT_BEHIND_COMMIT = (
    "%5|1795816334.567|REQTMOUT|rdkafka#consumer-1| [thrd:GroupCoordinator]: GroupCoordinator/3: Timed out "
    "ConsumerGroupHeartbeatRequest in flight (after 1523ms, timeout #0): possibly held back by preceeding "
    "OffsetCommitRequest with timeout in 58396ms\n")


def async_commits_regressed(client: dict | None = None, group_client: dict | None = None,
                            client_log: str = RETRIED_COMMIT) -> History:
    """Group g, committing asynchronously (with librdkafka unless ``client``, the run's, or
    ``group_client``, the group's own, says otherwise), acknowledged 9 and then 6 (F1 in docs/findings.md);
    the members' log has librdkafka's retry of an OffsetCommit unless ``client_log`` says otherwise."""
    h = group_history("async")
    h.run = {**h.run, "client": client or {"name": "confluent-kafka", "version": "librdkafka 2.16.0"}}
    if group_client:
        h.run["groups"] = [{**g, "client": group_client} for g in h.run["groups"]]
    h.commit("g", 6)
    # where a run keeps a member's librdkafka log: the member is a process of its own
    h.logs["members/g/g-1.log"] = "%7|1795610000.466|FAIL|rdkafka#consumer-1| Disconnected\n" + client_log
    return h


def test_librdkafkas_retried_async_commit_is_named_where_a_groups_offsets_move_back(planted):
    v = planted["group-async-regressed"]
    (g,) = [g for g in v.by_group if g.group == "g"]
    assert g.counts["offset_regression"] == 1 and "offset_regression" in g.broken, "still a broken promise"
    (f1,) = [k for k in v.known_issues if k.issue == "kchaos-F1"]
    assert f1.anomalies == ["offset_regression"] and f1.shown and "Retrying OffsetCommitRequest" in f1.evidence
    (unexplained,) = [k for k in planted["group-async-regressed-no-retry"].known_issues if k.issue == "kchaos-F1"]
    assert not unexplained.explains, "a regression whose members never logged a retried commit is not F1's mechanism"
    (timed_out,) = [k for k in planted["group-async-regressed-timed-out"].known_issues if k.issue == "kchaos-F1"]
    assert timed_out.shown and "held back by preceeding OffsetCommitRequest" in timed_out.evidence, \
        "a request timed out behind an OffsetCommit in flight takes the commit down with the connection"
    assert not [k for k in planted["offset_regression"].known_issues if k.issue == "kchaos-F1"], \
        "a copier's transactional commits are not librdkafka's async ones"
    java = planted["group-async-regressed-java"]
    assert "offset_regression" in java.by_group[0].broken and not [k for k in java.known_issues
                                                                   if k.issue == "kchaos-F1"], \
        "the Java client's commitAsync never retries: a regression there is not F1's mechanism"
    own = planted["group-async-regressed-java-group"]
    assert not [k for k in own.known_issues if k.issue == "kchaos-F1"], "the group's own client decides, not the run's"
    (g,) = [g for g in own.by_group if g.group == "g"]
    assert group_label(g).startswith("group g: java 4.1.2 classic"), "a group's row names its client"
    assert v.by_config and all(c.config.startswith("librdkafka 2.16.0 acks=") and c.settings["client"] ==
                               "librdkafka 2.16.0" for c in v.by_config), "a configuration names its client"


# The coordinator's log of group g's commits (written rows, in log order), each judged against the
# acknowledged order 2, 9, 6: the counts of offset_regression and coordinator_regression.
WRITTEN_ORDERS = {(2, 6, 9): (0, 0), (2, 9, 6): (1, 1), (2, 6): (1, 0), (2, 9, 6, 9): (1, 1)}


def acknowledged_then_written(written: tuple[int, ...]) -> History:
    """Group g's members were told of commits 2, 9 and then 6; the coordinator wrote ``written``."""
    h = group_history("async")
    h.commit("g", 6)
    for log_offset, offset in enumerate(written):
        h.commit("g", offset, phase="written", log_offset=log_offset)
    return h


@pytest.mark.parametrize(("written", "counts"), WRITTEN_ORDERS.items())
def test_an_acknowledged_regression_counts_unless_the_coordinator_wrote_the_two_commits_forward(
        planted, written, counts):
    """A member is told of its commits in the client's order, not the coordinator's: librdkafka's
    synchronous commit in the revocation callback returns before the callbacks of the asynchronous
    commits sent ahead of it, which the coordinator wrote first (2, 6, 9 here). Where the log wrote 6
    again after 9, or never wrote 9 (the commit lost with the coordinator's log), the group's offset
    did move back and the acknowledged regression stands."""
    (g,) = [g for g in planted[f"acknowledged-2-9-6-written-{'-'.join(map(str, written))}"].by_group
            if g.group == "g"]
    assert (g.counts["offset_regression"], g.counts["coordinator_regression"]) == counts


@pytest.mark.parametrize(("commit", "verdict"), [("auto", "pass"), ("sync", "fail")])
def test_a_groups_unseen_records_are_judged_by_how_it_commits(planted, commit, verdict):
    """Auto-commit permits group_unseen (it commits what poll returned, processed or not); a commit
    after processing does not. Either way the group's redelivered record is reported, not counted."""
    v = planted[f"group-{commit}"]
    assert v.anomalies == {**dict.fromkeys(ANOMALIES, 0), "group_unseen": 1}
    (g,) = [g for g in v.by_group if g.group == "g"]
    assert g.counts == {"group_unseen": 1, "offset_regression": 0, "coordinator_regression": 0} and g.redelivered == 1
    assert (g.verdict, v.verdict) == (verdict, verdict)
    assert g.promises["group_unseen"].promised == (commit == "sync")
    assert all(c.counts["group_unseen"] == 0 for c in v.by_config), "a group's anomalies are judged in its row"
    assert {x.group for x in v.by_group} == {"g", "gx"}, "the copier's group has a row of its own"


@pytest.mark.chaos_long  # the same counts under another layout; the default tier has the planted ones
def test_v2_counts_hold_with_topics_as_columns(tmp_path, monkeypatch):
    """With (topic, partition) carried as columns instead of one packed number (many topics), the
    v2 joins by partition still count what they should."""
    import harness.checker.keys as keys

    monkeypatch.setattr(keys, "PACK_TOPICS_MAX", 0)
    names = ("poll_skip", "group_unseen", "eos_lost")
    hs = [txn_history(a) for a in names]
    verdicts = check_runs([h.write(tmp_path / a) for a, h in zip(names, hs, strict=True)])
    for a, h, v in zip(names, hs, verdicts, strict=True):
        assert v.anomalies == h.reference() == {**dict.fromkeys(ANOMALIES, 0), a: 1}


def test_examples_name_the_transaction_the_reader_and_the_offsets(planted):
    aborted = planted["aborted_read"].examples["aborted_read"][0]
    assert (aborted["value"], aborted["txn"], aborted["consumer"], aborted["offset"]) == ("b0", "p0:1", "c-rc", 3)
    torn = planted["torn_txn"].examples["torn_txn"][0]
    assert (torn["txn"], torn["records"], torn["in_final"], torn["missing"]) == ("p0:2", 2, 1, ["c1"])
    skip = planted["poll_skip"].examples["poll_skip"][0]
    assert (skip["consumer"], skip["m"], skip["o"], skip["first_skipped"], skip["first_skipped_value"]) == (
        "c-ru", 1, 4, 3, "b0")
    lost = planted["eos_lost"].examples["eos_lost"][0]
    assert (lost["value"], lost["producer"], lost["offset"], lost["committed_offset"]) == ("c1", "x", 7, 9)
    dup = planted["eos_duplicate"].examples["eos_duplicate"][0]
    assert (dup["source"], dup["copies"], dup["copy_values"]) == ("a0", 2, ["x-0", "x-4"])
    reg = planted["offset_regression"].examples["offset_regression"][0]
    assert (reg["group"], reg["prev_offset"], reg["offset"]) == ("gx", 9, 6)


def test_known_issue_is_named_where_its_symptoms_show(planted):
    v = planted["aborted_read"]
    assert [k.issue for k in v.known_issues] == ["KAFKA-17754"]
    assert v.known_issues[0].anomalies == ["aborted_read"]


def torn_across_producers() -> History:
    """Transaction p0:0 (p0's, committed) with one more row, sent by another producer (indeterminate,
    so not lost) that the final log lacks: the contract's transaction is its txn, whoever sent it."""
    h = txn_history()
    h.topic = "out"
    h.send("z9", None, status="info", producer="x", txn="p0:0")
    return h


def test_a_transaction_is_its_txn_whichever_producer_sent_its_rows(planted):
    """Found by the property test: the Spark count split a transaction by the producer of each row,
    and missed a transaction torn across two producers that the reference counts."""
    v = planted["torn-across-producers"]
    assert v.anomalies["torn_txn"] == 1
    (ex,) = v.examples["torn_txn"]
    assert ex["txn"] == "p0:0" and ex["producer"] == "p0" and ex["missing"] == ["z9"]


def aborted_and_unknown() -> History:
    """lost is narrowed to committed values: an acknowledged send of an aborted or open transaction
    that is absent from the final log is not a loss."""
    h = txn_history()
    h.send("d0", 9, txn="p0:3").send("d1", 10, txn="p0:4")
    h.txn("p0:3", "aborted").txn("p0:4", "unknown")
    return h


def test_aborted_and_unknown_transactions_are_not_lost(planted):
    assert planted["aborted-and-unknown"].anomalies["lost"] == 0


def v1_poll_skip() -> History:
    h = History().clean(5)
    h.read("v0-4", 4, consumer="c1")  # c1 returned offset 4 first, then nothing below it
    h.read("v0-0", 0, consumer="c2").read("v0-3", 3, consumer="c2")  # skipped 1 and 2
    return h


def test_poll_skip_counts_v1_consumers_too(planted):
    v = planted["v1-poll-skip"]
    assert v.contract == "v1" and v.anomalies["poll_skip"] == 1
    assert v.examples["poll_skip"][0]["consumer"] == "c2"


def poll_skip_by_generation() -> History:
    """A new generation starts its own highest offset; a gap longer than a join bucket is still one pair."""
    h = History().clean(3)
    h.read("v0-2", 2, consumer="g", generation=1).read("v0-0", 0, consumer="g", generation=2)
    h.read("v0-1", 1, consumer="g", generation=2)  # gen 2: 0 then 1, no skip; gen 1 alone: no pair
    for o in range(3, 10_003):
        h.read(f"far-{o}", o, phase="final", consumer="final")
        h.send(f"far-{o}", o)
    h.read("far-3", 3, consumer="h").read("far-10000", 10_000, consumer="h")
    return h


def test_poll_skip_is_per_generation_and_spans_buckets(planted):
    v = planted["poll-skip-by-generation"]
    assert v.anomalies["poll_skip"] == 1
    assert v.examples["poll_skip"][0]["skipped"] == 9_996


def _bad(h: History, how: str) -> None:
    if how == "txn without row":
        h.send("z", 12, txn="p0:77")
    elif how == "two isolations":
        h.read("a0", 0, consumer="c-rc", isolation="read_uncommitted")
    elif how == "group of two isolations":
        h.read("a0", 0, consumer="x-in-2", isolation="read_uncommitted", group="gx")
    elif how == "source outside a copier":
        h.send("z", 12, source="a0")
    elif how == "bad outcome":
        h.txns[0]["outcome"] = "done"
    elif how == "two final offsets":
        h.commit("gx", 8, phase="final")


BAD_V2 = {
    "txn without row": r"produced\.parquet: a non-null txn has no row in txns\.parquet",
    "two isolations": r"consumed\.parquet: a consumer returned rows of two isolation levels",
    "group of two isolations": r"consumed\.parquet: a group's consumers returned rows of two isolation levels",
    "source outside a copier": r"produced\.parquet: column 'source' is set on a send whose producer is no copier's",
    "bad outcome": r"txns\.parquet: column 'outcome' outside the contract \(allowed: committed, aborted, unknown\)",
    "two final offsets": r"offsets\.parquet: two rows of phase 'final' for one \(group, topic, partition\)",
}


@pytest.mark.parametrize("how", list(BAD_V2))
def test_v2_bad_input_names_the_file_and_the_rule(tmp_path, how):
    h = txn_history()
    _bad(h, how)
    d = h.write(tmp_path / "run")
    with pytest.raises(HistoryError, match=BAD_V2[how]):
        check_runs([d])
    assert not (d / "verdict.json").exists()


def test_bad_copiers_in_run_json_are_bad_input(tmp_path):
    h = txn_history()
    h.run["copiers"] = [{"producer": "x"}]
    with pytest.raises(HistoryError, match=r"run\.json: key 'copiers\.0\.group': Field required"):
        check_runs([h.write(tmp_path / "run")])


@pytest.mark.parametrize(("commit", "state"), [("auto", "expected"), ("sync", "broke")])
def test_the_report_matrix_judges_a_groups_anomaly_by_the_group(planted, commit, state):
    from harness.report.page import matrix_rows

    rows = matrix_rows([{"verdict": planted[f"group-{commit}"], "id": "r", "anchor": "r", "run": RunConfig()}],
                       ["group_unseen", "lost"])
    cells = {row["what"].split(":")[0]: cell for row in rows for cell in row["cells"]
             if cell and cell["anomaly"] == "group_unseen"}
    assert set(cells) == {"group g", "copier (group gx)"}, "each group's anomaly on its own row, none on a producer's"
    assert cells["group g"]["count"] == 1 and cells["group g"]["state"] == state
    assert cells["copier (group gx)"]["state"] == "clean"
