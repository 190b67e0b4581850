"""The coordination layer's own state: who leads the KRaft quorum or the ZooKeeper ensemble, in which
epoch, and how far behind each node is.

Each node is asked directly, through its admin proxy (published on loopback, in no fault's links),
so the answer does not depend on any broker's view:

- a KRaft controller answers a DescribeQuorum request (encoded and decoded by kafka-python's protocol
  classes) only if it leads; the others refuse, so the leader is whoever answers, with the highest
  epoch if an isolated old leader has not yet stepped down;
- a ZooKeeper server answers ``srvr`` with its role and last zxid; the epoch is the zxid's high half.

A node that is down or frozen does not answer within the timeout; that is itself the state
(``reachable`` false: Toxiproxy accepts the connection, nothing answers behind it).
"""

from __future__ import annotations

import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kafka.protocol.admin.cluster import DescribeQuorumRequest, DescribeQuorumResponse

METADATA_TOPIC = "__cluster_metadata"


@dataclass(frozen=True)
class NodeState:
    node: int  # node number: 100+K for controller K, 200+K for ZooKeeper server K
    reachable: bool
    role: str = ""  # leader | follower | observer | voter (KRaft, not leading) | standalone | "" (unknown)
    lag: int | None = None  # records (KRaft) or transactions (ZooKeeper) behind the leader; None: unknown


@dataclass(frozen=True)
class QuorumState:
    leader: int  # node number of the active controller / ensemble leader; -1 when none
    epoch: int  # Raft leader epoch / ZooKeeper epoch; -1 when unknown
    voters: tuple[int, ...]
    nodes: tuple[NodeState, ...] = field(default_factory=tuple)
    majority: bool = False  # a leader serves with a majority of the voters (itself included) in touch

    def as_event(self) -> dict:
        return {"leader": self.leader, "epoch": self.epoch, "voters": list(self.voters), "majority": self.majority,
                "nodes": [{"node": n.node, "reachable": n.reachable, "role": n.role, "lag": n.lag}
                          for n in self.nodes]}


# ------------------------------------------------------------------ KRaft

FETCH_WINDOW_MS = 2000  # a voter counts as in touch if it fetched from the leader this recently


def describe_quorum(port: int, timeout_s: float) -> dict | None:
    """One DescribeQuorum (v1, Kafka 3.3+) to the controller behind 127.0.0.1:``port``; its
    partition's dict; {} when the node answers that it does not lead; None when it does not answer."""
    req = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name=METADATA_TOPIC, partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)])])
    req.with_header(correlation_id=1, client_id="kchaos-quorum")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(req.encode(version=1, header=True, framed=True))
            size = struct.unpack(">i", read_exactly(s, 4))[0]
            resp = DescribeQuorumResponse.decode(read_exactly(s, size), version=1, header=True)
    except (OSError, ValueError, struct.error):
        return None
    if resp.error_code != 0 or not resp.topics or not resp.topics[0].partitions:
        return {}
    p = resp.topics[0].partitions[0]
    if p.error_code != 0:
        return {}
    now = time.time() * 1000
    return {"leader": p.leader_id, "epoch": p.leader_epoch, "hw": p.high_watermark,
            "voters": {v.replica_id: v.log_end_offset for v in p.current_voters},
            "observers": {v.replica_id: v.log_end_offset for v in p.observers},
            "in_touch": [v.replica_id for v in p.current_voters if v.replica_id == p.leader_id
                         or 0 <= now - v.last_fetch_timestamp < FETCH_WINDOW_MS]}


def read_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def kraft_state(ports: dict[int, int], timeout_s: float) -> QuorumState:
    """The quorum as its leader describes it; ``ports``: each controller's admin port by node number."""
    with ThreadPoolExecutor(max_workers=len(ports)) as pool:
        answers = dict(zip(ports, pool.map(lambda p: describe_quorum(p, timeout_s), ports.values()), strict=True))
    return kraft_state_of(answers)


