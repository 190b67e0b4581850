"""The CI workflows as GitHub reads them: the hunt workflow's shards are exactly 1..N of the N its
commands name, each uploads what the merge job downloads, and the merge reads every shard."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

WORKFLOWS = Path(__file__).resolve().parent.parent / ".github" / "workflows"


def _hunt_workflow() -> dict:
    return yaml.safe_load((WORKFLOWS / "hunt.yml").read_text())


def _run_lines(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in job["steps"])


def test_the_hunt_workflows_shards_are_one_to_n_of_the_n_its_command_names():
    w = _hunt_workflow()
    n = int(w["env"]["SHARDS"])
    shard = w["jobs"]["shard"]
    assert shard["strategy"]["matrix"]["shard"] == list(range(1, n + 1))
    hunt = _run_lines(shard)
    assert "--shard ${{ matrix.shard }}/${{ env.SHARDS }}" in hunt and '--seed "$SEED"' in hunt
    assert "--out hunts/shard-${{ matrix.shard }}" in hunt
    assert hunt.rstrip().endswith("|| [ $? -eq 1 ]"), "a hunt that found something is not a failed job"


def test_the_merge_job_reads_every_shard_that_was_uploaded():
    w = _hunt_workflow()
    upload = [s for s in w["jobs"]["shard"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    (named,) = [s["with"]["name"] for s in upload]
    merge = w["jobs"]["merge"]
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    (download,) = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    pattern = download["with"]["pattern"]
    assert re.fullmatch(pattern.replace("*", ".*"), named.replace("${{ matrix.shard }}", "3"))
    runs = _run_lines(merge)
    assert f"hunt --merge {download['with']['path']}/{pattern} --out hunts/merged" in runs
    assert f"harness.hunt.campaign {download['with']['path']}/{pattern}" in runs


def _benchmark():
    import importlib.util
    spec = importlib.util.spec_from_file_location("hunt_guides", WORKFLOWS.parent.parent / "benchmarks" /
                                                  "hunt_guides.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_workflow_runs_every_answer_guide_and_seed_and_its_table_reads_each_upload(tmp_path,
                                                                                               monkeypatch):
    """hunt-guides.yml: one job per known answer, guide and seed of benchmarks/hunt_guides.py; each
    uploads the file the benchmark keeps, under a name the table job's --collect reads back to the
    same place."""
    bench = _benchmark()
    w = yaml.safe_load((WORKFLOWS / "hunt-guides.yml").read_text())
    hunt, table = w["jobs"]["hunt"], w["jobs"]["table"]
    matrix = hunt["strategy"]["matrix"]
    assert matrix["answer"] == list(bench.ANSWERS) and matrix["guide"] == ["swarm", "coverage"]
    assert matrix["seed"] == list(range(1, int(w["env"]["SEEDS"]) + 1))
    run = _run_lines(hunt)
    for flag in ("--answers ${{ matrix.answer }}", "--guides ${{ matrix.guide }}", "--only-seed ${{ matrix.seed }}"):
        assert flag in run
    (upload,) = [s["with"] for s in hunt["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    one = {"${{ matrix.answer }}": "f1-offset-regression", "${{ matrix.guide }}": "coverage", "${{ matrix.seed }}": "3"}

    def instance(text: str) -> str:
        for k, v in one.items():
            text = text.replace(k, v)
        return text

    assert instance(upload["path"]) == str(bench.result_path("f1-offset-regression", "coverage", 3).relative_to(
        bench.ROOT))
    (download,) = [s["with"] for s in table["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    assert re.fullmatch(download["pattern"].replace("*", ".*"), instance(upload["name"]))
    assert f"--collect {download['path']}" in _run_lines(table) and table["needs"] == "hunt"
    uploaded = tmp_path / instance(upload["name"]) / "s3.json"
    uploaded.parent.mkdir()
    uploaded.write_text('{"findings": []}')
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "kept")
    assert bench.collect(tmp_path) == [tmp_path / "kept" / "f1-offset-regression" / "coverage" / "s3.json"]


def test_the_benchmark_table_gives_the_draw_that_showed_each_answer_and_a_censored_median():
    """The draw beside the time: a guide is judged by how many runs it needed, apart from how long
    each took; a hunt that found nothing counts as later than any that did."""
    bench = _benchmark()
    doc = {"findings": [{"found_in": "h0002-x"}], "timeline": [
        {"run": f"h000{k}-x", "wall_s": 40.0 * (k + 1), "features": k} for k in range(4)],
        "spent": {"h0000-x": {"wall_s": 40.0}, "h0000-x-c1": {"wall_s": 10.0}, "h0001-x": {"wall_s": 40.0},
                  "h0002-x": {"wall_s": 40.0}, "h0003-x": {"wall_s": 40.0}}}
    assert bench.first_finding_draw(doc) == 3 and bench.first_finding_s(doc) == 130.0, "a confirmation's time too"
    assert bench.features_at(doc, 1.5) == 1 and bench.features_at(doc, 2.5) == 2
    assert bench.first_finding_draw({"findings": [], "timeline": doc["timeline"]}) is None
    assert bench.median_draw([3, 1, None]) == "3" and bench.median_draw([3, None]) == "-"


def test_a_hunt_that_found_nothing_counts_the_time_it_searched_and_the_median_says_when_it_is_a_bound():
    """Hunts of different budgets mix: one that found nothing is known only to take longer than it
    searched, so the median is exact only when no such bound lies at or below it."""
    bench = _benchmark()
    unfound = {"findings": [], "timeline": [{"run": "h0000-x"}, {"run": "h0001-x"}],
               "spent": {"h0000-x": {"wall_s": 1500.0}, "h0001-x": {"wall_s": 1520.0}}}
    assert bench.time_or_bound(unfound) == (3020.0, True) and bench.draw_or_bound(unfound) == (2, True)
    assert bench.median_censored([(948.0, False), (2460.0, True), (1108.0, False), (2450.0, True),
                                  (1489.0, False)]) == "24.8 min", "the bounds lie above the median"
    assert bench.median_censored([(2430.0, True), (2440.0, True), (3010.0, True), (3020.0, True),
                                  (3030.0, True)]) == ">50.2 min", "the median of bounds, a bound"
    assert bench.median_censored([(600.0, False), (700.0, True), (900.0, False)]) == ">11.7 min", \
        "a bound below the median: the hunt might have found it later than the median's hunt"


def test_a_bound_is_sooner_or_later_only_where_it_reaches_gehans_scoring():
    bench = _benchmark()
    assert bench.sooner_one((10.0, False), (40.0, True)) == 1.0, "found before the other stopped looking"
    assert bench.sooner_one((50.0, False), (40.0, True)) == 0.5, "found after the other stopped: not known"
    assert bench.sooner_one((40.0, True), (50.0, True)) == 0.5, "neither found"
    assert bench.sooner_one((40.0, True), (30.0, False)) == 0.0
    assert bench.sooner_p([(1.0, False), (2.0, False)], [(3.0, True), (4.0, True)]) == 1 / 6


def test_a_kept_hunt_that_found_nothing_in_a_shorter_budget_is_hunted_again_for_the_longer_one(tmp_path,
                                                                                              monkeypatch):
    """Bounding swarm's median above a time needs its hunts to search that long: ``--budget 50m``
    hunts again, from the same seed, a kept hunt that found nothing in 40 minutes, and keeps the longer
    one; a kept hunt that found its answer, or searched the whole budget, is not run again."""
    bench = _benchmark()
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "results")
    ran: list[str] = []

    def hunt(cmd, **_):
        ran.append(cmd[cmd.index("--seed") + 1])
        out = Path(cmd[cmd.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "hunt.json").write_text(json.dumps({"findings": [], "spent": {"h0000-x": {"wall_s": 3010.0}}}))
        return subprocess.CompletedProcess(cmd, 1)

    monkeypatch.setattr(bench.subprocess, "run", lambda cmd, **k: subprocess.CompletedProcess(cmd, 0, "abc1234\n")
                        if cmd[0] == "git" else hunt(cmd, **k))
    for seed, doc in ((1, {"findings": [], "spent": {"h0000-x": {"wall_s": 2430.0}}}),
                      (2, {"findings": [{"found_in": "h0000-x"}], "spent": {"h0000-x": {"wall_s": 100.0}}})):
        bench.result_path("epochs-off-divergence", "swarm", seed).parent.mkdir(parents=True, exist_ok=True)
        bench.result_path("epochs-off-divergence", "swarm", seed).write_text(json.dumps(doc))
    for seed in (1, 2):
        bench.run_hunt(tmp_path / "out", "epochs-off-divergence", "swarm", seed, "50m")
    assert ran == ["1"], "only the hunt that found nothing in less than 50 minutes"
    assert bench.searched_s(json.loads(bench.result_path("epochs-off-divergence", "swarm", 1).read_text())) == 3010.0
    bench.run_hunt(tmp_path / "out", "epochs-off-divergence", "swarm", 1, "50m")
    assert ran == ["1"], "the longer hunt, kept, searched the budget"


def test_the_benchmark_tells_where_each_hunts_draws_came_from_and_which_showed_the_answer(tmp_path, monkeypatch,
                                                                                         capsys):
    bench = _benchmark()
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    monkeypatch.setitem(bench.ANSWERS, "a1", ["x"])
    options = {"guide": "coverage", "anomaly": None}
    came = ["swarm draw", "swarm draw aimed at coordinator_lost", "mutated from h0000-x (weight 3)",
            "built on h0001-x: kill leader at 3 s, after ..."]
    doc = {"options": options, "findings": [{"found_in": "h0001-x"}], "timeline": [{"run": f"h000{k}-x", "came": c}
                                                               for k, c in enumerate(came)]}
    (tmp_path / "a1" / "coverage").mkdir(parents=True)
    (tmp_path / "a1" / "coverage" / "s1.json").write_text(json.dumps(doc))
    before = {"options": options, "findings": [], "timeline": [{"run": "h0000-x"}]}
    (tmp_path / "a1" / "coverage" / "s2.json").write_text(json.dumps(before))
    bench.origins(["a1"], ["coverage", "swarm"], 2)
    row = capsys.readouterr().out.splitlines()[-1]
    assert row == "| a1 | coverage | 1 | 1, 1, 1, 1 | s1 aimed |", "a hunt kept before timelines said is left out"


def test_the_benchmark_tells_a_guide_sooner_by_more_than_chance_by_an_exact_permutation_test():
    bench = _benchmark()
    assert bench.sooner_p([1, 2, 3], [4, 5, 6]) == 1 / 20, "the one split of six in twenty as far ahead"
    assert bench.sooner_p([4, 5, 6], [1, 2, 3]) == 1.0, "behind: every split is as far ahead or further"
    assert bench.sooner_p([1, 1], [1, 1]) == 1.0, "ties: no guide ahead"
    assert abs(bench.sooner_p([0.8, 2.8, 0.6, 2.1, 0.4], [8.1, 0.7, 7.9, 7.4, 15.9]) - 7 / 252) < 1e-9
