"""The feature levels (KIP-584) a KRaft cluster of each Kafka version can be formatted with.

``feature_levels.json`` is read from each version's own jars by ``scripts/feature_levels.py``: per
version and feature (``metadata.version``, ``kraft.version``, ``transaction.version``,
``group.version``, ``eligible.leader.replicas.version``, ``share.version``, ``streams.version``, as
the version has them), the lowest level, the level a new cluster gets (``default``), the newest
production-ready level (``production``) and the newest at all (``testing``). A scenario may format
its cluster at any level from the lowest to the newest production-ready one; levels beyond that need
``unstable.feature.versions.enable`` and are not offered. Knowing them here lets a bad level be
refused before any container starts; whether a set of levels fits together (a feature that needs a
newer metadata.version) is Kafka's to say, when the controllers format their storage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("feature_levels.json")


@dataclass(frozen=True)
class Levels:
    min: int
    default: int
    production: int
    testing: int


@cache
def _table() -> dict[str, dict[str, Levels]]:
    doc = json.loads(TABLE.read_text())
    return {v: {f: Levels(**lv) for f, lv in feats.items()} for v, feats in doc.items()}


def levels(kafka_version: str) -> dict[str, Levels]:
    """Feature -> its levels on ``kafka_version`` ({} for a version without KRaft features)."""
    return _table().get(kafka_version, {})


def defaults(kafka_version: str) -> dict[str, int]:
    """The levels a new KRaft cluster of ``kafka_version`` is formatted with when nothing is asked."""
    return {f: lv.default for f, lv in levels(kafka_version).items()}


def refusal(kafka_version: str, mode: str, features: dict[str, int]) -> str | None:
    """Why ``features`` cannot format a cluster of this version and mode, naming the key and what is
    allowed, or None."""
    if not features:
        return None
    have = levels(kafka_version)
    if mode != "kraft" or not have:
        with_features = ", ".join(_table())
        return (f"features: a KRaft cluster's feature levels; this one is {mode} on {kafka_version} (allowed: "
                f"mode = \"kraft\" with kafka_version {with_features})")
    for name, level in features.items():
        if name == "kraft.version":
            return ("features.kraft.version: follows the quorum (allowed: any other feature; dynamic_quorum = true "
                    "formats kraft.version 1)")
        if name not in have:
            allowed = ", ".join(f for f in have if f != "kraft.version")
            return f"features.{name}: Kafka {kafka_version} has no such feature (allowed: {allowed})"
        lv = have[name]
        if not isinstance(level, int) or isinstance(level, bool) or not lv.min <= level <= lv.production:
            return (f"features.{name}: {level!r} is not a production-ready level on Kafka {kafka_version} "
                    f"(allowed: {lv.min}..{lv.production}; a new cluster gets {lv.default})")
    return None


def upgrade_refusal(where: str, initial: str, running: str, mode: str, formatted: dict[str, int], feature: str,
                    level: int | None) -> str | None:
    """Why ``kafka-features upgrade`` of ``feature`` to ``level`` (None: the newest the version has)
    cannot be asked of a cluster formatted on ``initial`` with ``formatted`` (the scenario's
    features; the rest at that version's defaults) and running ``running`` by then (its newest
    version after the rolling upgrades before), naming the key and what is allowed, or None."""
    have = levels(running)
    if mode != "kraft" or not have:
        return (f"{where}: feature_upgrade changes a KRaft cluster's feature levels; this one is {mode} on {running} "
                f"(allowed: mode = \"kraft\" with kafka_version {', '.join(_table())})")
    if feature == "kraft.version" or feature not in have:
        allowed = ", ".join(f for f in have if f != "kraft.version")
        return f"{where}.feature: {feature!r} is not a feature Kafka {running} upgrades here (allowed: {allowed})"
    lv = have[feature]
    start = formatted.get(feature, defaults(initial).get(feature, 0))
    if level is not None and not start < level <= lv.production:
        return (f"{where}.level: {level} is not an upgrade of {feature} from {start} on Kafka {running} (allowed: "
                f"{start + 1}..{lv.production}, or no level for the newest)" if start < lv.production else
                f"{where}.level: {feature} is at its newest production level ({start}) on Kafka {running} already")
    return None
