"""Property-based: on arbitrary contract-valid histories, the Spark checker's seven counts equal
those of the small in-memory reference implementation of the same definitions.

Values, offsets, topics and partitions are drawn from tiny domains so that collisions (duplicates,
divergence, regressions, phantoms) are common; replicas may hold a topic nobody produced to or
read. Each Hypothesis example is a batch of histories reconciled in one Spark job, which is also
how `kchaos check` handles many runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.checker import check_runs
from tests.histories import History

pytestmark = pytest.mark.spark

values = st.sampled_from([f"v{i}" for i in range(8)])
offsets = st.integers(0, 6)
partitions = st.integers(0, 1)
topics = st.sampled_from(["t", "u"])

produced_row = st.fixed_dictionaries({
    "value": values, "producer": st.sampled_from(["p0", "p1"]), "topic": topics, "partition": partitions,
    "acks": st.sampled_from(["0", "1", "all"]), "status": st.sampled_from(["ok", "ok", "ok", "fail", "info"]),
    "offset": st.one_of(st.none(), offsets), "ts": st.integers(0, 5000),
})
consumed_row = st.fixed_dictionaries({
    "value": values, "consumer": st.sampled_from(["c0", "c1"]), "topic": topics, "partition": partitions,
    "offset": offsets,
    "hw": st.one_of(st.none(), st.integers(0, 8)), "phase": st.sampled_from(["live", "final", "final"]),
})
replica_row = st.fixed_dictionaries({"broker": st.integers(1, 3), "topic": st.sampled_from(["t", "u", "w"]),
                                     "partition": partitions, "offset": offsets, "value": values})
history = st.tuples(st.lists(produced_row, min_size=1, max_size=25), st.lists(consumed_row, max_size=30),
                    st.lists(replica_row, max_size=20))


def _list_every_topic(h: History) -> None:
    """run.json lists every topic the history wrote to, with the first one's settings (validation
    refuses a run.json that does not)."""
    written = sorted({r["topic"] for r in h.produced})
    h.run["topics"] = [{**h.run["topics"][0], "name": t} for t in written]


def build(p_rows, c_rows, r_rows) -> History:
    h = History()
    for r in p_rows:
        h.topic = r["topic"]
        h.send(r["value"], r["offset"], status=r["status"], partition=r["partition"], producer=r["producer"],
               acks=r["acks"], ts=1_700_000_000_000 + r["ts"])
    for r in c_rows:
        h.topic = r["topic"]
        h.read(r["value"], r["offset"], phase=r["phase"], partition=r["partition"], consumer=r["consumer"], hw=r["hw"])
        h.consumed[-1]["hw"] = r["hw"]  # None stays None: hw is nullable
    # the contract requires a final read; make sure there is one row of it
    h.topic = "t"
    h.read("v0", 0, phase="final", consumer="final")
    for r in r_rows:
        h.topic = r["topic"]
        h.replica(r["broker"], r["value"], r["offset"], r["partition"])
    _list_every_topic(h)
    return h


# 32 histories per run of the test, checked 16 at a time (each check costs seconds even for tiny histories).
@pytest.mark.chaos_long  # the default tier checks each anomaly planted alone against the reference (test_checker.py)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(history, min_size=16, max_size=16))
def test_spark_counts_equal_the_reference(batch):
    with tempfile.TemporaryDirectory() as tmp:
        hs = [build(*x) for x in batch]
        dirs = [h.write(Path(tmp) / f"r{i:02d}") for i, h in enumerate(hs)]
        verdicts = check_runs(dirs, write_verdicts=False)
        for h, v in zip(hs, verdicts, strict=True):
            assert v.anomalies == h.reference()


# v2: transactions (outcomes drawn per transaction), readers of both isolation levels, a copier "x"
# from topic t to u with group gx, generations, and committed offsets live and final.
ISOLATION = {"c0": "read_committed", "c1": None, "xin": "read_committed"}
v2_produced_row = st.fixed_dictionaries({
    "value": values, "producer": st.sampled_from(["p0", "x"]), "topic": topics, "partition": partitions,
    "status": st.sampled_from(["ok", "ok", "info"]), "offset": st.one_of(st.none(), offsets),
    "source": st.one_of(st.none(), values),
    "ts": st.integers(0, 100),
})
v2_consumed_row = st.fixed_dictionaries({
    "value": values, "consumer": st.sampled_from(list(ISOLATION)), "topic": topics, "partition": partitions,
    "offset": offsets, "phase": st.sampled_from(["live", "final", "final"]), "generation": st.sampled_from([1, 2]),
    "ts": st.integers(0, 100),
})
txn_outcome = st.tuples(st.sampled_from(["committed", "aborted", "unknown"]), st.integers(0, 100))
offset_row = st.fixed_dictionaries({"topic": topics, "partition": partitions, "offset": st.integers(0, 8),
                                    "ts": st.integers(0, 20), "phase": st.sampled_from(["live", "final", "written"])})
value_txn = st.fixed_dictionaries({f"v{i}": st.sampled_from([None, "t0", "t1", "t2"]) for i in range(8)})
v2_history = st.tuples(st.lists(v2_produced_row, min_size=1, max_size=20), st.lists(v2_consumed_row, max_size=25),
                       st.fixed_dictionaries({t: txn_outcome for t in ("t0", "t1", "t2")}),
                       st.lists(offset_row, max_size=8), value_txn)


def build_v2(p_rows, c_rows, outcomes, o_rows, txn_of) -> History:
    """A v2 history: each value has one transaction (txn_of); the copier's values are its own ("x" +
    value), always in a transaction, copying a value of the domain."""
    h = History()
    h.run["producers"].append({"name": "x", "acks": "all", "transactional": True, "topic": "u"})
    h.run["copiers"] = [{"producer": "x", "group": "gx", "input_topics": ["t"], "output_topics": ["u"]}]
    t0 = 1_700_000_000_000
    for r in p_rows:
        h.topic = r["topic"]
        copy, txn = r["producer"] == "x", txn_of[r["value"]]
        h.send("x" + r["value"] if copy else r["value"], r["offset"], status=r["status"], partition=r["partition"],
               producer=r["producer"], ts=t0 + r["ts"], txn=(txn or "tx") if copy else txn,
               source=r["source"] if copy else None)
    for txn, (outcome, commit) in {**outcomes, "tx": ("committed", 50)}.items():
        h.txn(txn, outcome, begin=t0, commit=t0 + commit if outcome != "aborted" else None)
    for r in c_rows:
        h.topic = r["topic"]
        if r["topic"] == "u":
            r = {**r, "value": "x" + r["value"]}
        live = r["phase"] == "live"
        who = r["consumer"] if live else "final"
        h.read(r["value"], r["offset"], phase=r["phase"], partition=r["partition"], consumer=who,
               isolation=ISOLATION[who] if live else None, group="gx" if who == "xin" else None,
               generation=r["generation"] if who == "xin" else None, ts=t0 + r["ts"])
    h.topic = "t"
    h.read("v0", 0, phase="final", consumer="final")
    finals = set()
    for place, r in enumerate(o_rows):
        if r["phase"] == "final" and (r["topic"], r["partition"]) in finals:
            continue  # one final row per (group, topic, partition)
        finals.add((r["topic"], r["partition"]))
        h.topic = r["topic"]
        h.commit("gx", r["offset"], partition=r["partition"], phase=r["phase"], ts=t0 + r["ts"],
                 log_offset=place if r["phase"] == "written" else None)
    h.topic = "t"
    _list_every_topic(h)
    return h


@pytest.mark.chaos_long  # the default tier checks each v2 anomaly planted alone (test_checker_v2.py)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(v2_history, min_size=8, max_size=8))
def test_spark_v2_counts_equal_the_reference(batch):
    with tempfile.TemporaryDirectory() as tmp:
        hs = [build_v2(*x) for x in batch]
        dirs = [h.write(Path(tmp) / f"r{i:02d}") for i, h in enumerate(hs)]
        verdicts = check_runs(dirs, write_verdicts=False)
        for h, v in zip(hs, verdicts, strict=True):
            assert v.anomalies == h.reference()
