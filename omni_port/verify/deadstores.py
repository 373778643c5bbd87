"""Check 10: a copied method binds no local that nothing reads (OP515).

A dead store in a generated method is what a reviewer's pyflakes shows first (F841, and
reassignments before any read): followed upstream code whose readers an omni block
replaced, a block whose value no statement of the new upstream reads any more. The same
dead store in upstream's own method (the copy inherits it) or in the old runner's method
(omni's code had it before this sync) is a note; any other is an error: this sync's output
made it. Functions nested in the method (at any depth) are checked too, each on its own
locals, as pyflakes does. A dead store is compared by the name it binds and the function
holding it (the method, or the nested function of the same path). Conflict regions are comments, as
everywhere in verify: a store whose only reader is commented out in one is dead until the
conflict is resolved (an error, as OP310 is), and its message names the conflict. See
``stores`` for what counts as a read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from omni_port.model import RESOLVE_FIRST, Code, Finding, Severity
from omni_port.pyast.packages import Function, World
from omni_port.verify.conflicts import Region, commented_code
from omni_port.verify.context import Context, Override, function_in, old_runner
from omni_port.verify.stores import dead_stores, scopes


def dead_store_findings(
    world: World,
    path: str,
    text: str,
    tree: ast.Module,
    overrides: Sequence[Override],
    context: Context,
) -> list[Finding]:
    """OP515 findings for the copied methods of the generated module ``tree`` (file ``path``,
    its ``text`` for the conflict regions)."""
    commented = list(commented_code(text))
    upstream = world.tree(context.upstream.module) if context.upstream is not None else None
    old = old_runner(path, context)
    findings: list[Finding] = []
    for override in overrides:
        generated = function_in(tree, override.owner, override.name)
        if generated is None:
            continue  # not in the module: sync left it commented out and said so
        theirs = (
            function_in(upstream, override.upstream_owner, override.upstream_name)
            if upstream is not None
            else None
        )
        before = function_in(old, override.owner, override.name) if old is not None else None
        found = _findings(path, override, generated, theirs, before)
        findings.extend(_with_conflicts(found, generated, commented))
    return findings


def _findings(
    path: str,
    override: Override,
    generated: Function,
    upstream: Function | None,
    old: Function | None,
) -> Iterator[Finding]:
    inherited = _dead_names(upstream)
    kept = _dead_names(old)
    method = f"{override.owner}.{override.name}".lstrip(".")
    for scope, function in scopes(generated):
        where = f"{method}.{scope}" if scope else method
        read_later = _read_names(function)
        for store in dead_stores(function):
            message = f"`{store.name}` is bound here and nothing in {where} reads it" + (
                " before it is bound again" if store.name in read_later else ""
            )
            if (scope, store.name) in inherited:
                message += " (upstream's own method has the same dead store)"
            elif (scope, store.name) in kept:
                message += " (the old runner's method has the same dead store)"
            else:
                yield Finding(Code.OP515, path, store.line, message, store.col)
                continue
            yield Finding(Code.OP515, path, store.line, message, store.col, Severity.NOTE)


def _with_conflicts(
    findings: Iterable[Finding],
    function: Function,
    commented: Sequence[tuple[Region, int, str]],
) -> Iterator[Finding]:
    """``findings``, each naming the first conflict region of ``function`` whose
    commented-out code reads the name it is about."""
    inside = [c for c in commented if function.lineno <= c[1] <= (function.end_lineno or 0)]
    for finding in findings:
        name = finding.message.split("`", 2)[1]
        word = re.compile(rf"\b{re.escape(name)}\b")
        region = next((r for r, _, code in inside if word.search(code)), None)
        if region is None:
            yield finding
            continue
        message = (
            f"{finding.message}; the conflict {region.piece} (line {region.line}) holds "
            f"commented-out code that reads it: {RESOLVE_FIRST}"
        )
        yield replace(finding, message=message)


def _dead_names(function: Function | None) -> frozenset[tuple[str, str]]:
    """(scope, name) of every dead store of ``function`` and the functions nested in it."""
    if function is None:
        return frozenset()
    return frozenset((scope, s.name) for scope, f in scopes(function) for s in dead_stores(f))


def _read_names(function: Function) -> frozenset[str]:
    return frozenset(
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    )
