"""The code at and around a place in the new method, as several rules read it.

Upstream's statements as source text, a compound header made parseable, the new
upstream code between a place and a block's old neighbours, the names bound before a
place, code parsed into statements (two pieces of code are the same change when their
statements are the same syntax trees, so comments, quotes and wrapping do not matter:
diff3's first rule; ``Syntax.same_code``), an upstream statement that nearly repeats
a block's, and upstream's methods that only return an expression.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from omni_port.model import Anchor, Edge, Stmt, Tree
from omni_port.pyast import memo
from omni_port.pyast.diff import similarity
from omni_port.pyast.syntax import dedent_code, full_key, header_end, split_full_key, walk
from omni_port.report import shorten
from omni_port.sync.evidence.places import FUZZY, Slot


def source(tree: Tree, stmts: Sequence[Stmt], header: bool = False) -> str:
    """The dedented upstream code of ``stmts`` (a compound header alone with ``header``)."""
    if not stmts:
        return ""
    end = header_end(stmts[-1]) if header else stmts[-1].end
    text = dedent_code(tree.text(stmts[0].start, end))
    return with_body(text) if header else text


_BODY = "pass  # omni-port: body\n"


def with_body(header: str) -> str:
    """A compound statement's header made parseable with a stand-in body."""
    first = next((line for line in header.split("\n") if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    return header.rstrip("\n") + "\n" + indent + "    " + _BODY


def without_body(code: str) -> str:
    """``code`` without the stand-in body ``with_body`` gave it."""
    lines = code.split("\n")
    kept = [line for line in lines if line.strip() != _BODY.strip()]
    return "\n".join(kept)


def short(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with "..." (``shorten`` also puts it on one
    line)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["shorten"]  # re-exported for the rules, which read no report


def def_source(key: str) -> str | None:
    """A def header's source from its key (decorators and ``def`` joined by spaces)."""
    depth, quote, cuts = 0, "", []
    for i, char in enumerate(key):
        if quote:
            quote = "" if char == quote and key[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == " " and depth == 0 and re.match(r" (@|def |async def )", key[i:]):
            cuts.append(i)
    parts = [key[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(key)], strict=True)]
    text = "\n".join(parts)
    try:
        ast.parse(text + "\n    ...")
    except SyntaxError:
        return None
    return text


def parameters(header: str) -> set[str]:
    """Parameter names of a def header (its key joins decorator lines with spaces)."""
    at = re.search(r"(?:^|\s)((?:async\s+)?def\s)", header)
    header = header[at.start(1) :] if at else header
    try:
        node = ast.parse(header + " ...").body[0]
    except SyntaxError:
        return set()
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    args = node.args
    every = [
        *args.posonlyargs,
        *args.args,
        *args.kwonlyargs,
        *(a for a in (args.vararg, args.kwarg) if a),
    ]
    return {a.arg for a in every}


def read_after(
    method: Stmt, slot: Slot, taken: Sequence[tuple[int, int]] = (), simple: bool = False
) -> frozenset[str]:
    """Names that statements of ``method`` after ``slot``'s statements read, other than
    those starting in the line ranges ``taken`` (``simple``: simple statements only)."""
    return frozenset(
        name
        for stmt in statements_after(method, slot)
        if not (simple and stmt.clauses)
        and not any(start <= stmt.start <= stop for start, stop in taken)
        for name in stmt.reads
    )


def statements_after(method: Stmt, slot: Slot) -> Iterator[Stmt]:
    """The statements of ``method``, in any body, that start after ``slot``'s statements."""
    stmts = slot.held()
    end = stmts[-1].full_end if stmts else slot.line() - 1
    for _, suite in walk(method.clauses[0]):
        yield from (stmt for stmt in suite.stmts if stmt.start > end)


def binds_locals(stmt: Stmt) -> bool:
    """Whether ``stmt`` is an assignment that binds plain local names only."""
    return (
        stmt.kind in ("Assign", "AnnAssign")
        and bool(stmt.writes)
        and not any("." in name for name in stmt.writes)
    )


def bound_before(method: Stmt, slot: Slot, params: frozenset[str]) -> frozenset[str]:
    """Names bound in ``method`` by its parameters (``params``) and by statements before
    ``slot``'s line."""
    names: set[str] = set(params)
    line = slot.line()
    for _, suite in walk(method.clauses[0]):
        for stmt in suite.stmts:
            if stmt.full_end < line and not stmt.clauses:
                names.update(stmt.writes)
    return frozenset(names)


def new_code_around(anchor: Anchor, slot: Slot) -> tuple[list[Stmt], list[Stmt]]:
    """Upstream statements between the slot and the block's old neighbours: new code.

    Before the slot: back to the nearest old neighbour found (to the body's start when the
    block was first in its body). After it: up to the nearest old neighbour (to the end
    when it was last). Nothing when the old neighbour is not in this body at all.
    """
    stmts = slot.suite.stmts
    # Neighbours that another block replaced are recorded with their bodies' fingerprint.
    old_before = {split_full_key(key)[0] for key in anchor.before}
    old_after = {split_full_key(key)[0] for key in anchor.after}
    earlier = stmts[: slot.index]
    later = stmts[slot.index + slot.span :]
    before: list[Stmt] = []
    cut = next((i for i in range(len(earlier) - 1, -1, -1) if earlier[i].key in old_before), None)
    if cut is not None:
        before = list(earlier[cut + 1 :])
    elif anchor.edge in (Edge.FIRST, Edge.ONLY):
        before = list(earlier)
    after: list[Stmt] = []
    cut = next((i for i, s in enumerate(later) if s.key in old_after), None)
    if cut is not None:
        after = list(later[:cut])
    elif anchor.edge in (Edge.LAST, Edge.ONLY):
        after = list(later)
    return before, after


def nested(stmts: Sequence[Stmt]) -> list[Stmt]:
    """``stmts`` and every statement nested in them."""
    found: list[Stmt] = []
    for stmt in stmts:
        found.append(stmt)
        for clause in stmt.clauses:
            found.extend(nested(clause.stmts))
    return found


def fewer_repeats(anchor: Anchor, slot: Slot) -> str:
    """Why a place beside a statement the block's old body repeated is no evidence ("" when
    it is): upstream's body has fewer copies of it now, so which copy went, the one before
    the block or one after it, cannot be told from the text."""
    stmts = slot.suite.stmts
    beside = [*stmts[max(slot.index - 1, 0) : slot.index], *stmts[slot.index + slot.span :][:1]]
    seen = Counter(split_full_key(key)[0] for key in (*anchor.before, *anchor.after))
    for key, count in seen.items():
        if count < 2 or not any(similarity(s.key, key) >= FUZZY for s in beside):
            continue
        now = sum(similarity(s.key, key) >= FUZZY for s in stmts)
        if now < count:
            return (
                f"`{short(key, 60)}` stood {count} times around it and its body has {now} now: "
                "which of them upstream removed cannot be told"
            )
    return ""


# --- the same statements ---------------------------------------------------------------------

#: Least similarity of a new upstream statement to one of the block's for an echo.
ECHO = 0.9


@memo.memoized
def kind_of(key: str) -> str:
    """The kind of the statement keyed ``key`` (a compound one by its header), as ``Stmt``
    names it ("" when the key does not parse)."""
    head = split_full_key(key)[0]
    nodes = parsed(head) or parsed(with_body(head))
    return type(nodes[0]).__name__ if nodes else ""


def alike(recorded: str, key: str) -> bool:
    """Whether the statement keyed ``key`` is the one recorded as ``recorded`` (full keys),
    edited no further than the anchor still calls it the same statement: of one kind, its
    key (a compound one's header) alike at least ``FUZZY``."""
    if recorded == key:
        return True
    head, theirs = split_full_key(recorded)[0], split_full_key(key)[0]
    return similarity(head, theirs) >= FUZZY and kind_of(recorded) == kind_of(key)


def unreplaced(replaced: Sequence[str], held: Sequence[Stmt]) -> list[Stmt]:
    """The statements of ``held`` that are none of ``replaced`` (full keys): what a block
    that replaced ``replaced`` in its base would delete of upstream's code, put in the
    place of ``held``. Each statement pairs, in order, with the next of ``replaced`` it is
    ``alike`` (a block that replaced one call does not stand for two); a compound statement
    whose every simple statement, in every branch, is alike one of ``replaced`` holds
    them: upstream wrapped what the block replaced."""
    left: list[Stmt] = []
    start = 0
    for stmt in held:
        key = full_key(stmt)
        found = next((j for j in range(start, len(replaced)) if alike(replaced[j], key)), None)
        if found is not None:
            start = found + 1
        elif not _wraps(replaced, stmt):
            left.append(stmt)
    return left


def _wraps(replaced: Sequence[str], stmt: Stmt) -> bool:
    """Whether ``stmt`` is a compound statement that holds only statements alike ones of
    ``replaced`` (simple statements, in any of its bodies)."""
    leaves = [s for c in stmt.clauses for _, suite in walk(c) for s in suite.stmts if not s.clauses]
    return bool(leaves) and all(any(alike(r, s.key) for r in replaced) for s in leaves)


def parsed(code: str) -> list[ast.stmt] | None:
    """The statements of ``code`` as ``ast`` reads them (None when it does not parse)."""
    try:
        return ast.parse(dedent_code(code)).body
    except SyntaxError:
        return None


def renamed(old: Sequence[ast.stmt], new: Sequence[ast.stmt]) -> dict[str, str] | None:
    """The variables ``new`` renames in ``old`` when it is ``old`` with nothing else changed
    (each old name always to the same new one, none of them a called function); None when
    anything else differs, or nothing does."""
    if len(old) != len(new):
        return None
    called = {id(n.func) for tree in new for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names: list[tuple[ast.Name, ast.Name]] = []
    for before, after in zip(old, new, strict=True):
        nodes = list(ast.walk(before)), list(ast.walk(after))
        if len(nodes[0]) != len(nodes[1]):
            return None
        for a, b in zip(*nodes, strict=True):
            if type(a) is not type(b):
                return None
            if isinstance(a, ast.Name) and isinstance(b, ast.Name):
                names.append((a, b))
    mapping = {a.id: b.id for a, b in names if a.id != b.id}
    consistent = all(mapping.get(a.id, a.id) == b.id for a, b in names)
    if not mapping or not consistent or len(set(mapping.values())) != len(mapping):
        return None
    if any(id(b) in called for a, b in names if a.id != b.id):
        return None
    undo = {new_name: old_name for old_name, new_name in mapping.items()}
    back = [_Renamer(undo).visit(ast.parse(ast.unparse(n)).body[0]) for n in new]
    same = [ast.dump(n) for n in old] == [ast.dump(n) for n in back]
    return mapping if same else None


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.names.get(node.id, node.id)
        return node


def echo(
    mine: Sequence[ast.stmt], new: Sequence[Stmt], source: Callable[[Stmt], str]
) -> Stmt | None:
    """A new upstream statement that nearly repeats one of the block's (``mine``, parsed):
    both sides added the same code in their own words, and placing the block next to it
    could run it twice.

    Simple statements compare by their whole text; compound ones by their header
    (``if has_kv_transfer_group():``) or, when the header was reworded, by the whole
    statement (``source`` gives an upstream statement's code).
    """
    for stmt in new:
        for node in mine:
            key = _first_line(node)
            if key == stmt.key or (not stmt.clauses and similarity(key, stmt.key) >= ECHO):
                return stmt
            theirs = _whole(source(stmt)) if stmt.clauses and key != ast.unparse(node) else None
            if theirs is not None and similarity(ast.unparse(node), theirs) >= ECHO:
                return stmt
    return None


def _whole(code: str) -> str | None:
    """A statement's code in one normal form (None when it does not parse)."""
    try:
        return ast.unparse(ast.parse(dedent_code(code)))
    except SyntaxError:
        return None


def _first_line(node: ast.stmt) -> str:
    """The key ``syntax`` gives a statement: a compound statement's header, else the whole."""
    if isinstance(node, ast.If | ast.For | ast.While | ast.With | ast.Try | ast.AsyncWith):
        shallow = ast.parse(ast.unparse(node)).body[0]
        for name in ("body", "orelse", "handlers", "finalbody"):
            if hasattr(shallow, name):
                setattr(shallow, name, [])
        return " ".join(ast.unparse(shallow).split("\n"))
    return ast.unparse(node)


def echo_reason(echoed: Stmt) -> str:
    """Why a block next to upstream code that nearly repeats its own is not simply placed."""
    return f"upstream added similar code next to its place: `{short(echoed.key)}`"


# --- the same change in other words ----------------------------------------------------------


def bridges(tree: Tree, member: Stmt) -> dict[str, str]:
    """The methods of ``member``'s class in ``tree`` that only return an expression (no
    parameter but ``self``, no decorator), by name, with that expression's code: a call
    ``self.name()`` says the same as the expression (the member's facts keep them)."""
    cls = next(
        (s for s in tree.body.stmts if s.clauses and any(m is member for m in s.clauses[0].stmts)),
        None,
    )
    if cls is None:
        return {}
    result = {}
    for stmt in cls.clauses[0].stmts:
        returned = _only_returns(tree, stmt) if stmt.kind == "FunctionDef" else None
        if returned is not None:
            result[stmt.name] = returned
    return result


def _only_returns(tree: Tree, stmt: Stmt) -> str | None:
    return _returned(tree.text(stmt.start, stmt.end))


@memo.memoized
def _returned(code: str) -> str | None:
    """The expression a method's ``code`` only returns (``bridges``); kept for the run:
    every member's facts ask it of each method of the member's class (1,100 questions of
    110 methods in a GPU upgrade)."""
    try:
        node = ast.parse(dedent_code(code)).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return None
    params = node.args
    plain = [a.arg for a in (*params.posonlyargs, *params.args)]
    if plain != ["self"] or params.vararg or params.kwarg or params.kwonlyargs:
        return None
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    return ast.unparse(body[0].value)


def through_bridges(code: str, known: dict[str, str]) -> tuple[str, list[str]] | None:
    """``code`` with every call ``self.name()`` of a bridge (``bridges``) replaced by the
    expression it returns, and the names of the bridges it called; None when it calls
    none (or does not parse)."""
    try:
        tree = ast.parse(dedent_code(code))
    except SyntaxError:
        return None
    called: list[str] = []

    class _Inline(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            node = self.generic_visit(node)  # type: ignore[assignment]
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and func.attr in known
                and not node.args
                and not node.keywords
            ):
                called.append(func.attr)
                return ast.parse(known[func.attr], mode="eval").body
            return node

    inlined = _Inline().visit(tree)
    return (ast.unparse(inlined), sorted(set(called))) if called else None
