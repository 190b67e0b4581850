"""A transactional producer started near its epoch's limit against real Kafka 4.4.0 (transactions
version 2, Kafka's Java client): kchaos-epochs drives its transactional.id to the epoch asked
before the run, the run's commits and aborts carry it over the limit, the coordinator gives the
transactional.id a new producer id (the client's own log says so), and no promise breaks."""

from __future__ import annotations

import json
import re
import textwrap

import pyarrow.parquet as pq
import pytest

from harness.checker import check_runs
from harness.run import runner
from harness.scenario import load
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

START = 32740

SCENARIO = f"""
name = "epoch-limit"
kafka_version = "4.4.0"
mode = "kraft"
client = "java"
duration_s = 12
[topic]
partitions = 3
[[producers]]
name = "t"
transactional = true
txn_records = 6
abort_ratio = 0.2
rate = 300
epoch_from = {START}
[consumers]
isolation_level = "both"
"""


@pytest.mark.chaos_long  # a minute of InitProducerId requests before the run: the default suite keeps its time
def test_a_producer_started_near_its_epochs_limit_goes_over_it_and_nothing_breaks(tmp_path):
    require_docker(["4.4.0"])
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(SCENARIO))
    res = runner.execute(load(p), tmp_path / "run", log=lambda m: None)
    events = [json.loads(x) for x in (res.path / "events.jsonl").read_text().splitlines()]
    (driven,) = [e for e in events if e["type"] == "epochs_driven"]
    assert driven["transactional_id"] == "kchaos-t" and driven["epoch"] == START and driven["requests"] > START
    ended = [o for o in pq.read_table(res.path / "txns.parquet").column("outcome").to_pylist()
             if o in ("committed", "aborted")]
    # initTransactions bumps the epoch once, each commit or abort once more (transactions version 2)
    assert len(ended) > 32767 - START, f"{len(ended)} transactions ended: the epoch's limit was not reached"
    # Kafka's Java client logs each producer id and epoch it is given: a new producer id at epoch 0
    given = re.findall(r"ProducerId set to (\d+) with epoch (\d+)", (res.path / "logs" / "clients.log").read_text())
    assert (str(driven["producer_id"]), str(START + 1)) in given, given
    assert any(pid != str(driven["producer_id"]) and epoch == "0" for pid, epoch in given), \
        f"the coordinator gave no new producer id at the limit: {given}"
    run = json.loads((res.path / "run.json").read_text())
    assert run["phases"]["epochs"] > 0
    (v,) = check_runs([res.path])
    assert v.verdict == "pass", v.anomalies
