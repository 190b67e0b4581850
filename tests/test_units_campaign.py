"""A campaign's account (harness/hunt/campaign.py), from hunt directories a test builds: what was
drawn, reached and broken, counted the way docs/findings.md's campaign entries state them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.hunt.campaign import account, main, markdown


def _run(d: Path, name: str, client: str, verdict: str, kinds: list[str], triggered: int,
         states: dict[str, int], counts: dict[str, int], promised: set[str], broken: list[str]) -> None:
    r = d / "runs" / name
    r.mkdir(parents=True)
    faults = [{"kind": k, "on": {"event": "acked"} if i < triggered else None} for i, k in enumerate(kinds)]
    (r / "run.json").write_text(json.dumps({"kafka_version": "4.4.0", "mode": "kraft", "faults": faults,
                                            "clients": [{"name": client.split()[0], "version": client}]}))
    (r / "verdict.json").write_text(json.dumps({
        "verdict": verdict, "coverage": states,
        "exposure": [{"exposed": 5}] if "leader_change" in states else [],
        "by_config": [{"counts": counts, "broken": broken,
                       "promises": {a: {"promised": a in promised} for a in counts}}]}))


def _hunt(d: Path, findings: list[dict]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "hunt.json").write_text(json.dumps({"options": {}, "findings": findings, "wall_s": 1800.0, "errors": 1}))


def test_a_campaigns_account_counts_runs_faults_states_and_only_the_promises_a_run_broke(tmp_path: Path):
    a, b = tmp_path / "kraft", tmp_path / "more"
    _hunt(a, [{"signature": "lost | x", "reproduced": {"k": 0, "n": 3}},
              {"signature": "duplicate | y", "reproduced": {"k": 2, "n": 3}, "known": "librdkafka#4953"}])
    _hunt(b, [])
    _run(a, "h0000", "librdkafka 2.16.0", "fail", ["kill", "recreate_topic"], 1, {"leader_change": 1},
         {"lost": 3, "divergence": 2, "duplicate": 0}, {"lost", "divergence"}, ["lost"])
    _run(a, "h0001", "java 4.4.0", "pass", ["power_loss", "power_loss"], 0, {"unflushed_data_lost": 2, "x": 0},
         {"lost": 9, "nonmonotonic_send": 1}, {"lost"}, [])
    _run(b, "h0000", "librdkafka 2.16.0", "not exercised", ["kill"], 0, {}, {"lost": 0}, {"lost"}, [])
    (b / "runs" / "h0001").mkdir()  # a run that could not run: no verdict, not counted
    for investigated in ("h0000-c1", "h0000-s03", "h0000-s03-2", "h0000-m2"):  # the finding's own runs
        _run(a, investigated, "librdkafka 2.16.0", "fail", ["kill"], 0, {}, {"lost": 3}, {"lost"}, ["lost"])

    acc = account([a, b])
    assert len(acc.runs) == 3 and acc.errors == 2 and round(acc.minutes) == 60 and acc.investigations == 4
    assert acc.anomalies(broke=True) == {"lost": 1}  # h0001's loss was expected: not a broken promise
    assert acc.anomalies(broke=False) == {"divergence": 1, "lost": 1, "nonmonotonic_send": 1}
    assert acc.kinds() == {"kill": 2, "power_loss": 2, "recreate_topic": 1}
    assert acc.states() == {"leader_change": 1, "unflushed_data_lost": 1}
    text = markdown(acc, "recreated topic")
    row = ("| recreated topic | 4.4.0 kraft | java 4.4.0, librdkafka 2.16.0 | 3 | 60 | lost 1 | lost \\| x (0/3); "
           "duplicate \\| y (2/3): known: librdkafka#4953, shown by its log |")
    assert row in text
    (line,) = [x for x in text.splitlines() if x.startswith("| recreated")]
    assert len(re.findall(r"(?<!\\)\|", line)) == 8, "7 cells: a signature's | is escaped"
    assert "1 of 5 fired on the protocol's events" in text
    assert "exposure: 1 of 3 runs put acknowledged records at risk (5 in all)" in text


def test_formation_faults_are_counted_formed_or_not(tmp_path: Path):
    a = tmp_path / "controllers"
    _hunt(a, [])
    _run(a, "h0000", "java 4.4.0", "pass", ["kill"], 0, {}, {"lost": 0}, {"lost"}, [])
    _run(a, "h0001", "java 4.4.0", "pass", ["kill"], 0, {}, {"lost": 0}, {"lost"}, [])
    run_json = a / "runs" / "h0001" / "run.json"
    run_json.write_text(json.dumps({**json.loads(run_json.read_text()),
                                    "cluster": {"settings": {"formation": {"kind": "pause", "duration_s": 2.0}}}}))
    unformed = a / "runs" / "h0002-x.could-not-run"
    unformed.mkdir(parents=True)
    (unformed / "error.txt").write_text("ClusterError: the cluster did not form after its first quorum leader (node "
                                        "101, epoch 1) was faulted (kill for 3 s, 0 s after its election): ...\n")
    other = a / "runs" / "h0003-x.could-not-run"
    other.mkdir(parents=True)
    (other / "error.txt").write_text("ClusterError: brokers did not all register within 120 s\n")
    text = markdown(account([a]), "controllers")
    assert "- formation faults (runs): pause 1 formed; 1 did not form (h0002-x.could-not-run)" in text
    plain = tmp_path / "plain"
    _hunt(plain, [])
    _run(plain, "h0000", "java 4.4.0", "pass", ["kill"], 0, {}, {"lost": 0}, {"lost"}, [])
    assert "formation faults" not in markdown(account([plain]), "plain"), "no line where none was drawn"


def test_a_directory_that_is_not_a_hunts_exits_2_naming_its_file(tmp_path: Path, capsys):
    assert main([str(tmp_path)]) == 2
    assert f"{tmp_path}/hunt.json" in capsys.readouterr().err
