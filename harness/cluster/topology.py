"""Which Toxiproxy proxy carries which link.

Each broker i sits alone on its own Docker network ``net_i`` together with the
Toxiproxy container, which is the only thing it can reach. On ``net_i`` the
names ``kafka-<j>-repl``, ``zk`` and ``controller`` are aliases of Toxiproxy's
address on that network, so every connection broker i opens lands on a proxy
that belongs to broker i alone:

- ``client-<i>``: the host's clients to broker i (published on 127.0.0.1);
- ``client-<i>-<name>``: client ``name``'s own links to broker i, one listener per private client
  (published too), so that one client alone can be slowed, held or cut;
- ``repl-<i>-<j>``: broker i's connections to broker j's inter-broker listener
  (fetches from a leader j, and in ZooKeeper mode controller i's requests to j);
- ``zk-<i>-<k>`` / ``ctl-<i>-<k>``: broker i to ZooKeeper server k or to KRaft controller k.

Each coordination node k (a KRaft controller or a ZooKeeper server) likewise sits alone on its
own network ``qnet_k`` with Toxiproxy, where the names of the other nodes (``controller-j``,
``zk-j``) are Toxiproxy and its own name is itself:

- ``cc-<k>-<j>``: controller k to controller j (Raft fetches, votes);
- ``zq-<k>-<j>`` / ``ze-<k>-<j>``: ZooKeeper server k to server j's quorum / election port;
- ``admin-<k>``: the harness to node k (published on 127.0.0.1, in no fault's links), for the
  quorum's state and, in ZooKeeper mode, for the partition state itself.

A proxy carries both directions of its connections: "upstream" is the bytes the
connecting side sends, "downstream" the bytes it receives. Faults name nodes by number: brokers
1..9, controller k is 100+k (its node.id), ZooKeeper server k is 200+k.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.settings import (
    ADMIN_PROXY_BASE,
    CLIENT_PORT,
    CONTROLLER_ID_BASE,
    PRIVATE_PORT_BASE,
    PROXY_CLIENT_BASE,
    PROXY_PRIVATE_BASE,
    PROXY_REPL_BASE,
    REPLICATION_PORT,
    ZK_ELECTION_BASE,
    ZK_NODE_BASE,
    ZK_PORT,
    ZK_PROXY_BASE,
    ZK_QUORUM_BASE,
    controller_port,
)
from harness.cluster.toxiproxy import ProxySpec


@dataclass(frozen=True)
class Topology:
    brokers: list[int]
    mode: str  # zk | kraft
    private_clients: tuple[str, ...] = ()
    quorum: tuple[int, ...] = ()  # coordination node numbers: 101.. (controllers) or 201.. (ZooKeeper)

    # ------------------------------------------------------------ nodes
    def is_coordination(self, n: int) -> bool:
        return n in self.quorum

    def index(self, n: int) -> int:
        """K of coordination node n (controller K, ZooKeeper server K)."""
        return n - (CONTROLLER_ID_BASE if self.mode == "kraft" else ZK_NODE_BASE)

    def node_key(self, n: int) -> str:
        """The container of node n: kafka-N, controller-K or zookeeper-K."""
        if not self.is_coordination(n):
            return f"kafka-{n}"
        return f"{'controller' if self.mode == 'kraft' else 'zookeeper'}-{self.index(n)}"

    def node_name(self, k: int) -> str:
        """The name by which every node reaches coordination node K (Toxiproxy, except on K's own network)."""
        return f"{'controller' if self.mode == 'kraft' else 'zk'}-{k}"

    def server_name(self, k: int) -> str:
        """Coordination node K's own address, which only Toxiproxy uses."""
        return f"{self.node_key(self.quorum[k - 1])}-server"

    def client(self, b: int) -> str:
        return f"client-{b}"

    def private_client(self, b: int, name: str) -> str:
        """Client ``name``'s own link to broker b."""
        return f"client-{b}-{name}"

    def private_port(self, b: int, name: str) -> int:
        """The proxy port (inside Toxiproxy's container) of client ``name``'s link to broker b."""
        return PROXY_PRIVATE_BASE + 10 * self.private_clients.index(name) + b

    def client_links(self, b: int) -> list[str]:
        """Every link from the host's clients to broker b: the shared one and each private client's."""
        return [self.client(b), *(self.private_client(b, n) for n in self.private_clients)]

    def repl(self, src: int, dst: int) -> str:
        return f"repl-{src}-{dst}"

    def coordination(self, b: int) -> list[str]:
        """Broker b's links to every coordination node; for a coordination node, its links to its peers."""
        if self.is_coordination(b):
            return self.peer_links(self.index(b))
        prefix = "zk" if self.mode == "zk" else "ctl"
        return [f"{prefix}-{b}-{self.index(n)}" for n in self.quorum]

    def peer(self, k: int, j: int) -> list[str]:
        """Node k's connections to node j: Raft's one, or ZooKeeper's quorum and election ones."""
        return [f"cc-{k}-{j}"] if self.mode == "kraft" else [f"zq-{k}-{j}", f"ze-{k}-{j}"]

    def peer_links(self, k: int) -> list[str]:
        """Every link between coordination node k and another one, either side."""
        others = [self.index(n) for n in self.quorum if self.index(n) != k]
        return [x for j in others for x in (*self.peer(k, j), *self.peer(j, k))]

    def broker_links_of(self, k: int) -> list[str]:
        """Every broker's link to coordination node k."""
        prefix = "zk" if self.mode == "zk" else "ctl"
        return [f"{prefix}-{b}-{k}" for b in self.brokers]

    def replication_links(self, b: int) -> list[str]:
        """Every inter-broker proxy that broker b takes part in, either side, itself excluded."""
        return [self.repl(b, o) for o in self.brokers if o != b] + [self.repl(o, b) for o in self.brokers if o != b]

    def between(self, a: int, b: int) -> list[str]:
        return [self.repl(a, b), self.repl(b, a)]

    def isolation_links(self, b: int) -> list[str]:
        """Everything that connects node b (a broker or a coordination node) to the rest of the world."""
        if self.is_coordination(b):
            return [*self.peer_links(self.index(b)), *self.broker_links_of(self.index(b))]
        return [*self.client_links(b), *self.replication_links(b), *self.coordination(b)]

    def speaks_kafka(self, link: str) -> bool:
        """Whether ``link`` carries Kafka's own protocol (clients, brokers, KRaft controllers), not
        ZooKeeper's, and is in some fault's reach (not the harness's admin link)."""
        return not link.startswith(("zk-", "zq-", "ze-", "admin-"))

    def kafka_links(self) -> list[str]:
        """Every link that carries Kafka's protocol, in the order ``proxies`` creates them."""
        return [p.name for p in self.proxies({n: "0.0.0.0" for n in [*self.brokers, *self.quorum]})
                if self.speaks_kafka(p.name)]

    def one_way(self, src: int, dst: int) -> list[tuple[str, str]]:
        """(proxy, stream) pairs that carry bytes from node src to node dst (two brokers or two
        coordination nodes)."""
        if self.is_coordination(src):
            k, j = self.index(src), self.index(dst)
            return [*((x, "upstream") for x in self.peer(k, j)), *((x, "downstream") for x in self.peer(j, k))]
        return [(self.repl(src, dst), "upstream"), (self.repl(dst, src), "downstream")]

    def peers_of(self, n: int) -> list[int]:
        """The nodes n exchanges data with: the other brokers, or the other coordination nodes."""
        return [o for o in (self.quorum if self.is_coordination(n) else self.brokers) if o != n]

    def proxies(self, net_ips: dict[int, str]) -> list[ProxySpec]:
        """Every proxy to create, given Toxiproxy's address on each node's network (by node number)."""
        specs = [ProxySpec(self.client(b), f"0.0.0.0:{PROXY_CLIENT_BASE + b}", f"kafka-{b}:{CLIENT_PORT}")
                 for b in self.brokers]
        specs += [ProxySpec(self.private_client(b, n), f"0.0.0.0:{self.private_port(b, n)}",
                            f"kafka-{b}:{PRIVATE_PORT_BASE + k}")
                  for k, n in enumerate(self.private_clients) for b in self.brokers]
        for src in self.brokers:
            ip = net_ips[src]
            for dst in self.brokers:
                specs.append(ProxySpec(self.repl(src, dst), f"{ip}:{PROXY_REPL_BASE + dst}",
                                       f"kafka-{dst}:{REPLICATION_PORT}"))
            for link, n in zip(self.coordination(src), self.quorum, strict=True):
                k = self.index(n)
                specs.append(ProxySpec(link, f"{ip}:{self.broker_port(k)}",
                                       f"{self.server_name(k)}:{self.serving_port(self.broker_port(k))}"))
        for n in self.quorum:
            k, ip = self.index(n), net_ips[n]
            specs.append(ProxySpec(self.admin(k), f"0.0.0.0:{self.admin_port(k)}",
                                   f"{self.server_name(k)}:{self.serving_port(self.broker_port(k))}"))
            for m in self.peers_of(n):
                j = self.index(m)
                specs += [ProxySpec(link, f"{ip}:{port}", f"{self.server_name(j)}:{port}")
                          for link, port in zip(self.peer(k, j), self.peer_ports(j), strict=True)]
        return specs

    def broker_port(self, k: int) -> int:
        """The port on which brokers reach coordination node K (on their own network, Toxiproxy)."""
        return controller_port(k) if self.mode == "kraft" else ZK_PROXY_BASE + k

    def serving_port(self, broker_port: int) -> int:
        """The port node K serves brokers on: a controller's listener is the port brokers dial; every
        ZooKeeper server serves clients on 2181."""
        return broker_port if self.mode == "kraft" else ZK_PORT

    def peer_ports(self, j: int) -> list[int]:
        """The ports other coordination nodes dial on node J, in the order of ``peer``."""
        return [controller_port(j)] if self.mode == "kraft" else [ZK_QUORUM_BASE + j, ZK_ELECTION_BASE + j]

    def admin(self, k: int) -> str:
        return f"admin-{k}"

    def admin_port(self, k: int) -> int:
        return ADMIN_PROXY_BASE + k

    def aliases_on_broker_net(self) -> list[str]:
        """Names by which broker i reaches Toxiproxy on its own network."""
        return [*(f"kafka-{b}-repl" for b in self.brokers), *(self.node_name(self.index(n)) for n in self.quorum)]

    def aliases_on_quorum_net(self, k: int) -> list[str]:
        """Names by which coordination node K reaches Toxiproxy on its own network: its peers'."""
        return [self.node_name(self.index(n)) for n in self.quorum if self.index(n) != k]
