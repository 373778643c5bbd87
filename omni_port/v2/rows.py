"""The lock rows of a V2 composition: each method both sides override, each rewrite.

Every composition is in the lock with the rule that made it (``decided_by``): a row per
method both runner families override (``kind: override``), and a row per rewrite a
generated module records in a tag (``kind: rewrite``). Rows are read from the generated
text, so their lines are where an editor finds them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from omni_port.model import Placement, RegionKind, Rule, Status
from omni_port.pyast.parser import module_or_none
from omni_port.v2 import checks, rewrite
from omni_port.v2.decide import Composed
from omni_port.v2.wrap import body_name

#: Placement kind of a method both sides override (composed, allowed, or a conflict).
COMPOSED = RegionKind.OVERRIDE
#: Placement kind of a rewritten statement of omni's code.
REWRITTEN = RegionKind.REWRITE
#: How each composition rule leaves the method (a conflict is Status.CONFLICT).
_STATUS = {
    Rule.OMNI_SUPER: Status.CARRIED,
    Rule.ALLOWED: Status.CARRIED,
    Rule.NPU_WRAPPER: Status.PLACED,
    Rule.NPU_SPLICE: Status.PLACED,
}


def composed_row(composed: Composed, modules: Mapping[str, str]) -> Placement:
    text = modules.get(composed.module, "")
    start, end = lines_of(text, composed.owner, composed.name)
    if composed.rule is Rule.NPU_WRAPPER:
        end = max(end, lines_of(text, composed.owner, body_name(composed.name))[1])
    status = _STATUS.get(composed.rule, Status.CONFLICT) if composed.rule else Status.CONFLICT
    return Placement(
        f"{composed.module.removesuffix('.py')}.{composed.owner}.{composed.name}",
        composed.module,
        composed.owner,
        composed.name,
        COMPOSED,
        False,
        status,
        0.0 if status is Status.CONFLICT else 1.0,
        start,
        end,
        (),
        composed.reason,
        (composed.rule,) if composed.rule is not None else (),
    )


def rewrite_rows(modules: Mapping[str, str]) -> list[Placement]:
    """One row per rewrite a generated module records (``ascend-patch``, ``device-neutral``,
    a class rebased onto its ``substitute``, an ``npu-guard`` step left out, a
    ``communicator-switch`` entered)."""
    rules = {
        str(Rule.ASCEND_PATCH): Rule.ASCEND_PATCH,
        str(Rule.DEVICE_NEUTRAL): Rule.DEVICE_NEUTRAL,
        str(Rule.SUBSTITUTE): Rule.SUBSTITUTE,
        str(Rule.GUARD): Rule.GUARD,
        str(Rule.COMMUNICATOR_SWITCH): Rule.COMMUNICATOR_SWITCH,
    }
    rows: list[Placement] = []
    for name in sorted(modules):
        text = modules[name]
        stem = name.removesuffix(".py")
        number = 0
        for line, rule, what in checks.tags(text):
            if rule not in rules or what.startswith(rewrite.KEPT):
                continue
            number += 1
            owner, member = _enclosing(text, _described(text, line))
            rows.append(
                Placement(
                    block_id=f"{stem}.rewrite-{number:02d}",
                    module=name,
                    owner=owner,
                    member=member,
                    kind=REWRITTEN,
                    marked=False,
                    status=Status.PLACED,
                    confidence=1.0,
                    start=line,
                    end=line,
                    reason=what,
                    decided_by=(rules[rule],),
                )
            )
    return rows


def _described(text: str, line: int) -> int:
    """The line of the statement a tag is about: its own, or for a tag on comment lines of
    its own (``tidy`` moves a long one above its statement), the first line below them."""
    lines = text.split("\n")
    number = line
    while number <= len(lines) and lines[number - 1].lstrip().startswith("#"):
        number += 1
    return number if number <= len(lines) else line


def _enclosing(text: str, line: int) -> tuple[str, str]:
    """The class and function a line of a module is in ("" where none)."""
    tree = module_or_none(text)
    if tree is None:
        return "", ""
    owner = member = ""
    for node in tree.body:
        if not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        if isinstance(node, ast.ClassDef):
            owner = node.name
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    inner.lineno <= line <= (inner.end_lineno or inner.lineno)
                ):
                    member = inner.name
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            member = node.name
    return owner, member


def lines_of(text: str, owner: str, name: str) -> tuple[int, int]:
    """Output lines of ``owner.name`` in a generated module (0, 0 when it is not there)."""
    tree = module_or_none(text)
    if tree is None:
        return 0, 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    member.name == name
                ):
                    first = min([member.lineno, *(d.lineno for d in member.decorator_list)])
                    return first, member.end_lineno or first
    return 0, 0
