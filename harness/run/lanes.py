"""A matrix's cells as lanes: the cells of one cluster's settings (Kafka version, mode, ...) one after
another on a cluster they share, and lanes of different settings side by side.

A lane runs in a process of its own, so two runs at once share nothing in the process that runs
them: not the client loggers each run's ``clients.log`` is written from (runs/logs.py), not the
interpreter lock the recording clients' threads take, not a signal. The matrix's process starts a
lane once its image is built and the number of lanes running is below the limit, records what
each lane reports (a run's start, its end, a run that could not be carried out) and checks each
finished run while the lanes go on. One lane at a time runs in the matrix's own process, as one
list in plan order, the next cluster of other settings booting while the current run goes on.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.run.kept_cluster import KeptCluster, may_share_a_cluster, with_topic_and_ids_of_its_own

if TYPE_CHECKING:
    from harness.scenario import Scenario

STOP_GRACE_S = 60.0  # a stopped lane's time to remove its cluster before it is killed (the reaper then does)

# One cell of a lane: its number in the plan (its topic's tag on a shared cluster), the scenario it
# runs, its overrides (for the repeat command), its scenario file as given, and its run directory.
@dataclass(frozen=True)
class LaneCell:
    number: int
    run_id: str
    scenario: Scenario
    overrides: tuple[str, ...]
    scenario_file: str
    kafka_version: str


@dataclass
class Lane:
    """Cells run one after another, in plan order; a lane of the matrix's side-by-side mode has one
    cluster's settings."""

    cells: list[LaneCell] = field(default_factory=list)

    @property
    def first_version(self) -> str:
        return self.cells[0].kafka_version


# What a lane says of a cell: ("start", number, {}), ("done", number, {"seconds", "acked", "final"}),
# ("error", number, {"reason"}).
Report = Callable[[str, int, dict[str, Any]], None]


def by_cluster_settings(cells: list[LaneCell]) -> list[Lane]:
    """``cells`` as one lane per cluster settings, in the order each settings first appears."""
    lanes: dict[str, Lane] = {}
    for c in cells:
        lanes.setdefault(c.scenario.cluster_settings().model_dump_json(), Lane()).cells.append(c)
    return list(lanes.values())


def run_lane(lane: Lane, runs_dir: Path, fresh: bool, report: Report,
             image_ready: Callable[[str], None] | None = None,
             kept_cluster: Callable[[], KeptCluster] = KeptCluster) -> None:
    """Run ``lane``'s cells one after another, each cell that may share a cluster on the kept one
    (unless ``fresh``), on a topic of its own, and the next cluster of other settings booting while
    the current run goes on. A cell that cannot be carried out is reported as an error and the next
    one runs; an interrupt removes the kept cluster and propagates."""
    from harness.run import runner
    from harness.setup.images import ImageError

    with kept_cluster() as kept:
        for i, c in enumerate(lane.cells):
            s, ov = c.scenario, list(c.overrides)
            reuse = not fresh and may_share_a_cluster(s)
            if reuse:
                _boot_the_next_cluster(lane.cells[i + 1:], s, kept, image_ready)
                s = with_topic_and_ids_of_its_own(s, f"m{c.number}")  # its name goes into the repeat command too
                ov.append(f'topic.name="{s.topic.name}"')
            report("start", c.number, {})
            t0 = time.monotonic()
            try:
                if image_ready is not None:
                    image_ready(s.kafka_version)
                res = kept.execute(s, runs_dir / c.run_id, reuse, scenario_file=c.scenario_file, overrides=ov,
                                   log=lambda m: None)
                report("done", c.number, {"seconds": round(time.monotonic() - t0, 1), "acked": res.acked,
                                          "final": res.final})
            except (*runner.NOT_CARRIED_OUT, ImageError) as e:
                report("error", c.number, {"reason": str(e)[:2000]})


def _boot_the_next_cluster(rest: list[LaneCell], current: Scenario, kept: KeptCluster,
                           image_ready: Callable[[str], None] | None) -> None:
    """While the current cell runs, boot the cluster of the next one to run, when that one shares a
    cluster of other settings (the next Kafka version or mode): its 15-25 s of boot then overlap
    this run instead of following it."""
    for c in rest[:1]:
        if may_share_a_cluster(c.scenario) and c.scenario.cluster_settings() != current.cluster_settings():
            ready = functools.partial(image_ready, c.kafka_version) if image_ready is not None else None
            kept.boot_ahead(c.scenario, before=ready)


