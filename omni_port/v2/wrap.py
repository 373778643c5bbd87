"""The ``npu-wrapper`` rule: the NPU override that wraps ``super()``, around omni's override.

vllm-ascend's V2 runner mostly wraps vLLM's methods (``execute_model`` handles KV
preemptions, DP coordination and kvpp around ``super().execute_model(...)``); omni's V2
runners mostly replace vLLM's bodies. Inheritance runs only one of them. The composition
keeps both, each once: the generated class holds a copy of the NPU wrapper, with omni's
signature, that calls omni's override (kept under a new name) where it called ``super()``.

A wrapper is composed only when that is certain: exactly one ``super().name(...)`` call
outside nested functions, the same parameters on both sides, no other ``super()`` call
that the move into omni's class would re-route, and no name-mangled attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

#: What omni's override is renamed to (``execute_model`` -> ``_omni_execute_model``).
BODY_PREFIX = "_omni_"


def body_name(name: str) -> str:
    """The name omni's override keeps in the generated class."""
    return BODY_PREFIX + name.strip("_")


@dataclass(frozen=True, slots=True)
class Wrapping:
    """One wrapper to build: the NPU override and where the parts go."""

    #: The NPU override, as libcst parsed it inside its class.
    npu: cst.FunctionDef
    name: str
    #: Methods the NPU class overrides (a ``super().other()`` call would reach one of them).
    npu_methods: frozenset[str]
    #: Comment lines above the wrapper and above omni's renamed override.
    wrapper_comment: tuple[str, ...] = ()
    body_comment: tuple[str, ...] = ()


def npu_method(text: str, class_name: str, name: str) -> cst.FunctionDef | None:
    """The method ``class_name.name`` of a module's text, as libcst parses it."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == class_name:
            for member in _members(stmt):
                if isinstance(member, cst.FunctionDef) and member.name.value == name:
                    return member
    return None


def npu_methods(text: str, class_name: str) -> frozenset[str]:
    """Names of the methods a class of a module's text defines."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return frozenset()
    return frozenset(
        member.name.value
        for stmt in module.body
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == class_name
        for member in _members(stmt)
        if isinstance(member, cst.FunctionDef)
    )


def _members(cls: cst.ClassDef) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    body = cls.body
    return body.body if isinstance(body, cst.IndentedBlock) else ()


def delegates(function: cst.FunctionDef) -> bool:
    """Whether the method calls ``super().<its name>(...)`` (outside nested functions)."""
    return bool(_super_calls(function, function.name.value))


def unwrappable(wrapping: Wrapping, omni: cst.FunctionDef) -> str:
    """Why the NPU override cannot go around ``omni`` ("" when it can)."""
    npu, name = wrapping.npu, wrapping.name
    calls = _super_calls(npu, name)
    if len(calls) != 1:
        return f"the NPU {name} calls super().{name}() {len(calls)} times, not once"
    if _parameters(npu.params) != _parameters(omni.params):
        return (
            f"the parameters differ: NPU ({', '.join(_parameters(npu.params))}), "
            f"omni ({', '.join(_parameters(omni.params))})"
        )
    rerouted = sorted(_super_names(npu) & (wrapping.npu_methods - {name}))
    if rerouted:
        return (
            f"the NPU {name} also calls super().{rerouted[0]}(), which from omni's class would "
            f"reach the NPU {rerouted[0]} instead of vLLM's"
        )
    if _mangled(npu):
        return f"the NPU {name} uses a name-mangled attribute, which differs in omni's class"
    return ""


def wrapped(wrapping: Wrapping, omni: cst.FunctionDef) -> tuple[cst.FunctionDef, cst.FunctionDef]:
    """The wrapper (NPU decorators and body, omni's signature and the comments above it)
    and omni's override under its new name."""
    renamed = body_name(wrapping.name)
    body = wrapping.npu.body.visit(_SuperToBody(wrapping.name, renamed))
    assert isinstance(body, cst.BaseSuite)
    wrapper = wrapping.npu.with_changes(
        params=omni.params,
        returns=omni.returns,
        whitespace_before_params=omni.whitespace_before_params,
        whitespace_before_colon=omni.whitespace_before_colon,
        body=body,
        leading_lines=[*omni.leading_lines, *_comments(wrapping.wrapper_comment)],
    )
    moved = omni.with_changes(
        name=cst.Name(renamed),
        leading_lines=[cst.EmptyLine(indent=False), *_comments(wrapping.body_comment)],
    )
    return wrapper, moved


