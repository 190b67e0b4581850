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
- ``zk-<i>``: broker i to ZooKeeper; ``ctl-<i>``: broker i to the KRaft controller.

A proxy carries both directions of its connections: "upstream" is the bytes the
connecting side sends, "downstream" the bytes it receives.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.settings import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    PRIVATE_PORT_BASE,
    PROXY_CLIENT_BASE,
    PROXY_PRIVATE_BASE,
    PROXY_REPL_BASE,
    REPLICATION_PORT,
    ZK_PORT,
)
from harness.cluster.toxiproxy import ProxySpec


@dataclass(frozen=True)
class Topology:
    brokers: list[int]
    mode: str  # zk | kraft
    private_clients: tuple[str, ...] = ()

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

    def coordination(self, b: int) -> str:
        return f"zk-{b}" if self.mode == "zk" else f"ctl-{b}"

    def replication_links(self, b: int) -> list[str]:
        """Every inter-broker proxy that broker b takes part in, either side, itself excluded."""
        return [self.repl(b, o) for o in self.brokers if o != b] + [self.repl(o, b) for o in self.brokers if o != b]

    def between(self, a: int, b: int) -> list[str]:
        return [self.repl(a, b), self.repl(b, a)]

    def isolation_links(self, b: int) -> list[str]:
        """Everything that connects broker b to the rest of the world."""
        return [*self.client_links(b), *self.replication_links(b), self.coordination(b)]

    def one_way(self, src: int, dst: int) -> list[tuple[str, str]]:
        """(proxy, stream) pairs that carry bytes from broker src to broker dst."""
        return [(self.repl(src, dst), "upstream"), (self.repl(dst, src), "downstream")]

    def proxies(self, net_ips: dict[int, str]) -> list[ProxySpec]:
        """Every proxy to create, given Toxiproxy's address on each broker's network."""
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
            if self.mode == "zk":
                specs.append(ProxySpec(self.coordination(src), f"{ip}:{ZK_PORT}", f"zk-server:{ZK_PORT}"))
            else:
                specs.append(ProxySpec(self.coordination(src), f"{ip}:{CONTROLLER_PORT}",
                                       f"controller-server:{CONTROLLER_PORT}"))
        return specs

    def aliases_on_broker_net(self) -> list[str]:
        """Names by which broker i reaches Toxiproxy on its own network."""
        names = [f"kafka-{b}-repl" for b in self.brokers]
        return [*names, "zk" if self.mode == "zk" else "controller"]
