"""What a scenario may ask of the Java driver, checked before any container starts: the kinds of
client it has built (producers that are not transactional, consumers, consumer groups), and each table's ``config``
against kafka-clients of the broker's version: property names from the list the build wrote, types
and values by the library itself (``ProducerConfig``/``ConsumerConfig`` in a JVM that connects nowhere).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from harness.clients.owned import owned
from harness.setup import java_driver

# The properties only kafka-clients has that the harness sets, beside those both libraries name alike.
OWNED = owned({"producer": ["key.serializer", "value.serializer"],
               "consumer": ["key.deserializer", "value.deserializer"],
               "group": ["key.deserializer", "value.deserializer", "interceptor.classes"]})
BUILT = "producers that are not transactional, consumers, consumer groups"
LIBRARY_KIND = {"producer": "producer", "consumer": "consumer", "group": "consumer"}  # whose property names


def refusal(table, kafka_version: str) -> str | None:
    """Why the Java driver cannot make the client ``table`` describes, or None."""
    kind = table.client
    if kind not in LIBRARY_KIND or getattr(table, "transactional", False):
        what = "transactional producers" if kind == "producer" else "copier"
        return f"client: java has no {what} yet (allowed with client = \"java\": {BUILT})"
    library = f"kafka-clients {kafka_version}"
    if not java_driver.built(kafka_version):
        return f"client: java needs its driver for {library} built (run `kchaos doctor --fix`)"
    for key in table.config:
        if key in OWNED[kind]:
            return f"config.{key}: {OWNED[kind][key]} (allowed: any other {library} {kind} property)"
    lib_kind = LIBRARY_KIND[kind]
    names = java_driver.config_names(kafka_version)[lib_kind]
    if unknown := [k for k in table.config if k not in names]:
        return f"config.{unknown[0]}: {library} has no {lib_kind} property of that name (allowed: {library}'s " \
               f"{lib_kind} properties, e.g. {', '.join(sorted(names)[:6])}, ...)"
    return _values_refused(lib_kind, table.config, kafka_version) if table.config else None


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