def left_out(
    wrapper: cst.FunctionDef, selector: str, tag: str
) -> tuple[cst.FunctionDef, str] | None:
    """``wrapper`` with its first statement whose code starts with ``selector`` (whitespace
    aside) replaced by the comment ``tag`` (on a ``pass`` where no statement follows it in
    its block), and that statement's first line; None when no statement of its own body
    (nested functions aside) matches."""
    leaver = _LeaveOut(" ".join(selector.split()), tag)
    changed = wrapper.visit(leaver)
    if not leaver.found or not isinstance(changed, cst.FunctionDef):
        return None
    return changed, leaver.found


class _LeaveOut(cst.CSTTransformer):
    def __init__(self, selector: str, tag: str) -> None:
        super().__init__()
        self.selector = selector
        self.tag = tag
        self.found = ""
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return _without_placeholder(updated_node, self.tag) if self.found else updated_node

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        result = super().on_leave(original_node, updated_node)
        if self.found or not isinstance(original_node, cst.BaseStatement) or self.depth != 1:
            return result
        if isinstance(original_node, cst.FunctionDef):
            return result
        code = cst.Module([]).code_for_node(original_node)
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
        if not " ".join(code.split()).startswith(self.selector):
            return result
        self.found = code.strip().splitlines()[0]
        comment = cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(self.tag)
        )
        leading = getattr(original_node, "leading_lines", ())
        return cst.SimpleStatementLine(
            body=[cst.Pass()], leading_lines=leading, trailing_whitespace=comment
        )


def _placeholder(node: cst.BaseStatement, tag: str) -> bool:
    return (
        isinstance(node, cst.SimpleStatementLine)
        and len(node.body) == 1
        and isinstance(node.body[0], cst.Pass)
        and node.trailing_whitespace.comment is not None
        and node.trailing_whitespace.comment.value == tag
    )


def _without_placeholder(block: cst.IndentedBlock, tag: str) -> cst.IndentedBlock:
    """``block`` with a left-out step's ``pass`` dropped when a statement follows it: its
    comment, and the lines above it, go above that statement (no bare ``pass`` left)."""
    body = list(block.body)
    for index, node in enumerate(body[:-1]):
        if _placeholder(node, tag):
            comment = cst.EmptyLine(indent=True, comment=cst.Comment(tag))
            following = body[index + 1]
            assert isinstance(node, cst.SimpleStatementLine)
            below: Sequence[cst.EmptyLine] = getattr(following, "leading_lines", ())
            lines = [*node.leading_lines, comment, *below]
            body[index : index + 2] = [following.with_changes(leading_lines=lines)]
            return block.with_changes(body=body)
    return block


def _comments(lines: Sequence[str]) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(indent=True, comment=cst.Comment(line)) for line in lines]


def _parameters(params: cst.Parameters) -> tuple[str, ...]:
    """Parameter names with their kind: ``/x`` positional-only, ``*x``, ``x=`` keyword-only."""
    found = [f"/{p.name.value}" for p in params.posonly_params]
    found += [p.name.value for p in params.params]
    if isinstance(params.star_arg, cst.Param):
        found.append(f"*{params.star_arg.name.value}")
    found += [f"{p.name.value}=" for p in params.kwonly_params]
    if params.star_kwarg is not None:
        found.append(f"**{params.star_kwarg.name.value}")
    return tuple(found)


def _is_super(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "super"
    )


class _Calls(cst.CSTVisitor):
    """``super().X(...)`` calls of a function's own body (nested functions run elsewhere)."""

    def __init__(self) -> None:
        self.found: list[tuple[str, cst.Call]] = []
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and _is_super(func.value):
            self.found.append((func.attr.value, node))


def _calls(function: cst.FunctionDef) -> list[tuple[str, cst.Call]]:
    visitor = _Calls()
    function.visit(visitor)
    return visitor.found


def _super_calls(function: cst.FunctionDef, name: str) -> list[cst.Call]:
    return [call for called, call in _calls(function) if called == name]


def _super_names(function: cst.FunctionDef) -> set[str]:
    return {called for called, _ in _calls(function)}


def _mangled(function: cst.FunctionDef) -> bool:
    return any(
        isinstance(node, cst.Attribute)
        and node.attr.value.startswith("__")
        and not node.attr.value.endswith("__")
        for node in _walk(function)
    )


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found = [node]
    for child in node.children:
        found.extend(_walk(child))
    return found


class _SuperToBody(cst.CSTTransformer):
    """``super().name(...)`` -> ``self.<renamed>(...)``, outside nested functions."""

    def __init__(self, name: str, renamed: str) -> None:
        super().__init__()
        self.name = name
        self.renamed = renamed

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == self.name
            and _is_super(func.value)
        ):
            target = cst.Attribute(value=cst.Name("self"), attr=cst.Name(self.renamed))
            return updated_node.with_changes(func=target)
        return updated_node
