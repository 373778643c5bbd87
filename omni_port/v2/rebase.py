"""Generate omni's module with its classes rebased onto vllm-ascend's substitutes.

``substitute`` finds the classes; this writes omni's module again under its own path below
the V2 package, rewritten for the NPU (``rewrite``), each class's base the substitute (the
header tagged ``substitute``), the methods both override composed by the rules of
``decide`` (an ``npu-splice`` candidate is a conflict: there is no sync engine to splice
into the substitute's body), and the imports a copied NPU wrapper needs from the
substitute's module. Pure: texts in, the module text and its decisions out.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from omni_port.model import Rule
from omni_port.pyast.parser import parse
from omni_port.sources.textio import sha256
from omni_port.sync.pipeline import GENERATED
from omni_port.v2 import carry, compose, overrides, rewrite
from omni_port.v2.decide import Composed, Npu, allow_of, method_of, rule_for
from omni_port.v2.substitute import Bypass, Sources, original_path, output_path


@dataclass(frozen=True, slots=True)
class Rebased:
    """One omni module generated with its classes rebased onto their substitutes."""

    #: Output path in the V2 tree (``model_states/omni_model_state.py``) and omni's module.
    module: str
    source: str
    #: The generated text, header included ("" when nothing could be generated).
    text: str
    bypasses: tuple[Bypass, ...]
    #: Every method both omni's class and the substitute override, as composed (or not).
    composed: tuple[Composed, ...] = ()
    #: The override report of each rebased class (for ``v2-report``).
    reports: tuple[overrides.OverrideReport, ...] = ()


@dataclass(frozen=True, slots=True)
class Header:
    """What the header of a generated module names."""

    tool: str
    command: str
    #: What to change instead of the output (and the forced-mismatch line, if any).
    edit: str
    omni_label: str


def rebase(
    path: str, text: str, bypasses: Sequence[Bypass], sources: Sources, header: Header
) -> Rebased:
    """omni's module ``path`` with every class of ``bypasses`` rebased onto its substitute
    and the methods both override composed. ``bypasses`` must be rebasable (``obstacle``)."""
    rel = output_path(path, sources.package_dir)
    module = rewrite.rewrite_module(cst.parse_module(text), rewrite.Options(sources.patches))
    composed: list[Composed] = []
    reports: list[overrides.OverrideReport] = []
    for bypass in bypasses:
        report = _report(rel, text, bypass, sources, header)
        reports.append(report)
        found = _decide(rel, module, report, bypass, sources)
        composed.extend(found)
        context = _context(bypass, sources)
        edits = {c.name: c for c in found if c.owner == bypass.owner}
        module = _with_class(module, bypass, edits, context)
        module = _with_import(module, bypass)
        wrapped = [c.name for c in found if c.rule is Rule.NPU_WRAPPER]
        module = _with_wrapper_imports(module, bypass, wrapped, sources)
    code = _header(header, path, text, bypasses) + module.code
    order = sorted(composed, key=lambda c: (c.module, c.owner, c.name))
    return Rebased(rel, path, code, tuple(bypasses), tuple(order), tuple(reports))


def npu_of(bypass: Bypass, sources: Sources) -> Npu:
    """The substitute's module as the composition reads it."""
    substitute = bypass.substitute
    text = sources.classes[substitute.module_path]
    where = f"{sources.npu_label}/{substitute.module_path}"
    return Npu(text, substitute.substitute[1], sources.npu_label, where)


def sides(rel: str, text: str, bypass: Bypass, sources: Sources, label: str) -> overrides.Sides:
    """omni's class, the substitute and vLLM's class as the override report reads them."""
    npu = npu_of(bypass, sources)
    base_path = original_path(bypass, sources)
    return overrides.Sides(
        {rel: parse(text, f"{label}/{bypass.path}")},
        parse(npu.text, npu.path),
        parse(sources.classes[base_path], f"{sources.base_label}/{base_path}"),
        sources.base_label,
        npu_class=npu.class_name,
        base_class=bypass.substitute.original[1],
        allowed=tuple(sources.allowed),
    )


def _report(
    rel: str, text: str, bypass: Bypass, sources: Sources, header: Header
) -> overrides.OverrideReport:
    return overrides.override_report(sides(rel, text, bypass, sources, header.omni_label))


def _decide(
    rel: str,
    module: cst.Module,
    report: overrides.OverrideReport,
    bypass: Bypass,
    sources: Sources,
) -> list[Composed]:
    npu = npu_of(bypass, sources)
    found: dict[tuple[str, str], Composed] = {}
    for runner in report.runners:
        if runner.runner != bypass.owner:
            continue
        for row in runner.rows:
            if row.who is not overrides.Who.BOTH or row.omni is None:
                continue
            owner = row.omni.last[0]
            if (owner, row.name) in found:
                continue
            allow = allow_of(sources.allowed, rel, owner, row.name)
            rule, reason = rule_for(row, allow, method_of(module, owner, row.name), npu)
            if rule is Rule.NPU_SPLICE:
                rule, reason = (
                    None,
                    (
                        f"{reason}: omni's override of a rebased class is not spliced into the "
                        f"substitute's body; compose them by hand, or allow-list the method"
                    ),
                )
            found[(owner, row.name)] = Composed(rel, owner, row, rule, reason, allow)
    return list(found.values())


def _context(bypass: Bypass, sources: Sources) -> compose.Context:
    return compose.Context(
        npu_of(bypass, sources),
        sources.patches,
        None,
        sources.allowed,
        bypass.substitute.original[1],
    )


