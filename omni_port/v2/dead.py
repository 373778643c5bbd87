"""Code of the copied NPU wrappers that the V2 runners' own refusals make impossible.

A copied NPU wrapper keeps every branch of vllm-ascend's method, also those for parallel
layouts omni's V2 runners refuse at start-up (``_validate_parallel_support`` raises for
pipeline parallelism and prefill context parallelism). Under such a refusal some runner
attributes have one value: with one pipeline stage vLLM's ``self.is_last_pp_rank =
get_pp_group().is_last_rank`` is true, vLLM builds no PCP manager, vllm-ascend's legacy
spec-PP transport is off. A branch whose test is false under those values never runs, and
an NPU helper that returns at its first statement under them does nothing; each is a note
(OP336), so a reviewer of vLLM-Omni's PR need not read them. Each value holds only while
its source says so: the attribute's assignment in vLLM's or vllm-ascend's runner, read
here, and the refusal in the generated modules. Whatever depends on a stage's
configuration alone (DSpark's draft-KV send reads the KV-transfer config) stays undecided.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from omni_port.model import Code, Finding, Severity
from omni_port.pyast.parser import module_or_none
from omni_port.report import shorten
from omni_port.v2 import conditions, wrap

#: An expression whose value the refusals do not decide.
UNKNOWN = object()


@dataclass(frozen=True, slots=True)
class Fixed:
    """A runner attribute whose value a refused parallel size fixes."""

    attribute: str
    value: object
    #: The parallel size the generated modules refuse above 1.
    refused: str
    #: The assignment (its start, as ``ast.unparse`` writes it) the value follows from, in
    #: vLLM's runner (``vllm``) or vllm-ascend's (``npu``).
    source: str
    statement: str
    why: str


FIXED = (
    Fixed(
        "is_last_pp_rank",
        True,
        "pipeline_parallel_size",
        "vllm",
        "self.is_last_pp_rank = get_pp_group().is_last_rank",
        "the only pipeline stage is the last",
    ),
    Fixed(
        "is_first_pp_rank",
        True,
        "pipeline_parallel_size",
        "vllm",
        "self.is_first_pp_rank = get_pp_group().is_first_rank",
        "the only pipeline stage is the first",
    ),
    Fixed(
        "pcp_manager",
        None,
        "prefill_context_parallel_size",
        "vllm",
        "self.pcp_manager = pcp.maybe_build_pcp_manager(",
        "vLLM's maybe_build_pcp_manager returns None for prefill_context_parallel_size <= 1",
    ),
    Fixed(
        "use_spec_pp",
        False,
        "pipeline_parallel_size",
        "npu",
        "self.use_spec_pp = spec_pp_support is not None",
        "vllm-ascend's resolve_spec_pp_support returns None for pipeline_parallel_size <= 1",
    ),
)


def facts(modules: Mapping[str, ast.Module], sources: Mapping[str, str]) -> dict[str, Fixed]:
    """The fixed attributes (by name) whose refusal the generated modules make and whose
    assignment ``sources`` (``vllm`` and ``npu`` runner texts) still hold."""
    assigned = {name: _assignments(text) for name, text in sources.items()}
    return {
        f.attribute: f
        for f in FIXED
        if any(a.startswith(f.statement) for a in assigned.get(f.source, ()))
        and any(conditions.refuses(tree, f.refused) for tree in modules.values())
    }


def _assignments(text: str) -> list[str]:
    tree = module_or_none(text)
    if tree is None:
        return []
    return [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Assign)]


def findings(
    modules: Mapping[str, ast.Module], sources: Mapping[str, str], npu_class: str
) -> Iterator[Finding]:
    """A note per branch of a copied NPU wrapper that never runs, and per call of an NPU
    helper that returns at once, under the refusals."""
    known = facts(modules, sources)
    if not known:
        return
    helpers = _helpers(sources.get("npu", ""), npu_class)
    for name in sorted(modules):
        for function in _wrappers(modules[name]):
            yield from _dead(name, function, known, helpers)


def _wrappers(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The copied NPU wrappers: methods that call omni's body under its kept name."""
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _calls_body(node):
                yield node


def _calls_body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = wrap.body_name(function.name)
    return any(
        isinstance(n, ast.Attribute) and n.attr == body and _is_self(n.value)
        for n in ast.walk(function)
    )


def _helpers(text: str, npu_class: str) -> dict[str, ast.FunctionDef]:
    tree = module_or_none(text)
    cls = next(
        (
            n
            for n in (tree.body if tree else [])
            if isinstance(n, ast.ClassDef) and n.name == npu_class
        ),
        None,
    )
    return {n.name: n for n in (cls.body if cls else []) if isinstance(n, ast.FunctionDef)}


