"""Exposure per fault (harness/checker/exposure.py) against an independent reference: the same
definition computed in plain Python over the history the test builds."""

from __future__ import annotations

from harness.checker import check_runs
from tests.histories import History

T0 = 1_700_000_000_000
FRESH_MS = 1000


def reference(h: History) -> list[tuple[bool, int, int]]:
    """(measured, exposed, lost) per fault in start order: for each partition, the last live read with a
    high watermark at or before the fault's start and within FRESH_MS of it; exposed, the records
    acknowledged with acks=1 before the fault at or above that read's high watermark; lost, those the
    final reads do not hold."""
    final = {(r["partition"], r["value"]) for r in h.consumed if r["phase"] == "final"}
    out = []
    for f in sorted((e for e in h.events if e["type"] == "fault"), key=lambda e: e["start_ms"]):
        start, measured, exposed, lost = f["start_ms"], False, 0, 0
        for p in sorted({r["partition"] for r in h.consumed}):
            reads = [r for r in h.consumed if r["partition"] == p and r["phase"] == "live" and r["hw"] is not None
                     and start - FRESH_MS <= r["poll_ts_ms"] <= start]
            if not reads:
                continue
            measured = True
            last = max(reads, key=lambda r: r["poll_ts_ms"])
            for s in h.produced:
                if s["partition"] == p and s["status"] == "ok" and s["acks"] == "1" and s["offset"] is not None \
                        and s["ack_ts_ms"] <= start and s["offset"] >= last["hw"]:
                    exposed += 1
                    lost += (p, s["value"]) not in final
        out.append((measured, exposed, lost))
    return out


def leader_only_history() -> History:
    """acks=1 on partition 0: ten records acknowledged, the last read before the first fault saw the
    high watermark at 6, and the final log lacks the last two; partition 1 fully replicated; a second
    fault with no read in the second before it."""
    h = History()
    h.run["producers"][0]["acks"] = "1"
    for i in range(10):
        h.send(f"a{i}", i, acks="1", ts=T0 + i * 10)
    for i in range(5):
        h.read(f"a{i}", i, hw=5, ts=T0 + 500)
    h.read("a5", 5, hw=6, ts=T0 + 950)
    for i in range(4):
        h.send(f"b{i}", i, acks="1", partition=1, ts=T0 + 100 + i * 10)
        h.read(f"b{i}", i, partition=1, hw=i + 1, ts=T0 + 600 + i)
    for r in [x for x in h.produced if x["partition"] == 1 or x["offset"] < 8]:
        h.replica(1, r["value"], r["offset"], r["partition"])
        h.read(r["value"], r["offset"], phase="final", partition=r["partition"], consumer="final")
    h.events.append({"type": "fault", "kind": "kill", "target": "leader", "name": "kill leader",
                     "start_ms": T0 + 1000, "end_ms": T0 + 2000})
    h.events.append({"type": "fault", "kind": "pause", "target": "leader", "name": "pause leader",
                     "start_ms": T0 + 5000, "end_ms": T0 + 6000})
    return h


def test_each_faults_exposure_is_the_references(tmp_path):
    """One check of two runs: acks=1 with records above the high watermark, then acks=all, whose
    records are on every in-sync replica when acknowledged, whatever high watermark a read last saw."""
    exposed = leader_only_history()
    safe = History().clean(20)
    safe.read("v0-5", 5, consumer="c1", hw=10, ts=safe.ts - 60)  # a stale high watermark, as a prefetched fetch has
    safe.events.append({"type": "fault", "kind": "kill", "target": "leader", "start_ms": safe.ts - 50,
                        "end_ms": safe.ts})
    v, w = check_runs([exposed.write(tmp_path / "exposed"), safe.write(tmp_path / "safe")])
    assert reference(exposed) == [(True, 4, 2), (False, 0, 0)]
    assert [(e.measured, e.exposed, e.lost) for e in v.exposure] == reference(exposed)
    assert [e.kind for e in v.exposure] == ["kill", "pause"]
    assert v.exposure_words() == "2 lost of 4 exposed (1 fault not measured)"
    assert [(e.measured, e.exposed, e.lost) for e in w.exposure] == reference(safe) == [(True, 0, 0)]
    assert w.exposure_words() == "nothing exposed"
    from harness.report.page import write_report

    page = write_report([tmp_path / "exposed"], tmp_path / "report.html", title="exposure").read_text()
    assert "data-exposure" in page and "At risk: 2 lost of 4 exposed (1 fault not measured); kill leader: 2 of 4." \
        in page
