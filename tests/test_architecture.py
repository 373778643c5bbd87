"""The tree is the data flow: stages import only earlier stages, and no module cycle exists.

Read from the imports with the standard library (``ast``), lazy imports inside functions
included: a cycle hidden behind a function-level import is still a cycle.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator, Mapping
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


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path, modules: Mapping[str, Path] = MODULES) -> Iterator[str]:
    """The ``modules`` (omni_port's unless told) ``name`` imports: a package for ``from
    package import name`` only when ``name`` is not itself a module, and a module's own
    parent package too (its ``__init__`` may import the module back, as ``cli/__init__.py``
    did ``cli/output.py``)."""
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
            named = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            targets = named + ([base] if len(named) < len(node.names) else [])
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
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
    """The reader above would find a function-level import (the kind that hid a cycle),
    and an import of the module's own package (``cli/output.py`` -> ``omni_port.cli``)."""
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from omni_port.pyast import cstwalk\n", encoding="utf-8")
    assert list(_imports("omni_port.pyast.syntax", path)) == ["omni_port.pyast.cstwalk"]
    path.write_text("def f():\n    from omni_port.cli import Options\n", encoding="utf-8")
    assert list(_imports("omni_port.cli.output", path)) == ["omni_port.cli"]


BENCH_MODULES = _modules(PACKAGE.parent / "bench")


def test_no_import_cycle_among_the_benchmarks() -> None:
    """bench/ is read as the package is: ``baselines`` imported ``replay`` for a type (under
    ``TYPE_CHECKING``, still a cycle) while ``replay`` imported ``baselines``."""
    graph = {name: set(_imports(name, path, BENCH_MODULES)) for name, path in BENCH_MODULES.items()}
    assert "bench.history" in graph["bench.replay"], "the reader sees bench's own imports"
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(" -> ".join(error.args[1]))


# --- the placement engine ---------------------------------------------------------------------

RULE_PACKAGE = "omni_port.sync.rules"
RULE_MODULES = sorted(m for m in MODULES if m.startswith(RULE_PACKAGE + "."))


def test_every_rule_is_one_module_named_after_it() -> None:
    """One spelling per rule: ``rules/upstream_history.py`` holds ``Rule.UPSTREAM_HISTORY``,
    whose value is ``upstream-history``. One module per rule, one rule per module, and the
    ordered tuple holds each once."""
    from omni_port.sync.rules import RULES

    names = [rule.name.value for rule in RULES]
    assert len(names) == len(set(names))
    modules = {f"{RULE_PACKAGE}.{name.replace('-', '_')}" for name in names}
    assert modules == set(RULE_MODULES)
    for rule in RULES:
        spelled = rule.name.value.replace("-", "_")
        assert type(rule).__module__ == f"{RULE_PACKAGE}.{spelled}"
        assert rule.name.name == spelled.upper()


#: What a rule may not reach: the stages that read files or talk to users, the syntax
#: trees below the facts, and the extraction. What it needs is a fact (``sync.facts``) or a
#: pure helper of the engine's own (``sync.evidence``).
BEYOND_THE_FACTS = (
    RULE_PACKAGE,
    "omni_port.pyast",
    "omni_port.extract",
    "omni_port.report",
    "omni_port.sources",
    "omni_port.api",
    "omni_port.cli",
)


@pytest.mark.parametrize("module", RULE_MODULES)
def test_a_rule_reads_only_facts(module: str) -> None:
    """A rule reaches no other rule, no file, no syntax tree: only the facts the engine
    worked out once, and the engine's own helpers."""
    wrong = [target for target in GRAPH[module] if target.startswith(BEYOND_THE_FACTS)]
    assert not wrong, f"{module} imports {wrong}"


@pytest.mark.parametrize("module", RULE_MODULES)
def test_a_rule_names_no_other_rule(module: str) -> None:
    """The engine stamps ``decided_by``: a rule module names its own rule, and no other."""
    own = module.rpartition(".")[2].upper()
    named = {
        node.attr
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Rule"
    }
    assert named <= {own}, f"{module} names {sorted(named - {own})}"


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(named) + bool(args.vararg) + bool(args.kwarg)
    return count - bool(named and named[0].arg in ("self", "cls"))


def test_no_function_takes_more_than_six_parameters() -> None:
    """Long signatures become option or context records (``sync.context``, a command's
    flags record)."""
    long = [
        f"{name}.{node.name} ({_parameters(node)})"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _parameters(node) > 6
    ]
    assert not long, long


def test_no_answer_is_kept_past_a_run() -> None:
    """The engine and the syntax helpers it calls keep answers for one run (``pyast.memo``),
    never in a process-wide cache that would outlive the inputs it was computed from."""
    kept = [
        f"{name}:{node.lineno}"
        for name, path in MODULES.items()
        if name.startswith(("omni_port.sync", "omni_port.pyast"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr in ("lru_cache", "cache")
        and isinstance(node.value, ast.Name)
        and node.value.id == "functools"
    ]
    assert not kept, kept


def test_the_command_line_and_the_benchmarks_reach_the_engine_through_the_api() -> None:
    """The workflows are functions of ``omni_port.api``; the CLI parses, writes and prints,
    and the benchmarks measure what a user runs."""
    bench = Path(__file__).resolve().parent.parent / "bench"
    reached = {name: GRAPH[name] for name in MODULES if name.startswith("omni_port.cli")}
    for path in sorted(bench.glob("*.py")):
        reached[f"bench.{path.stem}"] = sorted(set(_imports(f"bench.{path.stem}", path)))
    wrong = {
        name: [t for t in targets if t.startswith("omni_port.sync")]
        for name, targets in reached.items()
    }
    assert not {name: t for name, t in wrong.items() if t}, wrong


def test_the_api_exports_what_a_user_calls() -> None:
    """``omni_port.api`` names the stages, the workflows and their records, at most 25 of
    them; the plumbing the command line shares with them stays in the submodules."""
    import omni_port.api as api

    assert len(api.__all__) <= 25, sorted(api.__all__)
    assert all(hasattr(api, name) for name in api.__all__)


#: The records every stage reads: defined with the other records, not at the I/O edge.
RECORDS = ("Upstream", "Release", "Located", "SourceText", "Tree", "Stmt", "Suite")


def test_the_records_stages_share_live_with_the_other_records() -> None:
    """``sources`` downloads and reads; the records it reads into are ``model``'s, so no
    stage imports the I/O edge for a data type."""
    import omni_port.model as model

    assert all(getattr(model, name).__module__ == "omni_port.model" for name in RECORDS)
    wrong = [
        f"{name}: {alias.name}"
        for name, path in MODULES.items()
        if not name.startswith(("omni_port.sources", "omni_port.pyast"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith(("omni_port.sources", "omni_port.pyast.syntax"))
        for alias in node.names
        if alias.name in RECORDS
    ]
    assert not wrong, wrong


# --- the command line -------------------------------------------------------------------------

#: What a command may take from the package root besides the API: its version and name.
ROOT_CONSTANTS = frozenset({"__version__", "TOOL", "api"})


def _api_exports() -> dict[str, frozenset[str]]:
    """Every module of the API a caller may import, with the names it exports: the package
    (``__all__`` and its namespaces) and each namespace (its own ``__all__``)."""
    import importlib

    import omni_port.api as api

    exports = {"omni_port.api": frozenset({*api.__all__, *api.NAMESPACES})}
    for name in api.NAMESPACES:
        module = importlib.import_module(f"omni_port.api.{name}")
        exports[f"omni_port.api.{name}"] = frozenset(module.__all__)
    return exports


CLI_MODULES = sorted(m for m in MODULES if m.startswith("omni_port.cli"))


@pytest.mark.parametrize("module", CLI_MODULES)
def test_the_command_line_imports_only_the_api(module: str) -> None:
    """The CLI parses, writes and prints: every workflow, record and file format it touches
    comes through ``omni_port.api`` (its ``__all__`` and documented namespaces), as Fixit's
    CLI calls ``fixit_paths``."""
    exports = _api_exports()
    wrong = [
        target
        for target in GRAPH[module]
        if target not in exports
        and target != "omni_port"
        and not target.startswith("omni_port.cli")
    ]
    assert not wrong, f"{module} imports {wrong}"


def _bindings(tree: ast.Module, exports: Mapping[str, frozenset[str]]) -> Iterator[str]:
    """The names a CLI module takes from the API that the API does not export, as
    ``module: name``; binds ``api``, ``v2``... to the API modules they name on the way."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level:
            continue
        source = node.module or ""
        for alias in node.names:
            if source == "omni_port":
                if alias.name not in ROOT_CONSTANTS:
                    yield f"omni_port: {alias.name}"
                if alias.name == "api":
                    bound[alias.asname or alias.name] = "omni_port.api"
            elif source in exports:
                if alias.name not in exports[source]:
                    yield f"{source}: {alias.name}"
                inner = f"{source}.{alias.name}"
                if inner in exports:
                    bound[alias.asname or alias.name] = inner

    def target(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Attribute):
            outer = target(node.value)
            inner = f"{outer}.{node.attr}"
            return inner if outer is not None and inner in exports else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            module = target(node.value)
            if module is not None and node.attr not in exports[module]:
                yield f"{module}: {node.attr}"


@pytest.mark.parametrize("module", CLI_MODULES)
def test_the_command_line_uses_only_what_the_api_exports(module: str) -> None:
    """A name the CLI takes from the API (``from omni_port.api.files import encode``,
    ``api.workflows.load_workspace``) is in ``api.__all__`` or a namespace's ``__all__``:
    the plumbing a namespace does not export stays out of the CLI."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    unexported = sorted(set(_bindings(tree, _api_exports())))
    assert not unexported, f"{module} uses {unexported}"


def test_the_checker_sees_an_unexported_name() -> None:
    """The reader above follows ``api.<namespace>.<name>`` and ``from`` imports."""
    source = (
        "from omni_port import api\nfrom omni_port.api import files as f\n"
        "api.workflows.load_workspace\napi.inputs.read_bytes_or_none\nf.decode\n"
    )
    found = set(_bindings(ast.parse(source), _api_exports()))
    assert found == {
        "omni_port.api.inputs: read_bytes_or_none",
        "omni_port.api.files: decode",
    }


def test_every_namespace_of_the_api_is_documented() -> None:
    """``api.NAMESPACES`` are what its docstring names: a caller reads where to look."""
    import omni_port.api as api

    doc = api.__doc__ or ""
    assert [name for name in api.NAMESPACES if f"``{name}" not in doc] == []
    assert not set(api.__all__) & set(api.NAMESPACES)
