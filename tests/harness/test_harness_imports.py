"""The harness's modules import downward only: no import cycle inside ascendc_ops.harness (counting imports
inside functions, which hide a cycle from Python but not from a reader), the wings one way (verify and pipeline
below cann_bench and bench: a low wing imports no other wing), and no module reaches into another's `_private`
names. Read from the source with ast: nothing is imported."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "ascendc_ops"
HARNESS = "ascendc_ops.harness"
WINGS = ("verify", "pipeline", "cann_bench", "bench")
LOW_WINGS = ("verify", "pipeline")  # below cann_bench and bench (docs/architecture.md)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, tuple[Path, ast.Module]]:
    files = sorted((PACKAGE / "harness").rglob("*.py")) + sorted((PACKAGE / "cli").glob("*.py"))
    files.append(PACKAGE / "__main__.py")
    return {module_name(f): (f, ast.parse(f.read_text(), str(f))) for f in files}


def imported(name: str, path: Path, tree: ast.Module, known) -> list[tuple[str, list[str]]]:
    """(module, names taken from it) for every import in the file, relative ones resolved; a name that is
    itself a known module counts as importing that module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names = [a.name for a in node.names]
            out += [(f"{base}.{n}", []) for n in names if f"{base}.{n}" in known]
            rest = [n for n in names if f"{base}.{n}" not in known]
            out += [(base, rest)] if rest else []
    return out


def graph() -> dict[str, set[str]]:
    src = sources()
    return {
        name: {m for m, _ in imported(name, path, tree, src) if m.startswith(HARNESS) and m in src}
        for name, (path, tree) in src.items()
    }


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle as [a, b, ..., a], or [] when the graph is acyclic (depth-first, three colours)."""
    state, stack = {}, []

    def visit(node) -> list[str]:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return []

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def wing(module: str) -> str | None:
    part = module.removeprefix(HARNESS + ".").split(".")[0]
    return part if module.startswith(HARNESS + ".") and part in WINGS else None


def wing_crossings(edges: dict[str, set[str]]) -> list[str]:
    """Imports from a low wing into any other wing, as "module -> module"."""
    return sorted(
        f"{m} -> {n}"
        for m, targets in edges.items()
        if wing(m) in LOW_WINGS
        for n in targets
        if wing(n) not in (None, wing(m))
    )


def test_find_cycle_sees_a_cycle_and_its_absence():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_relative_and_function_level_imports():
    edges = graph()
    assert f"{HARNESS}.runner" in edges[f"{HARNESS}.bench.ops"]  # from ..runner import ...
    assert f"{HARNESS}.families" in edges[f"{HARNESS}.runner"]  # from .families import BENCH_OPS
    assert f"{HARNESS}.values" in edges[f"{HARNESS}.families.rms_norm"]  # from ..values import ...
    assert f"{HARNESS}.bench.hf_model" in edges[f"{HARNESS}.bench.hf_fusions"]  # inside a function: from .hf_model
    assert f"{HARNESS}.bench.moe" in edges["ascendc_ops.cli.bench"]  # the CLI: from ..harness.bench import moe


def test_no_import_cycle_inside_the_harness():
    assert find_cycle(graph()) == []


def test_wing_crossings_sees_a_low_wing_importing_upward():
    v, p, c = f"{HARNESS}.verify.suite", f"{HARNESS}.pipeline.calibration", f"{HARNESS}.cann_bench.judge"
    assert wing_crossings({v: {c}, p: {f"{HARNESS}.pipeline.l2"}, c: {v, p}}) == [f"{v} -> {c}"]
    assert wing_crossings({v: {p}}) == [f"{v} -> {p}"]  # the low wings stay apart too
    assert wing_crossings({c: {v, p}, v: {f"{HARNESS}.families"}}) == []


def test_the_wings_import_one_way():
    assert wing_crossings(graph()) == []


def test_no_module_uses_another_modules_private_names():
    src = sources()
    found = []
    for name, (path, tree) in src.items():
        taken = imported(name, path, tree, src)
        found += [
            f"{name}: from {m} import {n}"
            for m, names in taken
            if m.startswith(HARNESS)
            for n in names
            if n.startswith("_") and not n.startswith("__")
        ]
        # modules bound to a local name (from . import bench; from .harness import bench): their attributes
        aliases = {
            a.asname or a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for a in node.names
            if any(m.endswith("." + a.name) and m.startswith(HARNESS) for m, _ in taken)
        }
        found += [
            f"{name}: {node.value.id}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ]
    assert found == []
