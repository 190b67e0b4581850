"""kchaos: a chaos-testing harness for real Apache Kafka."""

import os

__version__ = "0.1.0"

# The Spark Connect client's gRPC core says at INFO on stderr whenever a process forks while its
# threads run ("Other threads are currently calling into gRPC, skipping fork() handlers"), as a
# matrix does for every client process it starts beside a check: not a line for the user's
# terminal. Set before gRPC is first imported; a user's own setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
