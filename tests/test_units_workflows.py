"""The CI workflows as GitHub reads them: the hunt workflow's shards are exactly 1..N of the N its
commands name, each uploads what the merge job downloads, and the merge reads every shard."""

from __future__ import annotations

import re
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
