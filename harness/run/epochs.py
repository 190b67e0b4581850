"""A transactional producer's epoch driven up before its run (``ProducerSpec.epoch_from``).

Transactions version 2 bumps a producer's epoch on every commit and abort; at the epoch's limit
(32767) the coordinator must give the transactional.id a new producer id, a path with bugs of its own
(KAFKA-18660, KAFKA-20090) that a run of minutes never reaches from epoch 0. kchaos-epochs
(docker/epochs) sends the transactional.id's InitProducerId requests, each one bumping the epoch,
until it is at ``epoch_from``; the run's producer then starts a few hundred transactions short of the
limit. It runs before the run's clients are made: a client made first would be fenced by it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

from harness.cluster import KafkaCluster
from harness.history.events import EpochsDriven, EventLog, now_ms
from harness.run.directory import RunError
from harness.scenario import Scenario
from harness.setup.images import epochs_binary

DRIVE_TIMEOUT_S = 600


def drive_epochs(c: KafkaCluster, s: Scenario, events: EventLog, log: Callable[[str], None]) -> None:
    """Each producer instance with ``epoch_from``: its transactional.id's epoch taken there, written
    to the run's events; RunError when the coordinator refuses on the way."""
    for p in s.producers:
        if p.epoch_from is None:
            continue
        for name in p.instance_names:
            driven = _drive(c, p.transactional_id_of(name), p.epoch_from, log)
            events.write(driven)
            log(f"producer {name}: {driven.transactional_id} at epoch {driven.epoch} (producer id "
                f"{driven.producer_id}) after {driven.requests} InitProducerId requests in {driven.seconds:.1f} s")


def _drive(c: KafkaCluster, tid: str, to: int, log: Callable[[str], None]) -> EpochsDriven:
    cmd = [str(epochs_binary(log)), "-bootstrap", c.bootstrap_servers.split(",")[0], "-transactional-id", tid,
           "-to", str(to), "-timeout", f"{DRIVE_TIMEOUT_S}s"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=DRIVE_TIMEOUT_S + 30)
    if r.returncode != 0:
        raise RunError(f"{tid}: its producer epoch could not be driven to {to}: {r.stderr.strip()[-500:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return EpochsDriven(ts_ms=now_ms(), transactional_id=tid, **out)
