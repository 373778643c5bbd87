"""Calls from omni's V2 code into the NPU and vLLM runners that the composed runner cannot take.

vLLM-Omni's V2 runners are written against the vLLM release they target; the composed
runner runs on the vLLM release vllm-ascend pairs with, through the NPU runner's
overrides. A ``self.name(...)`` call of omni's code that no omni class answers goes to the
NPU runner or to vLLM's runner there. It breaks at run time (OP322) when

- neither defines ``name``, yet vLLM's runner of a release omni's delta was taken from
  does (the method arrived in vLLM after the release vllm-ascend runs on), or
- the definition it reaches takes fewer positional arguments, or lacks a keyword.

Calls of names no vLLM release defines (callable attributes, mixin methods) are not judged.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from omni_port.gpu.counterparts import ClassIndex
from omni_port.model import Code, Finding, Tree

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True)
class Target:
    """A method a call may reach outside omni: its class, where it is, and its parameters."""

    owner: str
    path: str
    line: int
    args: ast.arguments


def methods_of(tree: Tree, class_name: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods of a module's class by name (the first definition of each), via ``ast``."""
    module = _parse(tree)
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
            for member in node.body:
                if isinstance(member, _FUNCTIONS):
                    found.setdefault(member.name, member)
            return found
    return {}


def _parse(tree: Tree) -> ast.Module:
    return ast.parse("".join(line + "\n" for line in tree.lines), filename=tree.path)


def call_findings(
    omni: Mapping[str, Tree],
    index: ClassIndex,
    targets: Mapping[str, Target],
    newer: Mapping[str, str],
    base_label: str,
) -> Iterator[Finding]:
    """OP322 for the calls of omni's classes that the NPU or vLLM runner cannot take.

    ``targets`` are the methods the NPU runner and vLLM's runner define, NPU first;
    ``newer`` names, for each method only other vLLM releases define, one of them. A name
    any omni class defines is omni's business (a subclass may answer a base's call).
    """
    answered = {
        member.name
        for known in index.values()
        for member in known.stmt.clauses[0].stmts
        if member.kind in ("FunctionDef", "AsyncFunctionDef")
    }
    for _, tree in sorted(omni.items()):
        for node in _parse(tree).body:
            if not isinstance(node, ast.ClassDef) or node.name not in index:
                continue
            for call, caller in _self_calls(node):
                name = call.func.attr  # type: ignore[attr-defined]
                problem = (
                    None if name in answered else _problem(call, name, targets, newer, base_label)
                )
                if problem is not None:
                    message = f"{node.name}.{caller} calls self.{name}(): {problem}"
                    yield Finding(Code.OP322, tree.path, call.lineno, message, call.col_offset + 1)


def _self_calls(cls: ast.ClassDef) -> Iterator[tuple[ast.Call, str]]:
    for member in cls.body:
        if not isinstance(member, _FUNCTIONS):
            continue
        for node in ast.walk(member):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
            ):
                yield node, member.name


def _problem(
    call: ast.Call,
    name: str,
    targets: Mapping[str, Target],
    newer: Mapping[str, str],
    base_label: str,
) -> str | None:
    target = targets.get(name)
    if target is None:
        if name not in newer:
            return None
        return (
            f"neither the NPU runner nor vLLM's runner of {base_label} defines {name} "
            f"({newer[name]} does)"
        )
    mismatch = _mismatch(call, target.args)
    if mismatch is None:
        return None
    return f"{target.owner}.{name} ({target.path}:{target.line}) {mismatch}"


def _mismatch(call: ast.Call, args: ast.arguments) -> str | None:
    """Why ``call`` does not fit a method's parameters (``self`` excluded); None if it does."""
    positional = [a.arg for a in [*args.posonlyargs, *args.args]][1:]
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    if not starred and args.vararg is None and len(call.args) > len(positional):
        return f"takes {len(positional)} positional arguments, the call passes {len(call.args)}"
    names = {a.arg for a in [*args.args, *args.kwonlyargs]}
    if args.kwarg is None:
        for keyword in call.keywords:
            if keyword.arg is not None and keyword.arg not in names:
                return f"takes no keyword {keyword.arg!r}"
    return None
