"""PySpark's DataFrame API, imported on first use. An anomaly class's module holds its record (the
label, the column head, who it is judged against) beside its Spark count; whoever reads only the
record (the report, the terminal's tables, the promise table) does not load PySpark. ``F`` stands
for ``pyspark.sql.functions`` and ``Window`` for ``pyspark.sql.Window``: the first attribute read
imports the real thing, and every later one is a dictionary lookup."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


class _OnFirstUse:
    """A module, or a name in one, imported when one of its attributes is first read."""

    def __init__(self, module: str, name: str = "") -> None:
        self._module, self._name = module, name

    def __getattr__(self, attr: str) -> Any:
        target = importlib.import_module(self._module)
        if self._name:
            target = getattr(target, self._name)
        value = getattr(target, attr)
        setattr(self, attr, value)  # later reads of attr skip __getattr__
        return value


if TYPE_CHECKING:
    from pyspark.sql import Window
    from pyspark.sql import functions as F
else:
    F = _OnFirstUse("pyspark.sql.functions")
    Window = _OnFirstUse("pyspark.sql", "Window")

__all__ = ["F", "Window"]
