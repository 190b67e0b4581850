"""What a run could not judge because a client did not report it: each capability a client library
lacks (run.json's ``clients[].cannot_tell``, from harness/clients/registry.py) and the anomaly classes
or measures it leaves unjudged, in part or whole. The verdict lists them (``not_judged``) beside the
counts, so a zero reads "not looked for" where it was not, rather than "none found"."""

from __future__ import annotations

from harness.checker.verdict import NotJudged
from harness.history.contract import RunConfig

# capability -> (what it leaves unjudged: an anomaly class or a measure, how much of it, why)
UNJUDGED: dict[str, tuple[str, str, str]] = {
    "poll_hw": ("uncommitted_read", "part",
                "reads at or above the high watermark the poll saw are not looked for (the client reports no "
                "high watermark with its records); reads of records absent from the final log still count"),
    "send_time": ("latency", "whole",
                  "its sends carry their callback's time as the send's: the send-to-acknowledgement latency "
                  "is not measured"),
    "failed_send_partition": ("indeterminate_landed", "part",
                              "a failed send's partition is the one Kafka's default partitioner gives its key "
                              "(the client reports none): exact only where it partitions keys as Kafka does"),
}


def not_judged(run: RunConfig) -> list[NotJudged]:
    """Per client library of the run that lacks a capability, what that leaves unjudged."""
    out = []
    for lib in run.libraries():
        who = f"{lib.name} {lib.version}".strip()
        for cap in lib.cannot_tell:
            if cap in UNJUDGED:
                what, extent, why = UNJUDGED[cap]
                out.append(NotJudged(client=who, capability=cap, unjudged=what, extent=extent, why=why))
    return out
