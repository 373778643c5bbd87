"""vLLM's CUDA graph capture helpers on the NPU: entered inside vllm-ascend's communicator switch.

vLLM's ``graph_capture`` (``vllm.distributed.parallel_state``) enters the
``GroupCoordinator.graph_capture`` of the TP, PP and DP groups, and each asserts that its
device communicator is vLLM's ``CudaCommunicator`` or ``XpuCommunicator``. On the NPU it
is vllm-ascend's ``NPUCommunicator``: with TP, DP or PP > 1 the assertion fails (an
``AssertionError``, which omni's ``except RuntimeError`` around its MTP capture does not
catch). vllm-ascend's own V2 capture (``aclgraph_utils``, the speculators' graph managers)
calls vLLM's capture inside ``communicator_switch()``, which points vLLM's
``CudaCommunicator`` at ``NPUCommunicator`` while it is entered. omni's capture code runs
after ``super().capture_model()`` returned, outside that switch.

So the ``communicator-switch`` rewrite enters the switch in the same ``with`` statement,
right before vLLM's helper, and the check (OP331) reports every call of a helper that no
switch encloses. Both read what a module binds, as text; nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from omni_port.pyast.packages import dotted_name

#: vLLM's capture helpers that assert a CUDA or XPU communicator, as an import reaches them.
HELPERS = frozenset(
    {
        ("vllm.distributed.parallel_state", "graph_capture"),
        ("vllm.distributed", "graph_capture"),
    }
)
#: The module that defines them (imported as a module, ``parallel_state.graph_capture``).
HELPER_MODULE = "vllm.distributed.parallel_state"
#: The method of vLLM's ``GroupCoordinator`` that asserts (``get_tp_group().graph_capture()``).
GROUP_METHOD = "graph_capture"
#: vllm-ascend's context manager that lets vLLM's capture see the NPU communicator.
SWITCH = "communicator_switch"
#: Where vllm-ascend keeps its V2 worker code (and the switch).
V2_PACKAGE = "vllm_ascend/worker/v2/"


@dataclass(frozen=True, slots=True)
class CommunicatorSwitch:
    """vllm-ascend's ``communicator_switch``: where it is defined."""

    #: Its module, dotted (what an import of it names), its member path and line.
    module: str
    path: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def find_switch(texts: Mapping[str, str]) -> CommunicatorSwitch | None:
    """The module-level ``communicator_switch`` of vllm-ascend's V2 package (member path ->
    text) that swaps vLLM's ``CudaCommunicator``; None when there is none."""
    for path in sorted(texts):
        if not path.startswith(V2_PACKAGE) or not path.endswith(".py"):
            continue
        if SWITCH not in texts[path]:
            continue  # most modules: skip the parse
        try:
            tree = ast.parse(texts[path])
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == SWITCH and _swaps(node):
                dotted = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
                return CommunicatorSwitch(dotted, path, node.lineno)
    return None


def _swaps(node: ast.FunctionDef) -> bool:
    return any(
        isinstance(target, ast.Attribute) and target.attr == "CudaCommunicator"
        for inner in ast.walk(node)
        if isinstance(inner, ast.Assign)
        for target in inner.targets
    )


# --- what a module binds --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Names:
    """The names a module binds to vLLM's capture helpers and to vllm-ascend's switch."""

    #: Local names of vLLM's helper functions (``graph_capture``).
    helpers: frozenset[str] = frozenset()
    #: Dotted local names of vLLM's helper module (``parallel_state``, ``vllm.distributed.
    #: parallel_state`` after ``import vllm.distributed.parallel_state``).
    modules: frozenset[str] = frozenset()
    #: Local names of vllm-ascend's switch.
    switches: frozenset[str] = frozenset()


def names_of(tree: ast.AST) -> Names:
    """What every import of ``tree`` (at any depth: omni imports them in the method) binds."""
    helpers: set[str] = set()
    modules: set[str] = set()
    switches: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                local = alias.asname or alias.name
                if (node.module, alias.name) in HELPERS:
                    helpers.add(local)
                elif f"{node.module}.{alias.name}" == HELPER_MODULE:
                    modules.add(local)
                elif alias.name == SWITCH and node.module.split(".")[0] == "vllm_ascend":
                    switches.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == HELPER_MODULE:
                    modules.add(alias.asname or alias.name)
    return Names(frozenset(helpers), frozenset(modules), frozenset(switches))


def helper_call(call: ast.Call, names: Names) -> str:
    """The helper ``call`` calls, as written (``""`` when it calls none)."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in names.helpers:
        return func.id
    if not isinstance(func, ast.Attribute) or func.attr != GROUP_METHOD:
        return ""
    owner = func.value
    if dotted_name(owner) in names.modules:
        return ast.unparse(func)
    if isinstance(owner, ast.Call) and dotted_name(owner.func).endswith("_group"):
        return ast.unparse(func)  # a GroupCoordinator: get_tp_group().graph_capture(...)
    return ""


def switch_call(node: ast.expr, names: Names) -> bool:
    return isinstance(node, ast.Call) and dotted_name(node.func) in names.switches


# --- calls outside the switch ---------------------------------------------------------------


def unswitched(tree: ast.Module) -> Iterator[tuple[ast.Call, str]]:
    """Every call of vLLM's capture helpers that no ``with communicator_switch()`` entered
    before it encloses (in the same function: a nested function runs later), with the
    helper as written."""
    yield from _visit(tree, names_of(tree), switched=False)


def _visit(node: ast.AST, names: Names, switched: bool) -> Iterator[tuple[ast.Call, str]]:
    if isinstance(node, ast.With | ast.AsyncWith):
        inside = switched
        for item in node.items:
            yield from _visit(item, names, inside)
            inside = inside or switch_call(item.context_expr, names)
        for stmt in node.body:
            yield from _visit(stmt, names, inside)
        return
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        switched = False
    if isinstance(node, ast.Call) and not switched:
        helper = helper_call(node, names)
        if helper:
            yield node, helper
    for child in ast.iter_child_nodes(node):
        yield from _visit(child, names, switched)
