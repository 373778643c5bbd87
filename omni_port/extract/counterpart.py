"""Where omni's own GPU runner has a block: a second record of where its code belongs.

vLLM-Omni's NPU runners carry the same omni changes that its GPU runners make to vLLM's
runner. Where the GPU runner of the same release holds a block's statements once, the
statements around it there are an anchor of their own, written independently of the NPU
copy: sync compares the two places (``omni_port.sync.rules.counterpart``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from omni_port.extract.blocks import CONTEXT, edge_of
from omni_port.model import Anchor, Block, BlockKind, Stmt, Suite, Tree
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import dedent_code, find_def, node_key, walk

#: Statements at least this similar are the same omni statement (a local renamed).
SAME = 0.8


def method_in(tree: Tree, name: str) -> Stmt | None:
    """The only definition of method ``name`` among the module's classes (None when none
    or several classes define it)."""
    found = [
        method
        for stmt in tree.body.stmts
        if stmt.kind == "ClassDef"
        for method in [find_def(stmt.clauses[0], name)]
        if method is not None
    ]
    return found[0] if len(found) == 1 else None


def counterpart_anchor(block: Block, method: Stmt) -> Anchor | None:
    """The anchor of ``block``'s statements in ``method`` (the GPU runner's), where one run
    of statements is most like them; None for a block without statements of its own (a
    deletion, a header or a signature), or when nothing is alike or two runs tie."""
    if block.kind not in (BlockKind.INSERTION, BlockKind.REPLACEMENT):
        return None
    keys = _keys(block.code)
    if not keys:
        return None
    hits = [
        (likeness, path, suite, index)
        for path, suite in walk(method.clauses[0])
        for index, likeness in _runs(suite, keys)
    ]
    best = max((hit[0] for hit in hits), default=0.0)
    found = [hit for hit in hits if hit[0] == best]
    if len(found) != 1:
        return None
    _, path, suite, index = found[0]
    stmts = suite.stmts
    before = tuple(s.key for s in stmts[:index][::-1][:CONTEXT])
    after = tuple(s.key for s in stmts[index + len(keys) :][:CONTEXT])
    return Anchor(path, before, after, (), edge_of(bool(before), bool(after)))


def _keys(code: str) -> tuple[str, ...]:
    """Keys of the top-level statements of ``code`` as a statement tree keys them."""
    try:
        nodes = ast.parse(dedent_code(code)).body
    except (SyntaxError, ValueError):
        return ()
    return tuple(node_key(node) for node in nodes)


def _runs(suite: Suite, keys: tuple[str, ...]) -> Iterator[tuple[int, float]]:
    """Where ``suite`` holds statements like ``keys``, in order, and how alike (the least
    similarity of the run)."""
    stmts = suite.stmts
    for index in range(len(stmts) - len(keys) + 1):
        run = stmts[index : index + len(keys)]
        likeness = min(similarity(s.key, key) for s, key in zip(run, keys, strict=True))
        if likeness >= SAME:
            yield index, likeness
