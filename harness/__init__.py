"""kchaos: a chaos-testing harness for real Apache Kafka."""

import os

__version__ = "0.1.0"

# kchaos forks client processes (group members, Go and Java clients) while the Spark Connect client's
# gRPC threads run a check beside them. gRPC's fork support (on by default in grpcio) runs its own
# handlers at every fork; in one matrix a member's child died in them before its program started
# ("epoll_wait error: Bad file descriptor"), and otherwise they print "skipping fork() handlers" at
# every fork. The children exec at once and never use gRPC, so the support is turned off, before
# gRPC is first imported; a user's own setting wins. Errors only on stderr, likewise.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
