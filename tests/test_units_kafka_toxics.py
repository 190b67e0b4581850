"""kchaos's Kafka toxics (docker/toxiproxy/server/kafka.go) in the Toxiproxy server kchaos builds,
on loopback, between a socket that sends Kafka request frames and one that answers them as a broker
would: an armed link loses the answer to the marked request type after the request was handled and
closes the connection; other types and other connections go on; a reset keeps the toxics, unarmed.
What Kafka does when its answers are lost is tested against real Kafka (tests/test_lost_answers.py)."""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
import time

import pytest

from harness.cluster.toxiproxy import ProxySpec, Toxiproxy
from harness.mechanisms import KAFKA_APIS, KAFKA_REQUESTS_TOXIC
from harness.setup.images import TOXIPROXY_SERVER_DIR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return out
        out += chunk
    return out


class Broker(threading.Thread):
    """Answers every request frame with a frame of its correlation id, and notes what it handled."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.handled: list[tuple[int, int]] = []  # (api key, correlation id)

    def run(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            while (head := read_exactly(conn, 4)) and len(head) == 4:
                body = read_exactly(conn, struct.unpack(">i", head)[0])
                key, _, corr = struct.unpack(">hhi", body[:8])
                self.handled.append((key, corr))
                answer = struct.pack(">i", corr) + b"x" * 100
                try:
                    conn.sendall(struct.pack(">i", len(answer)) + answer)
                except OSError:
                    return


def request(key: int, corr: int) -> bytes:
    body = struct.pack(">hhi", key, 3, corr) + struct.pack(">h", 6) + b"kchaos" + b"y" * 50
    return struct.pack(">i", len(body)) + body


def ask(sock: socket.socket, key: int, corr: int) -> int | None:
    """The correlation id of the answer, or None when the connection closed instead."""
    sock.sendall(request(key, corr))
    head = read_exactly(sock, 4)
    if len(head) < 4:
        return None
    return struct.unpack(">i", read_exactly(sock, struct.unpack(">i", head)[0])[:4])[0]


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    binary = tmp_path_factory.mktemp("toxi") / "toxiproxy-server"
    subprocess.run(["go", "build", "-trimpath", "-o", str(binary), "."], cwd=TOXIPROXY_SERVER_DIR, check=True,
                   timeout=600, capture_output=True)
    port = free_port()
    proc = subprocess.Popen([str(binary), "-host=127.0.0.1", f"-port={port}"], stdout=subprocess.DEVNULL)
    toxi = Toxiproxy(f"http://127.0.0.1:{port}")
    try:
        for _ in range(100):
            try:
                toxi.version()
                break
            except Exception:
                time.sleep(0.05)
        yield toxi
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_armed_link_loses_the_answer_after_the_request_was_handled_and_closes(toxiproxy):
    broker = Broker()
    broker.start()
    listen = free_port()
    toxiproxy.populate([ProxySpec("repl-1-2", f"127.0.0.1:{listen}", f"127.0.0.1:{broker.port}")])
    toxiproxy.add_kafka_toxics("repl-1-2")
    marker = KAFKA_APIS["write_txn_markers"]
    a = socket.create_connection(("127.0.0.1", listen))
    b = socket.create_connection(("127.0.0.1", listen))
    assert ask(a, marker, 1) == 1 and ask(b, marker, 1) == 1, "unarmed: every answer comes back"
    toxiproxy.update_toxic("repl-1-2", KAFKA_REQUESTS_TOXIC, {"api_key": marker})
    assert ask(a, KAFKA_APIS["fetch"], 2) == 2, "another request type's answer comes back"
    assert ask(a, marker, 3) is None, "the marked request's answer is lost and the connection closed"
    assert (marker, 3) in broker.handled, "the request itself reached the broker"
    assert ask(b, KAFKA_APIS["fetch"], 2) == 2, "the other connection goes on"
    attrs = toxiproxy.update_toxic("repl-1-2", KAFKA_REQUESTS_TOXIC, {"api_key": -1})["attributes"]
    assert attrs["lost"] == 1 and attrs["marked"] == 1
    c = socket.create_connection(("127.0.0.1", listen))
    assert ask(c, marker, 1) == 1, "disarmed: answers come back on a new connection"
    toxiproxy.update_toxic("repl-1-2", KAFKA_REQUESTS_TOXIC, {"api_key": marker})
    toxiproxy.reset(keep_kafka_toxics=True)
    names = {t["name"]: t for t in toxiproxy.toxics("repl-1-2")}
    assert names[KAFKA_REQUESTS_TOXIC]["attributes"]["api_key"] == -1, "a reset keeps the toxics, unarmed"
    assert ask(c, marker, 2) == 2
    for s in (a, b, c):
        s.close()
