"""Chaos runs against real Kafka: what a run records is complete and its fault log is truthful."""

from __future__ import annotations

import itertools
import json
import statistics
import textwrap

import pyarrow.parquet as pq
import pytest

from harness.checker import check_runs
from harness.report.page import write_report
from harness.scenario import load
from tests.browser import assert_report_page
from tests.conftest import assert_sends_recorded, require_docker, run_on_kept

pytestmark = pytest.mark.docker  # its runs share a cluster with tests/test_triggers.py's (conftest.CLUSTER_GROUPS)


def scenario(tmp_path, body: str, **over):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(body))
    return load(p, [f"{k}={v}" for k, v in over.items()])


# Followers that fall 3 s behind on a loaded machine (two test workers on two cores) leave the ISR
# to the leader alone, and then no broker may take over when it is killed: 15 s keeps them in.
BASE = """
name = "t"
kafka_version = "3.9.1"
mode = "zk"
zookeepers = 1
duration_s = 8
[topic]
partitions = 2
replication_factor = 3
min_insync_replicas = 2
[consumers]
count = 1
[cluster]
replica_lag_time_max_ms = 15000
"""


def test_fault_free_run_finds_every_acknowledged_record(tmp_path, kept_cluster):
    require_docker(["3.9.1"])
    s = scenario(tmp_path, BASE.replace("count = 1", 'count = 1\nconfig = { "fetch.wait.max.ms" = 50 }')
                 + '[[producers]]\nname = "a"\nacks = "all"\nidempotence = true\nrate = 150\n'
                 'config = { "debug" = "eos", "socket.timeout.ms" = 20000 }\n'
                 '[[producers]]\nname = "b"\nacks = "1"\nrate = 150\n')
    res = run_on_kept(kept_cluster, s, tmp_path / "run", "free")
    d = res.path
    produced = pq.read_table(d / "produced.parquet").to_pylist()
    consumed = pq.read_table(d / "consumed.parquet").to_pylist()
    replicas = pq.read_table(d / "replicas.parquet").to_pylist()
    acked = {r["value"] for r in produced if r["status"] == "ok"}
    assert len(acked) > 1500 and len(acked) == len(produced), "fault-free: every send acknowledged"
    for mine in assert_sends_recorded(produced, ("a", "b"), partitions=2):
        span_s = (mine[-1]["send_ts_ms"] - mine[0]["send_ts_ms"]) / 1000
        assert len(mine) <= 150 * span_s * 1.05 + 5, f"producer {mine[0]['producer']} sent faster than its rate"
    final = {r["value"] for r in consumed if r["phase"] == "final"}
    live = {r["value"] for r in consumed if r["phase"] == "live"}
    assert acked <= final and acked <= live
    # Each delivery report went to its own send: the offset it gave holds that very value, and it
    # arrived after the send (reports are matched to sends, and timed, after the workload). A loaded
    # machine may hold a few reports for seconds, so no single one is bounded; but reports timed when
    # they were matched, after the workload, would put the median seconds after the send.
    at = {(r["partition"], r["offset"]): r["value"] for r in consumed if r["phase"] == "final"}
    assert all(at[(r["partition"], r["offset"])] == r["value"] for r in produced)
    assert all(r["send_ts_ms"] <= r["ack_ts_ms"] for r in produced)
    assert statistics.median(r["ack_ts_ms"] - r["send_ts_ms"] for r in produced) < 1000
    for b in (1, 2, 3):
        assert acked <= {r["value"] for r in replicas if r["broker"] == b}, f"broker {b}'s log lacks records"
    live_rows = [r for r in consumed if r["phase"] == "live"]
    assert all(r["hw"] is not None for r in live_rows)
    # Without any fault a read can still come back at or above its hw: Kafka's fetch response carries
    # the hw from before the leader read the records. Each such read is of a record the final log
    # holds at that offset, and the verdict counts it (the contract's rule) without failing the run.
    at_hw = {(r["partition"], r["offset"], r["value"]) for r in live_rows if r["offset"] >= r["hw"]}
    assert all(at[(p, o)] == value for p, o, value in at_hw)
    run = json.loads((d / "run.json").read_text())
    assert run["reproduce"].startswith("kchaos run") and run["topics"][0]["config"]["min.insync.replicas"] == "2"
    assert list(run["phases"]) == ["cluster_up", "topic_ready", "workload", "heal", "final_read", "replica_logs",
                                   "container_logs"]
    # The scenario's client properties reached the clients as they were written, and run.json says so.
    assert run["producers"][0]["config"] == {"debug": "eos", "socket.timeout.ms": "20000"}
    assert run["client"]["name"] == "librdkafka" and run["client"]["version"].startswith("librdkafka")
    assert run["consumers"]["config"] == {"fetch.wait.max.ms": "50"}
    assert "IDEMPSTATE" in (d / "logs" / "clients.log").read_text(), "producer a's debug=eos lines"
    assert [r["producer"] for r in run["load"]] == ["a", "b"] and not any(r["short"] for r in run["load"])
    assert run["phases"]["workload"] >= s.duration_s and run["phases"] == res.phases
    (v,) = check_runs([d])
    assert_clean_but_for_what_a_retry_permits(v, d, len(at_hw))