def _lane_process(lane: Lane, runs_dir: Path, fresh: bool, kept_cluster: Callable[[], KeptCluster],
                  conn: Connection) -> None:
    """A lane's process: what it runs is reported down ``conn``. The terminal's Ctrl-C reaches the
    matrix's process, which stops the lane with SIGTERM (a SystemExit here, so the kept cluster is
    removed on the way out); the lane dies with the thread that started it (a killed matrix)."""
    from harness.cluster import reaper
    from harness.run import logs

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reaper.install_signal_handlers()
    reaper.die_with_parent()
    logs.quiet_clients()
    try:
        run_lane(lane, runs_dir, fresh, lambda what, number, extra: conn.send((what, number, extra)),
                 kept_cluster=kept_cluster)
    finally:
        conn.close()


class SideBySide:
    """Lanes run at most ``at_once`` at a time, each in a process of its own started once its first
    image is built; ``report`` is called in this process for everything a lane says."""

    def __init__(self, at_once: int, report: Report, image_ready: Callable[[str], None] | None,
                 kept_cluster: Callable[[], KeptCluster] = KeptCluster) -> None:
        self.at_once, self.report, self.image_ready, self.kept_cluster = at_once, report, image_ready, kept_cluster
        self._stopping = threading.Event()
        self._running: set[multiprocessing.process.BaseProcess] = set()
        self._lock = threading.Lock()

    def run(self, lanes: list[Lane], runs_dir: Path, fresh: bool) -> None:
        """Run every lane; returns when all have ended. An interrupt, or a lane that fails, stops the
        others (each removes its cluster) and propagates. The lanes' threads are daemons: one still
        waiting for its image when the matrix is stopped starts nothing and is not waited for."""
        if not lanes:
            return
        queue = list(reversed(lanes))  # taken from the end: plan order
        failed: list[BaseException] = []
        ended = threading.Event()
        workers = min(self.at_once, len(lanes))
        left = workers

        def worker() -> None:
            nonlocal left
            try:
                while not self._stopping.is_set():
                    with self._lock:
                        if not queue:
                            return
                        lane = queue.pop()
                    self._lane(lane, runs_dir, fresh)
            except BaseException as e:  # said to the matrix's thread, which stops the others
                failed.append(e)
            finally:
                with self._lock:
                    left -= 1
                    if failed or not left:
                        ended.set()

        for _ in range(workers):
            threading.Thread(target=worker, name="kchaos-lane", daemon=True).start()
        try:
            while not ended.wait(0.5):  # waited for in slices: an interrupt reaches this thread at once
                pass
            if failed:
                raise failed[0]
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Start no more lanes; ask the running ones to stop, wait for them to remove their clusters,
        and kill any that has not within STOP_GRACE_S."""
        self._stopping.set()
        with self._lock:
            running = list(self._running)
        for p in running:
            with contextlib.suppress(ProcessLookupError, TypeError):
                p.terminate()  # SIGTERM
        deadline = time.monotonic() + STOP_GRACE_S
        for p in running:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()

    def _lane(self, lane: Lane, runs_dir: Path, fresh: bool) -> None:
        if self.image_ready is not None:
            self.image_ready(lane.first_version)
        if self._stopping.is_set():
            return
        ctx = multiprocessing.get_context("spawn")
        receive, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_lane_process, args=(lane, runs_dir, fresh, self.kept_cluster, send),
                        name=f"kchaos-lane-{lane.first_version}", daemon=True)
        with self._lock:
            if self._stopping.is_set():
                return
            p.start()
            self._running.add(p)
        send.close()
        try:
            while True:
                try:
                    what, number, extra = receive.recv()
                except EOFError:  # the lane ended
                    break
                self.report(what, number, extra)
            p.join()
        finally:
            with self._lock:
                self._running.discard(p)
        if p.exitcode != 0 and not self._stopping.is_set():
            raise RuntimeError(f"the lane of {', '.join(c.run_id for c in lane.cells)} ended with exit code "
                               f"{p.exitcode} (its traceback is above)")
