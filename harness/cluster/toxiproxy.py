"""A thin Toxiproxy v2 HTTP client.

toxiproxy-python 0.1.1 was tried first and replaced: it keeps the server address
in class attributes (one Toxiproxy per process, so two clusters in one pytest
session would talk to the same server), sends requests without timeouts (a hung
API call would hang a chaos run), cannot create proxies in bulk (/populate) nor
update a toxic in place, and pulls in the Python 2 ``future`` shim. The v2 REST
API is small, so this module speaks it directly with ``requests``.
"""

from __future__ import annotations

from dataclasses import dataclass

import requests

from harness.mechanisms import (
    BANDWIDTH_TOXIC,
    CUT_TOXIC,
    HOLD_TOXIC,
    KAFKA_ANSWERS_TOXIC,
    KAFKA_REQUESTS_TOXIC,
    LATENCY_TOXIC,
    UNARMED,
)

__all__ = ["BANDWIDTH_TOXIC", "CUT_TOXIC", "HOLD_TOXIC", "LATENCY_TOXIC", "PERMANENT_TOXICS", "ProxySpec", "Toxiproxy",
           "ToxiproxyError"]

TIMEOUT_S = 10
PERMANENT_TOXICS = (KAFKA_REQUESTS_TOXIC, KAFKA_ANSWERS_TOXIC)  # no heal takes them off


class ToxiproxyError(RuntimeError):
    pass


@dataclass(frozen=True)
class ProxySpec:
    name: str
    listen: str
    upstream: str


class Toxiproxy:
    """One Toxiproxy server, addressed by its API URL."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self._s = requests.Session()

    def _req(self, method: str, path: str, json=None, ok=(200, 201, 204)) -> requests.Response:
        r = self._s.request(method, self.url + path, json=json, timeout=TIMEOUT_S)
        if r.status_code not in ok:
            raise ToxiproxyError(f"{method} {path} -> {r.status_code}: {r.text.strip()}")
        return r

    def version(self) -> str:
        return self._req("GET", "/version").text.strip()

    def populate(self, proxies: list[ProxySpec]) -> None:
        """Create (or replace) many proxies in one call."""
        body = [{"name": p.name, "listen": p.listen, "upstream": p.upstream, "enabled": True} for p in proxies]
        self._req("POST", "/populate", json=body)

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """Disabled: the listener closes and live connections are reset (connection refused)."""
        self._req("POST", f"/proxies/{proxy}", json={"enabled": enabled})

    def add_toxic(self, proxy: str, name: str, type_: str, stream: str, attributes: dict,
                  toxicity: float = 1.0) -> None:
        body = {"name": name, "type": type_, "stream": stream, "toxicity": toxicity, "attributes": attributes}
        self._req("POST", f"/proxies/{proxy}/toxics", json=body)

    def update_toxic(self, proxy: str, name: str, attributes: dict) -> dict:
        """Change some of a toxic's attributes in place (the rest keep theirs); the toxic as it is now."""
        return self._req("POST", f"/proxies/{proxy}/toxics/{name}",
                         json={"attributes": attributes, "toxicity": 1.0}).json()

    def add_kafka_toxics(self, proxy: str) -> None:
        """The pair of toxics that read Kafka's protocol (docker/toxiproxy/server/kafka.go), unarmed:
        on a proxy no connection has been made through yet, since they find the frames from a
        connection's first byte."""
        self.add_toxic(proxy, KAFKA_REQUESTS_TOXIC, "kafka_requests", "upstream", {"pair": proxy, "api_key": UNARMED})
        self.add_toxic(proxy, KAFKA_ANSWERS_TOXIC, "kafka_answers", "downstream", {"pair": proxy})

    def remove_toxic(self, proxy: str, name: str, missing_ok: bool = True) -> None:
        ok = (200, 204, 404) if missing_ok else (200, 204)
        self._req("DELETE", f"/proxies/{proxy}/toxics/{name}", ok=ok)

    def toxics(self, proxy: str) -> list[dict]:
        return self._req("GET", f"/proxies/{proxy}/toxics").json()

    def reset(self, keep_kafka_toxics: bool = False) -> None:
        """Enable every proxy and remove every toxic: the 'heal everything' call. With
        ``keep_kafka_toxics`` (a cluster that may lose answers) those stay, unarmed: taken off, they
        could not be put back on the connections already made."""
        if not keep_kafka_toxics:
            self._req("POST", "/reset")
            return
        for name, p in self._req("GET", "/proxies").json().items():
            if not p.get("enabled", True):
                self.set_enabled(name, True)
            for t in p.get("toxics", []):
                if t["name"] == KAFKA_REQUESTS_TOXIC:
                    if t["attributes"].get("api_key") != UNARMED:
                        self.update_toxic(name, t["name"], {"api_key": UNARMED})
                elif t["name"] not in PERMANENT_TOXICS:
                    self.remove_toxic(name, t["name"])
