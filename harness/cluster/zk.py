"""The harness's own ZooKeeper client, asked only while it is connected.

Kazoo queues a request made while its connection is down and wakes its connection thread with a
byte on a socket pair; that thread drains the pair only once connected again. While the ensemble
has no majority for minutes, a caller polling ZooKeeper (the state sampler four times a second, a
broker's start waiting for its old registration to go) fills the pair's buffer, and the next
request blocks in ``send`` for as long as the ensemble stays down: a hunt stood still in a heal for
minutes that way. Asking only while connected keeps every caller's own timeout in force.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState


def zk_connected(zk: KazooClient) -> bool:
    """Whether a request to ``zk`` now goes out at once rather than into kazoo's queue."""
    return zk.state == KazooState.CONNECTED
