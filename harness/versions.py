"""The Kafka versions kchaos can build and run.

Adding a version is one line in ``KAFKA_VERSIONS``: the version string and the
cluster modes it supports. Everything else (Maven artifacts, logging backend,
which tools exist) is derived from the version number, so a new release of an
existing line needs nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass

# version -> modes it can run in. ZooKeeper mode was removed in 4.0; KRaft was
# not production-ready before 3.3, so 2.8 is ZooKeeper only.
KAFKA_VERSIONS: dict[str, tuple[str, ...]] = {
    "2.8.2": ("zk",),
    "3.9.1": ("zk", "kraft"),
    "3.9.2": ("zk", "kraft"),
    "4.1.1": ("kraft",),  # before KAFKA-19888's fix (a wall clock stepped back fails coordinator events)
    "4.1.2": ("kraft",),
    "4.2.2": ("kraft",),
    "4.3.1": ("kraft",),
    "4.4.0": ("kraft",),
}

# The newest version that builds: what a scenario, `kchaos up` and the pytest plugin run when they
# name none, and an image set-up builds before any command asks.
DEFAULT_VERSION = "4.4.0"
# The version most of the scenario catalogue names (the newest with ZooKeeper mode): three of the
# quick matrix's four cells and most of the default test suite run on it, so set-up builds its
# image too, beside the default one.
CATALOGUE_VERSION = "3.9.1"


def default_mode(version: str) -> str:
    """The mode a version runs in when none is named: ZooKeeper where the version has it (the mode
    its scenarios were written for before KRaft), else KRaft."""
    return KAFKA_VERSIONS[version][0] if version in KAFKA_VERSIONS else "kraft"


@dataclass(frozen=True)
class KafkaVersion:
    """One Kafka release and what follows from its number."""

    version: str
    modes: tuple[str, ...]

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def logging(self) -> str:
        """Kafka 4 moved to Log4j 2; older releases use Log4j 1 (reload4j)."""
        return "log4j2" if self.major >= 4 else "log4j1"

    def maven_artifacts(self) -> list[str]:
        """The broker's runtime closure, its tools, and a logging backend, as group:artifact:version."""
        arts = [
            f"org.apache.kafka:kafka_2.13:{self.version}",
            f"org.apache.kafka:kafka-tools:{self.version}",
        ]
        if self.logging == "log4j2":
            arts.append("org.apache.logging.log4j:log4j-slf4j-impl:2.24.3")
        else:
            arts.append("org.slf4j:slf4j-reload4j:1.7.36")
        return arts


def version_key(version: str) -> tuple[int, ...]:
    """A version's order: 3.9.2 < 4.1.2 < 4.10.0."""
    return tuple(int(x) for x in version.split("."))


def upgrades_from(version: str, mode: str) -> list[str]:
    """The versions a rolling upgrade may move a cluster of ``version`` in ``mode`` to: every later
    one that runs in that mode (Kafka upgrades a KRaft cluster from 3.3 or later straight to 4.x; a
    ZooKeeper cluster stays on 3.x, whose last line is the last with ZooKeeper)."""
    return [v for v, modes in KAFKA_VERSIONS.items() if mode in modes and version_key(v) > version_key(version)]


def get_version(version: str) -> KafkaVersion:
    """Look a version up, with an error that lists what is available."""
    if version not in KAFKA_VERSIONS:
        allowed = ", ".join(KAFKA_VERSIONS)
        raise KeyError(f"Kafka version {version!r} has no image recipe; allowed: {allowed}")
    return KafkaVersion(version, KAFKA_VERSIONS[version])


def all_versions() -> list[KafkaVersion]:
    return [KafkaVersion(v, m) for v, m in KAFKA_VERSIONS.items()]


def version_mode_pairs() -> list[tuple[str, str]]:
    """Every (version, mode) combination the harness supports, for test and CI matrices."""
    return [(v, m) for v, modes in KAFKA_VERSIONS.items() for m in modes]


OLD_IBP_PREFIXES = ("0.8", "0.9", "0.10")


def leader_epochs_on(version: str, broker_config: dict[str, str]) -> bool:
    """Whether followers truncate by leader epoch (KIP-101): Kafka 0.11 or later with an
    inter.broker.protocol.version of 0.11 or later; before that they truncate to their HW."""
    ibp = str(broker_config.get("inter.broker.protocol.version", ""))
    return not (ibp.startswith(OLD_IBP_PREFIXES) or str(version).startswith(OLD_IBP_PREFIXES))


def with_default_mode(data: object) -> object:
    """A scenario's or cluster's raw fields with ``mode`` filled in when they name none: the mode of
    their version (or of the default version), as ``default_mode`` says."""
    if isinstance(data, dict) and "mode" not in data:
        return {**data, "mode": default_mode(str(data.get("kafka_version", DEFAULT_VERSION)))}
    return data
