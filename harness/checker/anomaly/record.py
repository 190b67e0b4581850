"""The record of one anomaly class: everything about it in one place."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from harness.checker.excuses import Excuses, Promise
    from harness.checker.prepare import Inputs
    from harness.checker.reference import Tables


# The part of a workload that can show a class: any producer and reader ("records"), a transactional
# producer or the copier ("transactions"), the copier ("copier"), a consumer group ("groups"), a
# share group ("share_groups").
Workload = Literal["records", "transactions", "copier", "groups", "share_groups"]

@dataclass(frozen=True)
class AnomalyClass:
    """An anomaly class of the history contract.

    ``definition`` is the contract's text; ``count`` finds its instances with Spark (one finding row
    each, attributed to ``owner``: the producer that wrote the value, the topic of the partition, or
    the group); ``reference`` counts the same definition in memory, the independent implementation
    the tests hold ``count`` to; ``promise`` says whether a configuration promises never to show it
    (and ``group_promise`` for a group, by how it commits); ``label`` heads terminal tables and
    ``html`` the report's matrix columns (hyphenated to wrap); ``workload`` is the part of a workload
    that can show it (``WORKLOADS``), so a table leaves out the classes a run could not show."""

    name: str
    label: str
    contract: Literal["v1", "v2"]
    owner: Literal["producer", "partition", "group"]
    definition: str
    count: Callable[[Inputs], DataFrame | None]
    reference: Callable[[Tables], int]
    promise: Callable[[Excuses], Promise]
    group_promise: Callable[[Excuses, str], Promise] | None = None
    html: str = ""
    workload: Workload = "records"

    @classmethod
    def of(cls, module: str, label: str, contract: Literal["v1", "v2"],
           owner: Literal["producer", "partition", "group"], html: str = "",
           workload: Workload = "records") -> AnomalyClass:
        """The record of the class module ``module`` defines: its docstring is the definition, its
        ``count``, ``reference``, ``promise`` (and a group's ``group_promise``) the functions."""
        m = sys.modules[module]
        return cls(module.rsplit(".", 1)[-1], label, contract, owner, m.__doc__ or "", m.count, m.reference, m.promise,
                   getattr(m, "group_promise", None), html, workload)

    @property
    def column_head(self) -> str:
        """The report's matrix column head: ``html``, else the name with spaces."""
        return self.html or self.name.replace("_", " ")