def tag_text(bypass: Bypass) -> str:
    """What the rebased class header says."""
    substitute = bypass.substitute
    what = (
        f"{bypass.owner} is rebased from {bypass.base} onto vllm-ascend's "
        f"{substitute.substitute[1]} ({substitute.installed_by})"
    )
    if substitute.variants:
        names = ", ".join(v[1] for v in substitute.variants)
        what += f"; not onto what the factory builds instead on other paths ({names})"
    return rewrite.tag(Rule.SUBSTITUTE, what)


class _Rebase(cst.CSTTransformer):
    """The class's base named ``old`` becomes ``new``; its header is tagged."""

    def __init__(self, bypass: Bypass) -> None:
        super().__init__()
        self.bypass = bypass

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.BaseStatement:
        if updated_node.name.value != self.bypass.owner:
            return updated_node
        new = cst.parse_expression(self.bypass.substitute.substitute[1])
        bases = [
            arg.with_changes(value=new)
            if cst.Module([]).code_for_node(arg.value) == self.bypass.base
            else arg
            for arg in updated_node.bases
        ]
        rebased = updated_node.with_changes(bases=bases)
        result = rewrite.tagged(rebased, tag_text(self.bypass))
        assert isinstance(result, cst.ClassDef)
        return result


def _with_class(
    module: cst.Module, bypass: Bypass, edits: Mapping[str, Composed], context: compose.Context
) -> cst.Module:
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == bypass.owner:
            stmt = compose.compose_class(stmt, edits, context)
        body.append(stmt)
    rebased = module.with_changes(body=body).visit(_Rebase(bypass))
    assert isinstance(rebased, cst.Module)
    return rebased


def _with_import(module: cst.Module, bypass: Bypass) -> cst.Module:
    """The substitute imported after vLLM's class, whose import goes when nothing else in the
    module uses the name any more."""
    module_name, name = bypass.substitute.substitute
    what = f"vllm-ascend's substitute of {'.'.join(bypass.original)}"
    line = cst.parse_statement(
        f"from {module_name} import {name}  {rewrite.tag(Rule.SUBSTITUTE, what)}\n"
    )
    used = _uses(module, bypass.base)
    body: list[cst.BaseStatement] = []
    placed = False
    for stmt in module.body:
        kept = stmt if used or placed else _without_alias(stmt, bypass.base)
        if not placed and _imports(stmt, bypass.base):
            placed = True
            if kept is not None:
                body.append(kept)
            body.append(
                line if kept is not None else line.with_changes(leading_lines=stmt.leading_lines)
            )
            continue
        body.append(stmt)
    if not placed:
        body.insert(0, line)
    return module.with_changes(body=body)


def _with_wrapper_imports(
    module: cst.Module, bypass: Bypass, wrapped: Sequence[str], sources: Sources
) -> cst.Module:
    """The imports the copied NPU wrappers need from the substitute's module (its imports
    and its own module-level definitions), after the substitute's import. A name the
    substitute's module does not bind either is left for verify to report (OP502)."""
    tree = ast.parse(module.code)
    owner = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == bypass.owner), None
    )
    if owner is None or not wrapped:
        return module
    bound = set(carry.module_bindings(tree, "")) | {n for node in tree.body for n in _defined(node)}
    needed = sorted(
        {
            name
            for node in owner.body
            if isinstance(node, ast.FunctionDef) and node.name in wrapped
            for name in carry.free_names(node)
        }
        - bound
    )
    npu_module = ast.parse(sources.classes[bypass.substitute.module_path])
    theirs = carry.module_bindings(npu_module, bypass.substitute.substitute[0])
    lines = [theirs[name].split("\0")[1] for name in needed if name in theirs]
    if not lines:
        return module
    added = [cst.parse_statement(line + "\n") for line in lines]
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        body.append(stmt)
        if _imports(stmt, bypass.substitute.substitute[1]):
            body.extend(added)
    return module.with_changes(body=body)


def _defined(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _imports(stmt: cst.BaseStatement, local: str) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    node = stmt.body[0]
    if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
        return False
    return any(_local(alias) == local for alias in node.names)


def _local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return cst.Module([]).code_for_node(alias.name)


def _without_alias(stmt: cst.BaseStatement, local: str) -> cst.BaseStatement | None:
    if not _imports(stmt, local):
        return stmt
    assert isinstance(stmt, cst.SimpleStatementLine)
    node = stmt.body[0]
    assert isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar)
    aliases = [a for a in node.names if _local(a) != local]
    if not aliases:
        return None
    aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return stmt.with_changes(body=[node.with_changes(names=aliases)])


def _uses(module: cst.Module, name: str) -> bool:
    """Whether the module reads ``name`` outside import statements."""
    found: list[cst.Name] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

    module.visit(_Visitor())
    return bool(found)


def _header(header: Header, path: str, text: str, bypasses: Sequence[Bypass]) -> str:
    names = ", ".join(sorted({b.owner for b in bypasses}))
    substitutes = ", ".join(sorted({b.substitute.substitute[1] for b in bypasses}))
    return (
        f"# This file is {GENERATED} by {header.tool}. Do not edit it: {header.edit}.\n"
        f"# Inputs: {header.omni_label}/{path} (sha256 {sha256(text.encode('utf-8'))[:16]}); "
        f"{names} rebased onto vllm-ascend's {substitutes}.\n"
        f"# Regenerate: {header.command}\n"
    )
