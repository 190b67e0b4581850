"""What a scenario may ask of the Java driver, checked before any container starts: each table's
``config`` against kafka-clients of the broker's version: property names from the list the build
wrote, types and values by the library itself (``ProducerConfig``/``ConsumerConfig`` in a JVM that
connects nowhere). A copier is a producer and a consumer: its table takes the properties of either,
and each of its two clients gets those of its own kind.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.clients.java import build as java_driver
from harness.clients.owned import owned
from harness.versions import KAFKA_VERSIONS

# The properties only kafka-clients has that the harness sets, beside those both libraries name alike.
OWNED = owned({"producer": ["key.serializer", "value.serializer"],
               "consumer": ["key.deserializer", "value.deserializer"],
               "group": ["key.deserializer", "value.deserializer", "interceptor.classes"],
               "copier": ["key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
                          "max.poll.records"],
               "share_group": ["key.deserializer", "value.deserializer", "share.acknowledgement.mode"]})
# The library's clients a kind of client is made of, by whose property names they take.
MADE_OF = {"producer": ("producer",), "consumer": ("consumer",), "group": ("consumer",),
           "copier": ("producer", "consumer"), "share_group": ("consumer",)}


def version_refusal(version: str) -> str | None:
    """kafka-clients runs at every version kchaos has a Kafka recipe for, whatever the broker's version
    is (its driver is built the first time a scenario names it)."""
    if version not in KAFKA_VERSIONS:
        return f"client_version: kafka-clients {version!r} has no driver build (allowed: {', '.join(KAFKA_VERSIONS)})"
    return None


def refusal(table, kafka_version: str) -> str | None:
    """Why the Java driver of kafka-clients ``kafka_version`` cannot make the client ``table`` describes, or None."""
    kind = table.kind
    library = f"kafka-clients {kafka_version}"
    try:  # the first scenario that names this version builds its driver (seconds, from Maven Central)
        java_driver.build(kafka_version, log=lambda m: print(m, file=sys.stderr))
    except java_driver.DriverBuildError as e:
        return f"client: java needs its driver for {library}, which could not be built: {e}"
    for key in table.config:
        if key in OWNED[kind]:
            return f"config.{key}: {OWNED[kind][key]} (allowed: any other {library} {kind} property)"
    made_of = MADE_OF[kind]
    names = set().union(*(java_driver.config_names(kafka_version)[k] for k in made_of))
    if unknown := [k for k in table.config if k not in names]:
        whose = " or ".join(made_of)
        return f"config.{unknown[0]}: {library} has no {whose} property of that name (allowed: {library}'s " \
               f"{whose} properties, e.g. {', '.join(sorted(names)[:6])}, ...)"
    for lib_kind in made_of:
        if (own := split_config(table.config, lib_kind, kafka_version)) and (
                why := _values_refused(lib_kind, own, kafka_version)):
            return why
    return None


def split_config(config: dict, lib_kind: str, kafka_version: str) -> dict:
    """The properties of ``config`` that kafka-clients' ``lib_kind`` (producer, consumer) takes."""
    names = java_driver.config_names(kafka_version)[lib_kind]
    return {k: v for k, v in config.items() if k in names}


def _values_refused(kind: str, config: dict[str, str], kafka_version: str) -> str | None:
    """The library's own words when it refuses a value (a JVM start, only for a non-empty config)."""
    with tempfile.TemporaryDirectory(prefix="kchaos-java-check-") as tmp:
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps({"properties": config}))
        proc = subprocess.run([java_driver.JAVA, "-XX:TieredStopAtLevel=1", "-cp", java_driver.classpath(kafka_version),
                               "kchaos.Driver", "check", kind, str(cfg)], capture_output=True, text=True, timeout=60)
    if proc.returncode == 0:
        return None
    said = proc.stdout.strip() or proc.stderr.strip().splitlines()[-1:]
    key = next((k for k in config if k in said), "")
    return f"config{'.' + key if key else ''}: {said} (kafka-clients {kafka_version})"
