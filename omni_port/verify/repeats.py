"""Check 7: a generated method runs no call statement more often than both sources do.

Placement scores cannot see a statement that both sides carry in their own place: omni's
old copy of a call, kept where the runner had it, and upstream's new one a few lines off
(``handle_preemptions`` run twice per step, a connector finalized twice). The count is a
net under the engine: a call statement the generated method holds more times than the new
upstream method and more times than the old runner's method is an error (OP512).

Only expression statements that call something are counted, compared as ``ast`` reads
them (formatting and comments aside), anywhere in the method but in nested functions.
The old runner is the omni source module under the generated module's dotted name in the
package sources; without it (or without the upstream method) nothing is reported.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator, Sequence

from omni_port.model import Code, Finding
from omni_port.pyast.packages import Function, World, call_counts, call_statements
from omni_port.report import shorten
from omni_port.verify.context import Context, Override, function_in, old_runner


def repeat_findings(
    world: World, path: str, tree: ast.Module, overrides: Sequence[Override], context: Context
) -> list[Finding]:
    """OP512 findings for the copied methods of one generated module."""
    old = old_runner(path, context)
    upstream = world.tree(context.upstream.module) if context.upstream is not None else None
    if old is None or upstream is None:
        return []
    return repeats(path, tree, old, upstream, overrides)


def repeats(
    path: str,
    tree: ast.Module,
    old: ast.Module,
    upstream: ast.Module,
    overrides: Sequence[Override],
) -> list[Finding]:
    """OP512 findings for the copied methods of the generated module ``tree`` (file
    ``path``), against the old runner module and the new upstream module."""
    findings: list[Finding] = []
    for override in overrides:
        generated = function_in(tree, override.owner, override.name)
        before = function_in(old, override.owner, override.name)
        theirs = function_in(upstream, override.upstream_owner, override.upstream_name)
        if generated is None or before is None or theirs is None:
            continue
        findings.extend(_repeats(path, override, generated, _counts(before), _counts(theirs)))
    return findings


def _repeats(
    path: str, override: Override, generated: Function, old: Counter[str], new: Counter[str]
) -> Iterator[Finding]:
    seen: dict[str, list[ast.Expr]] = {}
    for stmt in sorted(call_statements(generated.body), key=lambda s: (s.lineno, s.col_offset)):
        seen.setdefault(ast.dump(stmt), []).append(stmt)
    where = f"{override.owner}.{override.name}" if override.owner else override.name
    for key, stmts in seen.items():
        if len(stmts) < 2 or len(stmts) <= max(old[key], new[key]):
            continue
        code = shorten(ast.unparse(stmts[0]))
        lines = ", ".join(str(s.lineno) for s in stmts)
        message = (
            f"`{code}` runs {len(stmts)} times in {where} (lines {lines}), more often than in "
            f"the new upstream method ({new[key]}) and in the old runner ({old[key]})"
        )
        yield Finding(Code.OP512, path, stmts[-1].lineno, message, stmts[-1].col_offset + 1)


def _counts(function: Function) -> Counter[str]:
    return call_counts(function.body)
