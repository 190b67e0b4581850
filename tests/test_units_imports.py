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
