"""The tree is the data flow: stages import only earlier stages, and no module cycle exists.

Read from the imports with the standard library (``ast``), lazy imports inside functions
included: a cycle hidden behind a function-level import is still a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "omni_port"

#: Stages in data-flow order; a module may import its own stage and the ones before it.
#: ``model``/``errors``/``report`` are the records and diagnostics every stage shares.
LAYERS = (
    "model",
    "errors",
    "report",
    "pyast",
    "sources",
    "extract",
    "patches",
    "catalog",
    "sync",
    "verify",
    "gpu",
    "v2",
    "api",
    "runtime",
    "cli",
    "__main__",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """The omni_port modules ``name`` imports (a package for ``from package import name``
    only when ``name`` is not itself a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                yield target


GRAPH = {name: sorted(set(_imports(name, path))) for name, path in MODULES.items()}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "omni_port"


def test_every_stage_is_listed() -> None:
    stages = {_stage(m) for m in MODULES} - {"omni_port"}
    assert stages <= set(LAYERS), f"stages missing from LAYERS: {sorted(stages - set(LAYERS))}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_flow_one_way(module: str) -> None:
    """No stage reaches forward: extract never imports sync, the CLI is imported by none."""
    stage = _stage(module)
    if stage == "omni_port":
        return  # the package root holds only the version and the tool's name
    rank = LAYERS.index(stage)
    later = [
        target
        for target in GRAPH[module]
        if _stage(target) != "omni_port" and LAYERS.index(_stage(target)) > rank
    ]
    assert not later, f"{module} imports later stages: {later}"


def test_no_import_cycle() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in GRAPH[node]:
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state:
            cycle = visit(module)
            assert cycle is None, " -> ".join(cycle)


def test_the_checker_sees_a_cycle(tmp_path: Path) -> None:
    """The reader above would find a function-level import (the kind that hid a cycle)."""
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from omni_port.pyast import cstwalk\n", encoding="utf-8")
    assert list(_imports("omni_port.pyast.syntax", path)) == ["omni_port.pyast.cstwalk"]
