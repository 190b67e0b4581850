"""The import structure of harness/: no module imports itself through others (an import circle
makes every module in it load, and change, together)."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "harness"


def module_name(path: Path) -> str:
    parts = path.relative_to(HARNESS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Every harness module ``path`` imports, at module level, in functions or for type checking:
    ``from harness.a import b`` names harness.a.b when b is a module, else harness.a."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in modules:
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            out |= subs or {node.module}
            if len(subs) < len(node.names):
                out.add(node.module)
    return out - {module_name(path)}


def import_graph() -> dict[str, set[str]]:
    files = {module_name(f): f for f in HARNESS.rglob("*.py")}
    modules = set(files)
    return {m: imports_of(f, modules) for m, f in files.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_circles_finds_a_planted_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_harness_has_no_import_circle():
    graph = import_graph()
    assert "harness.faults" in graph and "harness.cluster.kafka_cluster" in graph["harness.cluster"]
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


# The stages of the data flow, lowest first. A module may import modules of its own stage and of
# the stages before it, never of a later one: the cluster never calls into set-up or a run, the
# checker never into a run, set-up builds what the cluster runs and never starts one. A module belongs to
# the stage of the longest prefix below that names it.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("harness", "harness.versions", "harness.waiting", "harness.mechanisms")),
    ("history", ("harness.history",)),
    ("cluster", ("harness.cluster",)),
    ("machine tools", ("harness.setup", "harness.setup.engine", "harness.setup.images", "harness.setup.java",
                       "harness.setup.tools", "harness.setup.cds")),
    ("faults", ("harness.faults",)),
    ("client registry", ("harness.clients.registry", "harness.clients.owned")),
    ("scenario", ("harness.scenario",)),
    ("clients", ("harness.clients",)),
    ("run", ("harness.run",)),
    ("checker", ("harness.checker",)),
    ("report", ("harness.report",)),
    ("campaigns", ("harness.run.matrix", "harness.run.lanes", "harness.hunt")),
    ("entry points", ("harness.cli", "harness.__main__", "harness.pytest_plugin", "harness.doctor",
                      "harness.checker.cds_training")),
]


def stage_of(module: str) -> int:
    best, rank = "", -1
    for i, (_, prefixes) in enumerate(STAGES):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > len(best):
                best, rank = p, i
    assert rank >= 0, f"{module} is in no stage: add it to STAGES"
    return rank


def calls_up(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a module into a later stage than its own."""
    return sorted(f"{m} ({STAGES[stage_of(m)][0]}) -> {d} ({STAGES[stage_of(d)][0]})"
                  for m, deps in graph.items() for d in deps if stage_of(d) > stage_of(m))


def test_calls_up_finds_a_planted_call():
    assert calls_up({"harness.cluster.nodes": {"harness.run.runner"}}) == [
        "harness.cluster.nodes (cluster) -> harness.run.runner (run)"]
    assert calls_up({"harness.run.runner": {"harness.cluster.nodes"}}) == []


def test_no_stage_imports_a_later_one():
    found = calls_up(import_graph())
    assert not found, "imports into a later stage:\n" + "\n".join(found)


# A client library is one folder under harness/clients/: nothing outside it names its modules (the
# registry finds a driver by its module's name, as a string).
LIBRARY_FOLDERS = ("harness.clients.librdkafka", "harness.clients.java")


def library_crossings(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for m, deps in graph.items():
        for d in deps:
            lib = next((f for f in LIBRARY_FOLDERS if d == f or d.startswith(f + ".")), None)
            if lib and not (m == lib or m.startswith(lib + ".")):
                out.append(f"{m} -> {d}")
    return sorted(out)


def test_library_crossings_finds_a_planted_one():
    assert library_crossings({"harness.run.nemesis": {"harness.clients.java.process"}}) == [
        "harness.run.nemesis -> harness.clients.java.process"]


def test_no_module_outside_a_client_library_names_its_modules():
    found = library_crossings(import_graph())
    assert not found, "modules that reach into a client library's folder:\n" + "\n".join(found)


def _modules_loaded_by(module: str) -> set[str]:
    """Every module a fresh interpreter holds after importing ``module`` alone."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=HARNESS.parent).stdout
    return set(json.loads(out))


# What the report must never load: it renders checked run directories, so neither Spark nor Docker
# nor a Kafka client nor the cluster nor the machinery of a run has a part in it.
NOT_IN_THE_REPORT = ("pyspark", "docker", "testcontainers", "confluent_kafka", "harness.cluster",
                     "harness.setup", "harness.run", "harness.clients.librdkafka", "harness.clients.java")


def test_the_report_loads_neither_spark_nor_docker_nor_a_run():
    loaded = _modules_loaded_by("harness.report.page")
    found = sorted(m for m in loaded for bad in NOT_IN_THE_REPORT if m == bad or m.startswith(bad + "."))
    assert "harness.report.page" in loaded
    assert not found, f"importing the report loads {found}"


def test_the_terminal_tables_load_no_spark():
    loaded = _modules_loaded_by("harness.report.terminal")
    assert not {m for m in loaded if m == "pyspark" or m.startswith("pyspark.")}