def _dead(
    module: str,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    known: Mapping[str, Fixed],
    helpers: Mapping[str, ast.FunctionDef],
) -> Iterator[Finding]:
    local = _aliases(function, known)
    for node in ast.walk(function):
        if isinstance(node, ast.If):
            used: list[Fixed] = []
            value = _value(node.test, known, local, used)
            if value is False or (value is True and node.orelse):
                what = "its body" if value is False else "its else branch"
                yield _note(
                    module, node, f"`if {shorten(ast.unparse(node.test))}`: {what} never runs", used
                )
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            yield from _idle_call(module, node, known, helpers)


def _idle_call(
    module: str, node: ast.Expr, known: Mapping[str, Fixed], helpers: Mapping[str, ast.FunctionDef]
) -> Iterator[Finding]:
    """A call of an NPU helper whose first statement returns under the fixed values."""
    call = node.value
    assert isinstance(call, ast.Call)
    func = call.func
    if not (isinstance(func, ast.Attribute) and _is_self(func.value)) or func.attr not in helpers:
        return
    helper = helpers[func.attr]
    local = _aliases(helper, known)
    for stmt in helper.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # its docstring
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute | ast.Name):
            continue  # an alias its guard reads (``state = self.execute_model_state``)
        used: list[Fixed] = []
        first = stmt.body[0] if isinstance(stmt, ast.If) else None
        if not (isinstance(first, ast.Return) and not isinstance(first.value, ast.Call)):
            return
        assert isinstance(stmt, ast.If)
        if _value(stmt.test, known, local, used) is True:
            guard = shorten(ast.unparse(stmt.test))
            what = f"`self.{func.attr}()` does nothing: it returns at `if {guard}`"
            yield _note(module, node, what, used)
        return


def _aliases(
    function: ast.FunctionDef | ast.AsyncFunctionDef, known: Mapping[str, Fixed]
) -> dict[str, Fixed]:
    """Locals bound once, to a fixed attribute (``pcp_manager = self.pcp_manager``)."""
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in (t for t in targets if isinstance(t, ast.Name)):
                bound.setdefault(target.id, []).append(node.value or target)
    return {
        name: known[values[0].attr]
        for name, values in bound.items()
        if len(values) == 1
        and isinstance(values[0], ast.Attribute)
        and _is_self(values[0].value)
        and values[0].attr in known
    }


def _value(
    node: ast.expr, known: Mapping[str, Fixed], local: Mapping[str, Fixed], used: list[Fixed]
) -> object:
    """The value of ``node`` under the fixed attributes (True, False, None), or UNKNOWN;
    ``used`` collects the facts it rests on."""
    fixed = _fixed(node, known, local)
    if fixed is not None:
        used.append(fixed)
        return fixed.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _value(node.operand, known, local, used)
        return UNKNOWN if inner is UNKNOWN else not inner
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, known, local, used)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op, right = node.ops[0], node.comparators[0]
        if isinstance(op, ast.Is | ast.IsNot) and _none(right):
            left = _value(node.left, known, local, used)
            if left is UNKNOWN:
                return UNKNOWN
            return (left is None) == isinstance(op, ast.Is)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        subject = _value(node.args[0], known, local, used) if node.func.id == "isinstance" else 0
        return False if subject is None else UNKNOWN
    return UNKNOWN


def _bool_op(
    node: ast.BoolOp, known: Mapping[str, Fixed], local: Mapping[str, Fixed], used: list[Fixed]
) -> object:
    """``and`` is false when one operand is, ``or`` true when one is (whatever the others)."""
    decisive = isinstance(node.op, ast.Or)
    values = []
    every: list[Fixed] = []
    for operand in node.values:
        mine: list[Fixed] = []
        value = _value(operand, known, local, mine)
        if value is not UNKNOWN and bool(value) is decisive:
            used.extend(mine)
            return decisive
        values.append(value)
        every.extend(mine)
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    used.extend(every)
    return not decisive


def _fixed(node: ast.expr, known: Mapping[str, Fixed], local: Mapping[str, Fixed]) -> Fixed | None:
    if isinstance(node, ast.Attribute) and _is_self(node.value):
        return known.get(node.attr)
    if isinstance(node, ast.Name):
        return local.get(node.id)
    return None


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _note(module: str, node: ast.stmt, what: str, used: list[Fixed]) -> Finding:
    reasons = "; ".join(
        dict.fromkeys(
            f"{f.refused} > 1 is refused, so self.{f.attribute} is {f.value} ({f.why})"
            for f in used
        )
    )
    message = f"{what}: {reasons}"
    return Finding(Code.OP336, module, node.lineno, message, node.col_offset + 1, Severity.NOTE)
