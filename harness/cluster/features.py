"""The feature levels a broker has finalized (KIP-584): metadata.version, eligible.leader.replicas.version,
transaction.version, group.version and the rest, as the cluster runs them, for run.json.

One ApiVersions request (v3, Kafka 2.7+; kafka-python's protocol classes encode and decode it) to a
broker's client port. ZooKeeper-mode clusters and versions without the feature machinery answer
with no finalized features: {}.
"""

from __future__ import annotations

import socket
import struct

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from harness.cluster.quorum import read_exactly

API_VERSIONS_V = 3


def finalized_features(port: int, timeout_s: float = 5.0) -> dict[str, int]:
    """Feature name -> finalized level, as the broker behind 127.0.0.1:``port`` reports them;
    raises OSError when it does not answer."""
    req = ApiVersionsRequest(client_software_name="kchaos", client_software_version="1")
    req.with_header(correlation_id=1, client_id="kchaos-features")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(req.encode(version=API_VERSIONS_V, header=True, framed=True))
        size = struct.unpack(">i", read_exactly(s, 4))[0]
        resp = ApiVersionsResponse.decode(read_exactly(s, size), version=API_VERSIONS_V, header=True)
    if resp.error_code != 0:
        raise OSError(f"ApiVersions refused (error {resp.error_code})")
    return {f.name: f.max_version_level for f in resp.finalized_features or []}