# What producer b (acks=1, not idempotent, up to 5 requests in flight) may show without a fault: a request
# it retried (one that timed out on a loaded machine, or met a leader moved by a lapsed ZooKeeper session)
# lets a later batch land first. Its configuration does not promise send order, and the verdict says so.
RETRY_ANOMALIES = frozenset({"nonmonotonic_send", "duplicate"})


def assert_clean_but_for_what_a_retry_permits(v, d, reads_at_hw: int) -> None:
    """The verdict passes; idempotent producer a shows nothing; non-idempotent producer b shows at
    most a retry's reorder or duplicate, and only where the run shows the retry: librdkafka's own
    request timeout in the client log, or a leader change in the run's samples."""
    shown = {k: n for k, n in v.anomalies.items() if n}
    detail = f"counts {shown}, examples { {k: v.examples.get(k, [])[:3] for k in shown} }"
    assert v.verdict == "pass", detail
    assert v.anomalies["uncommitted_read"] == reads_at_hw, detail
    by_producer = {c.producers[0]: c for c in v.by_config}
    assert not {k for k, n in by_producer["a"].counts.items() if n and k != "uncommitted_read"}, detail
    b = by_producer["b"]
    retried = {k for k, n in b.counts.items() if n and k != "uncommitted_read"}
    if retried:
        assert retried <= RETRY_ANOMALIES and not any(b.promises[k].promised for k in retried), detail
        timeouts = [x for x in (d / "logs" / "clients.log").read_text().splitlines() if "REQTMOUT" in x]
        assert timeouts or v.coverage.get("leader_change"), f"{detail}, and no retry in the run to explain it"


def test_leader_kill_is_logged_with_times_that_bracket_the_leader_change_and_reported(tmp_path, kept_cluster):
    """The fault log's times against the sampled leaders; then the run's HTML report, as a reader opens it."""
    require_docker(["3.9.1"])
    s = scenario(tmp_path, BASE + '[[producers]]\nacks = "1"\nrate = 200\n'
                 '[[faults]]\nat_s = 2\nduration_s = 5\nkind = "kill"\ntarget = "leader"\npartition = 0\n',
                 duration_s=9)
    res = run_on_kept(kept_cluster, s, tmp_path / "run", "kill")
    events = [json.loads(x) for x in (res.path / "events.jsonl").read_text().splitlines()]
    (fault,) = [e for e in events if e["type"] == "fault"]
    old = fault["leader_before"]
    assert fault["kind"] == "kill" and fault["brokers"] == [old]
    states = [e for e in events if e["type"] == "state" and "partitions" in e]

    def leader(e):
        return next(p["leader"] for p in e["partitions"] if p["partition"] == 0)

    before = [e for e in states if e["ts_ms"] < fault["start_ms"]]
    assert before and all(leader(e) == old for e in before)
    changed = [i for i, e in enumerate(states) if e["ts_ms"] >= fault["start_ms"] and leader(e) not in (old, -1)]
    assert changed, "no sample shows a new leader"
    # The change happened after the last sample without the new leader and by the first with it.
    # In ZooKeeper mode it comes when the killed broker's session expires, which the heal waits for
    # before the restart; the controller elects on that expiry on its own thread, so the election can
    # land just after the heal has restarted the broker and logged the fault's end.
    last_old, first_new = states[changed[0] - 1]["ts_ms"], states[changed[0]]["ts_ms"]
    assert fault["start_ms"] <= first_new and last_old < fault["end_ms"] + 2000, \
        f"the leader changed in ({last_old}, {first_new}], outside the fault's window " \
        f"[{fault['start_ms']}, {fault['end_ms']}]"
    gaps = [b["ts_ms"] - a["ts_ms"] for a, b in itertools.pairwise(states)]
    # Sampled every 250 ms or so (docs/run-directory.md); two test workers on two cores can hold one
    # sample back for a second, not for longer.
    assert statistics.median(gaps) <= 500 and max(gaps) <= 2000, \
        f"state sampled every {statistics.median(gaps)} ms (median), {max(gaps)} ms at worst"
    (v,) = check_runs([res.path])
    page = assert_report_page(write_report([res.path], tmp_path / "r.html"), [v])
    assert s.kafka_version in page.text and "kchaos run" in page.text, "environment and reproduce command shown"
    assert "kill leader" in page.text, "the fault is named on the timeline"
