"""Scenario files: the typed, validated description of one run. ``tables``: the workload's tables;
``fault_tables``: faults, the generator and the hunt space; ``model``: ``Scenario``, how the tables fit
together and the cluster settings they need; ``broker_config``: what the workload adds to the
brokers' settings; ``loading``: files and ``--set`` overrides."""

from harness.scenario.broker_config import (
    kip848_broker_config,
    share_broker_config,
)
from harness.scenario.fault_tables import (
    FaultSpec,
    GeneratorSpec,
    HuntSpec,
    TargetField,
    TriggerSpec,
)
from harness.scenario.loading import (
    FREEFORM_MAPS,
    load,
    validate_tables,
)
from harness.scenario.model import (
    ROLE_WORDS,
    Scenario,
)
from harness.scenario.tables import (
    MAX_MEMBERS,
    UNLIMITED_RATE,
    ClientTable,
    ConsumerSpec,
    CopierSpec,
    GroupSpec,
    Isolation,
    ProducerSpec,
    PropMap,
    ScenarioError,
    ScenarioTable,
    ShareGroupSpec,
    TopicSpec,
    VersionText,
    transactional_id,
)

__all__ = [
    "FREEFORM_MAPS",
    "MAX_MEMBERS",
    "ROLE_WORDS",
    "UNLIMITED_RATE",
    "ClientTable",
    "ConsumerSpec",
    "CopierSpec",
    "FaultSpec",
    "GeneratorSpec",
    "GroupSpec",
    "HuntSpec",
    "Isolation",
    "ProducerSpec",
    "PropMap",
    "Scenario",
    "ScenarioError",
    "ScenarioTable",
    "ShareGroupSpec",
    "TargetField",
    "TopicSpec",
    "TriggerSpec",
    "VersionText",
    "kip848_broker_config",
    "load",
    "share_broker_config",
    "transactional_id",
    "validate_tables",
]
