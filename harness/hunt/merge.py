"""``kchaos hunt --merge DIR... --out MERGED``: one account of hunts run apart (``--shard K/N`` on
N machines or CI jobs, or hunts with other seeds).

Findings with one signature are one finding, wherever they were found: the merged finding is the
one reproduced best (the highest k of n, then the fewest faults, then the first directory given),
its directory copied whole, and the others are named in its ``also_in``. Totals are summed: the
merged ``wall_s`` is machine time, not the time anyone waited.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.history import write_json_atomic
from harness.hunt.trials import HuntError

HUNT_JSON = "hunt.json"
TOTALS = ("drawn", "runs", "workload_s", "wall_s", "errors")


def read_hunt(d: Path) -> dict:
    """A hunt directory's hunt.json; HuntError (bad input) naming the file and what it lacks."""
    path = d / HUNT_JSON
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise HuntError(f"{path}: not found (allowed: directories a `kchaos hunt --out` wrote)") from None
    except json.JSONDecodeError as e:
        raise HuntError(f"{path}: not JSON ({e})") from None
    missing = [k for k in ("options", "findings", *TOTALS) if k not in doc]
    if missing or doc.get("merged"):
        raise HuntError(f"{path}: {'keys ' + ', '.join(missing) + ' missing' if missing else 'a merge already'} "
                        "(allowed: the hunt.json of one hunt)")
    return doc


def rank(finding: dict, source: int) -> tuple:
    """Lower is better: the best reproduced, then the smallest schedule, then the first directory."""
    k, n = finding["reproduced"]["k"], finding["reproduced"]["n"]
    return (-(k / n if n else 0.0), -k, finding["faults_after"], source)


def merged_findings(hunts: list[tuple[Path, dict]]) -> list[tuple[Path, dict]]:
    """One (source directory, finding) a signature, the best of those found, in order of first
    sight; each carries ``also_in``: where the others were found."""
    by_signature: dict[str, list[tuple[tuple, Path, dict]]] = {}
    for source, (d, doc) in enumerate(hunts):
        for f in doc["findings"]:
            by_signature.setdefault(f["signature"], []).append((rank(f, source), d, f))
    out = []
    for found in by_signature.values():
        _, d, best = min(found, key=lambda x: x[0])
        others = [f"{od}/{of['dir']}" for _, od, of in found if of is not best]
        out.append((d, {**best, "also_in": others, "from": str(d)}))
    return out


def refuse_a_hunts_own_directory(out: Path, held: str = "a hunt of its own") -> None:
    """HuntError unless OUT is new or holds a merge (of ``--merge`` or ``--parallel``); ``held``
    says what OUT holds as the caller's user sees it."""
    if (out / HUNT_JSON).exists() and not json.loads((out / HUNT_JSON).read_text()).get("merged"):
        raise HuntError(f"{out}: holds {held} (allowed: a new --out, or a merge written before)")


def merge(dirs: list[Path], out: Path) -> dict:
    """Write OUT/hunt.json and OUT/findings/ from the hunts in ``dirs``; returns the merged hunt.json.

    The findings are built beside OUT/findings and renamed into place, then hunt.json is replaced
    atomically: a killed merge leaves no half-written finding. OUT may be a merge written before
    (its findings and hunt.json are replaced; the shards of ``--parallel`` live in it too), never a
    hunt's own directory."""
    if not dirs:
        raise HuntError("--merge: no directory given (allowed: two or more `kchaos hunt --out` directories)")
    hunts = [(d, read_hunt(d)) for d in dirs]
    refuse_a_hunts_own_directory(out)
    tmp = out / ".findings.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    findings = []
    for i, (d, f) in enumerate(merged_findings(hunts), start=1):
        fid = f"{i:02d}-{f['anomaly']}"
        src = d / f["dir"]
        if src.is_dir():
            shutil.copytree(src, tmp / fid)
        findings.append({**f, "id": fid, "dir": f"findings/{fid}"})
    doc = {"merged": [str(d) for d, _ in hunts], "options": [h["options"] for _, h in hunts],
           **{k: round(sum(h[k] for _, h in hunts), 1) for k in TOTALS}, "findings": findings}
    shutil.rmtree(out / "findings", ignore_errors=True)
    tmp.rename(out / "findings")
    write_json_atomic(out / HUNT_JSON, doc)
    return doc
