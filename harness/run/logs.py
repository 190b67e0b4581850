"""Where log lines go: the terminal shows kchaos's own progress and results; what the client
libraries say (librdkafka through confluent-kafka, the ZooKeeper client) goes to the run
directory's ``logs/clients.log``, where whoever explains an anomaly can read it. ``--verbose``
sends those lines to the terminal as well."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.clients.registry import LIBRARIES

# The loggers the clients are created with (Producer/Consumer/AdminClient(logger=...), KazooClient(logger=...)),
# and each client library's whose clients run in processes of their own (``kchaos.LIBRARY``: their stderr).
CLIENT_LOGGERS = ("kchaos.workload", "kchaos.transactions", "kchaos.cluster",
                  *(f"kchaos.{name}" for name in LIBRARIES if name != "librdkafka"))
CLIENTS_LOG = "clients.log"
FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

_verbose = False


def set_verbose(on: bool) -> None:
    """``--verbose``: every kchaos and client log line on stderr too."""
    global _verbose
    _verbose = on
    if on:
        logging.basicConfig(level=logging.INFO, format=FORMAT, stream=sys.stderr)


def quiet_clients() -> None:
    """Outside a run, client lines are dropped unless verbose (a cluster started by hand, a probe)."""
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).propagate = _verbose
        if not _verbose and not logging.getLogger(name).handlers:
            logging.getLogger(name).addHandler(logging.NullHandler())


@contextmanager
def clients_to(path: Path) -> Iterator[Path]:
    """For the length of the block, client lines are written to ``path`` and not to the terminal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(FORMAT))
    loggers = [logging.getLogger(n) for n in CLIENT_LOGGERS]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        # librdkafka logs at debug level only what a client's `debug` property asks for: all of it is
        # written. The ZooKeeper client's debug chatter is not.
        lg.setLevel(logging.INFO if lg.name == "kchaos.cluster" else logging.DEBUG)
        lg.propagate = _verbose
    try:
        yield path
    finally:
        for lg, (level, propagate) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate
        handler.close()
