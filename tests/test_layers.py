"""The layers, read off the import graph (ast, every import including those inside functions).

``gpu_text`` public API -> ``gpu_text.backend`` -> (``gpu_text.cuda_ops`` -> ``cuda/*.cu``) | ``cpu_fallback``.
The core modules (arrays, ragged batches, character classes, kernel source paths) sit below all of
them and import only each other.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("gpu_text", "cpu_fallback")
DISPATCH = "gpu_text.backend"
CORE = {"gpu_text.arrays", "gpu_text.ragged", "gpu_text.batch", "gpu_text.char_class", "gpu_text.kernel_sources",
        "gpu_text.cuda_runtime"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (``from p import m`` counts as importing ``p.m`` when
    that is a module)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target.split(".")[0] in PACKAGES and target != name:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_cpu_layer_imports_nothing_of_gpu_text():
    offenders = {m: sorted(t for t in targets if t.startswith("gpu_text"))
                 for m, targets in graph().items() if m.startswith("cpu_fallback")}
    assert not {m: t for m, t in offenders.items() if t}


def test_only_the_dispatch_point_reaches_the_kernel_twins():
    offenders = {}
    for module, targets in graph().items():
        if not module.startswith("gpu_text") or module == DISPATCH:
            continue
        bad = sorted(t for t in targets if t.startswith("cpu_fallback")
                     or (t.startswith("gpu_text.cuda_ops") and not module.startswith("gpu_text.cuda_ops")))
        if bad:
            offenders[module] = bad
    assert not offenders, f"only {DISPATCH} may import the kernel twins: {offenders}"


def test_launch_wrappers_and_core_import_only_below_themselves():
    offenders = {}
    for module, targets in graph().items():
        if module.startswith("gpu_text.cuda_ops"):
            allowed = lambda t: t in CORE or t.startswith("gpu_text.cuda_ops")  # noqa: E731
        elif module in CORE:
            allowed = lambda t: t in CORE  # noqa: E731
        else:
            continue
        bad = sorted(t for t in targets if not allowed(t))
        if bad:
            offenders[module] = bad
    assert not offenders


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycles():
    edges = graph()
    # a package's __init__ re-exporting its submodules is not a cycle with those submodules
    for module in edges:
        edges[module] = {t for t in edges[module] if not module.startswith(t + ".")}
    assert find_cycle(edges) is None, f"import cycle: {' -> '.join(find_cycle(edges))}"


def test_the_checker_sees_cycles_and_relative_imports():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    known = modules()
    assert "cpu_fallback.utf8" in imports_of("cpu_fallback.segment", known["cpu_fallback.segment"], known)
    assert "gpu_text.backend" in imports_of("gpu_text.utf8", known["gpu_text.utf8"], known)


def test_character_class_codes_agree_across_layers():
    from cpu_fallback import utf8 as cpu_utf8
    from gpu_text.char_class import CharClass

    header = (REPO / "cuda" / "utf8.cuh").read_text()
    cuda = {m[0]: int(m[1]) for m in re.findall(r"#define\s+GT_CLASS_(\w+)\s+(\d+)", header)}
    for member in CharClass:
        assert getattr(cpu_utf8, f"CLASS_{member.name}") == member.value
        assert cuda[member.name] == member.value
    assert np.unique([m.value for m in CharClass]).size == len(CharClass)
