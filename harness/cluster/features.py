"""The feature levels a broker has finalized (KIP-584): metadata.version, eligible.leader.replicas.version,
transaction.version, group.version and the rest, as the cluster runs them, for run.json.

One ApiVersions request (kafka-python's protocol classes encode and decode it) to a broker's client
port: v4 where the broker has it, else v3 (Kafka 2.7+). The version matters for the features a
broker says it supports: to a v3 request it leaves out every feature whose lowest level is 0
(transaction.version, group.version, share.version: KIP-1022, for clients that cannot read a range
from 0), so only a v4 answer has them. ZooKeeper-mode clusters and versions without the feature
machinery answer with no finalized features: {}.
"""

from __future__ import annotations

import socket
import struct

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from harness.cluster.quorum import read_exactly

API_VERSIONS_V = (4, 3)  # the newest first; a broker without v4 answers UNSUPPORTED_VERSION
UNSUPPORTED_VERSION = 35


def finalized_features(port: int, timeout_s: float = 5.0) -> dict[str, int]:
    """Feature name -> finalized level, as the broker behind 127.0.0.1:``port`` reports them;
    raises OSError when it does not answer."""
    return api_versions_features(port, timeout_s)[0]


def supported_features(port: int, timeout_s: float = 5.0) -> dict[str, int]:
    """Feature name -> the newest level the broker behind 127.0.0.1:``port`` supports (its version's)."""
    return api_versions_features(port, timeout_s)[1]


def api_versions_features(port: int, timeout_s: float) -> tuple[dict[str, int], dict[str, int]]:
    """(finalized levels, newest supported levels) from one ApiVersions answer."""
    for version in API_VERSIONS_V:
        req = ApiVersionsRequest(client_software_name="kchaos", client_software_version="1")
        req.with_header(correlation_id=1, client_id="kchaos-features")
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(req.encode(version=version, header=True, framed=True))
            size = struct.unpack(">i", read_exactly(s, 4))[0]
            resp = ApiVersionsResponse.decode(read_exactly(s, size), version=version, header=True)
        if resp.error_code != UNSUPPORTED_VERSION:
            break
    if resp.error_code != 0:
        raise OSError(f"ApiVersions refused (error {resp.error_code})")
    return ({f.name: f.max_version_level for f in resp.finalized_features or []},
            {f.name: f.max_version for f in resp.supported_features or []})