def kraft_state_of(answers: dict[int, dict | None]) -> QuorumState:
    """The quorum from each controller's answer (its leader's description, {} refused, None silent)."""
    leading = [a for a in answers.values() if a]
    if not leading:
        return QuorumState(-1, -1, (), tuple(NodeState(n, answers[n] is not None) for n in answers))
    best = max(leading, key=lambda a: a["epoch"])
    offsets = {**best["observers"], **best["voters"]}
    top = max(offsets.values(), default=0)
    nodes = tuple(NodeState(n, answers[n] is not None, _kraft_role(n, best),
                            top - offsets[n] if offsets.get(n, -1) >= 0 else None)
                  for n in answers)
    voters = tuple(sorted(best["voters"]))
    return QuorumState(best["leader"], best["epoch"], voters, nodes, len(best["in_touch"]) > len(voters) // 2)


def _kraft_role(n: int, described: dict) -> str:
    if n == described["leader"]:
        return "leader"
    if n in described["voters"]:
        return "follower"
    return "observer" if n in described["observers"] else ""


# ------------------------------------------------------------------ ZooKeeper

def four_letter(port: int, word: str, timeout_s: float) -> str | None:
    """A ZooKeeper four-letter word's answer, or None when the server does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(word.encode())
            out = b""
            while chunk := s.recv(4096):
                out += chunk
        return out.decode(errors="replace") or None
    except OSError:
        return None


def parse_srvr(text: str) -> dict[str, str]:
    """``srvr``'s "Key: value" lines (Mode, Zxid, ...); empty for a server not serving."""
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def zk_state(ports: dict[int, int], timeout_s: float) -> QuorumState:
    """The ensemble from each server's ``srvr``: the leader, its epoch (the zxid's high half), each
    server's lag in transactions. A server that lost the quorum does not serve and says so."""
    with ThreadPoolExecutor(max_workers=len(ports)) as pool:
        texts = dict(zip(ports, pool.map(lambda p: four_letter(p, "srvr", timeout_s), ports.values()), strict=True))
    return zk_state_of(texts)


def zk_state_of(texts: dict[int, str | None]) -> QuorumState:
    """The ensemble from each server's ``srvr`` answer (None: it did not answer)."""
    stats = {n: parse_srvr(t) for n, t in texts.items() if t}
    roles = {n: s["Mode"].strip() for n, s in stats.items() if "Mode" in s}
    zxids = {n: int(s["Zxid"].strip(), 16) for n, s in stats.items() if s.get("Zxid", "").strip().startswith("0x")}
    leaders = [n for n, r in roles.items() if r in ("leader", "standalone")]
    leader = max(leaders, key=lambda n: zxids.get(n, -1)) if leaders else -1
    top = zxids.get(leader, -1)
    epoch = top >> 32 if top >= 0 else -1
    # A server answers srvr only while it leads or follows a leader; an old leader cut off keeps
    # saying "leader" until syncLimit passes, so only the newest leader's side counts.
    serving = {n for n, r in roles.items() if r == "follower"} | ({leader} if leader >= 0 else set())
    nodes = tuple(NodeState(n, texts[n] is not None, roles.get(n, ""),
                            max(0, top - zxids[n]) if n in serving and n in zxids else None)
                  for n in texts)
    majority = leader >= 0 and len(serving) > len(texts) // 2
    return QuorumState(leader, epoch, tuple(texts), nodes, majority)


TCP_ESTABLISHED = "01"


def zookeeper_server_connected(proc_net_tcp: str, proxy_ports: dict[int, int]) -> int | None:
    """The ZooKeeper server a broker's session is connected to, from its ``/proc/net/tcp`` (and
    ``tcp6``): the node whose proxy port (``proxy_ports``: node number -> port) an established
    connection goes to. A broker holds one ZooKeeper session, so at most one such connection; None
    while it is between servers."""
    by_port = {port: node for node, port in proxy_ports.items()}
    for line in proc_net_tcp.splitlines():
        cols = line.split()
        if len(cols) < 4 or cols[3] != TCP_ESTABLISHED or ":" not in cols[2]:
            continue
        port = int(cols[2].rsplit(":", 1)[1], 16)
        if port in by_port:
            return by_port[port]
    return None
