"""Faults on the links Toxiproxy carries: cuts (both ways or one), latency, holds, bandwidth, each
tagged by its fault so overlapping faults heal apart; and healing everything.

Mixed into KafkaCluster (kafka_cluster.py), whose settings, topology, containers and proxies it uses."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from harness.cluster.toxiproxy import BANDWIDTH_TOXIC, CUT_TOXIC, HOLD_TOXIC, LATENCY_TOXIC, PERMANENT_TOXICS
from harness.mechanisms import KAFKA_REQUESTS_TOXIC, UNARMED

LOG = logging.getLogger("kchaos.cluster")


STREAMS = ("upstream", "downstream")
HOLD_MS = 3_600_000  # a client_pause holds bytes this long at most; its heal releases them at once


def toxic_name(prefix: str, stream: str, tag: str = "") -> str:
    """kchaos-cut-upstream, or kchaos-cut-upstream-f3 for the fault tagged f3."""
    return f"{prefix}-{stream}-{tag}" if tag else f"{prefix}-{stream}"


class LinkFaults:

    def _proxy_names(self) -> set[str]:
        nodes = [*self.settings.broker_ids, *self.settings.coordination_ids]
        return {p.name for p in self.topo.proxies({n: "0" for n in nodes})}

    def _check_links(self, links: Iterable[str]) -> list[str]:
        links = list(links)
        known = self._proxy_names()
        bad = [x for x in links if x not in known]
        if bad:
            raise ValueError(f"unknown links {bad}; links look like client-1, repl-1-2, "
                             f"{self.topo.coordination(1)[0]}")
        return links

    def cut(self, links: Iterable[str], stream: str = "both", tag: str = "") -> None:
        """Black-hole links: bytes stop flowing (TCP stays open, as in a real partition).

        ``tag`` (here and in the other toxics) names this fault's toxics apart from another's on the
        same link, so faults that overlap there can be applied and healed each on its own."""
        assert self.toxi is not None
        streams = STREAMS if stream == "both" else (stream,)
        for link in self._check_links(links):
            for st in streams:
                self.toxi.add_toxic(link, toxic_name(CUT_TOXIC, st, tag), "timeout", st, {"timeout": 0})

    def cut_one_way(self, src: int, dst: int, tag: str = "") -> None:
        """Bytes from node src to node dst (two brokers, or two coordination nodes) are dropped; dst to
        src still flows."""
        assert self.toxi is not None
        for link, st in self.topo.one_way(src, dst):
            self.toxi.add_toxic(link, toxic_name(CUT_TOXIC, st, tag), "timeout", st, {"timeout": 0})

    def latency(self, links: Iterable[str], ms: int, jitter_ms: int = 0, stream: str = "both", tag: str = "") -> None:
        """Add ``ms`` (+- jitter) to each direction of the links, or to one (``stream``)."""
        assert self.toxi is not None
        for link in self._check_links(links):
            for st in STREAMS if stream == "both" else (stream,):
                self.toxi.add_toxic(link, toxic_name(LATENCY_TOXIC, st, tag), "latency", st,
                                    {"latency": ms, "jitter": jitter_ms})

    def hold(self, links: Iterable[str], tag: str = "") -> None:
        """Hold every byte on the links, both ways, until the toxic comes off; then all of it flows
        (Toxiproxy's latency toxic passes what it holds on when it is removed)."""
        assert self.toxi is not None
        for link in self._check_links(links):
            for st in STREAMS:
                self.toxi.add_toxic(link, toxic_name(HOLD_TOXIC, st, tag), "latency", st, {"latency": HOLD_MS})

    def bandwidth(self, links: Iterable[str], kbytes_per_s: int, tag: str = "") -> None:
        assert self.toxi is not None
        for link in self._check_links(links):
            for st in STREAMS:
                self.toxi.add_toxic(link, toxic_name(BANDWIDTH_TOXIC, st, tag), "bandwidth", st,
                                    {"rate": kbytes_per_s})

    def restore(self, links: Iterable[str], only: str | None = None, tag: str | None = None) -> None:
        """Undo every fault on the links, or only the toxics whose name starts with ``only`` and,
        given a ``tag``, carries it (so healing one fault leaves an overlapping one in place)."""
        assert self.toxi is not None
        for link in self._check_links(links):
            if only is None and tag is None:
                self.toxi.set_enabled(link, True)
            for t in self.toxi.toxics(link):
                if t["name"] in PERMANENT_TOXICS:
                    continue
                if (only is None or t["name"].startswith(only)) and (tag is None or t["name"].endswith(f"-{tag}")):
                    self.toxi.remove_toxic(link, t["name"])

    def lose_answers(self, links: Iterable[str], api_key: int) -> dict[str, int]:
        """Arm the Kafka toxics of ``links`` with ``api_key``: from now on the answer to each request of
        that type on them is lost and its connection closed. Each link's answers lost so far (to
        count this fault's own at ``keep_answers``)."""
        assert self.toxi is not None
        if not self.settings.losable_answers:
            raise ValueError("this cluster's answers cannot be lost (it was started without losable_answers)")
        return {link: int(self.toxi.update_toxic(link, KAFKA_REQUESTS_TOXIC, {"api_key": api_key})["attributes"]
                          .get("lost", 0)) for link in self._check_links(links)}

    def keep_answers(self, links: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Disarm the Kafka toxics of ``links``: each link's (requests marked, answers lost) so far."""
        assert self.toxi is not None
        counts = {}
        for link in self._check_links(links):
            attrs = self.toxi.update_toxic(link, KAFKA_REQUESTS_TOXIC, {"api_key": UNARMED})["attributes"]
            counts[link] = (int(attrs.get("marked", 0)), int(attrs.get("lost", 0)))
        return counts

    def heal_network(self) -> None:
        assert self.toxi is not None
        self.toxi.reset(keep_kafka_toxics=self.settings.losable_answers)

    def heal(self) -> None:
        """Undo every fault: network healed, paused brokers resumed, stopped brokers started."""
        self.heal_network()
        for b in sorted(self._paused):
            self.resume(b)
        for b in sorted(self._stopped):
            self.start_broker(b)
