"""Three-way merge of statements on their syntax trees: both sides' edits, or a clash.

omni changed some statements of an upstream release (``base``); upstream changed the same
statements on its way to ``upstream``. Both edits merge when they touch different
elements: arguments, keywords, parameters, fields, targets, list items, statements of a
body. Only edits of the same element clash, and so does the known trap of structured
merge, one side deleting or replacing a node the other edited inside. Where both sides
added to one place of a sequence, what upstream added that omni's additions hold already
(in upstream's order) is one change, written once; where both appended other items to
the end, upstream's come first, so every position upstream's code relies on stays (in a
set or an import, their order means nothing), unless they fill the fields of a record
whose order the output defines (``pyast.fields``): then that order is theirs. No item is
ever written more often than one side has it.

The result is omni's own text with upstream's edits spliced in at their places, so
comments and formatting of omni's code survive. Before it is returned it is parsed again
and compared with the merged tree; any difference is a clash, never a wrong text.
"""

from __future__ import annotations

import ast
import copy
import difflib
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from omni_port.pyast import fields as records
from omni_port.pyast import memo
from omni_port.pyast.diff import similarity
from omni_port.pyast.fields import Fields
from omni_port.pyast.syntax import dedent_code, reindent

#: Least similarity for two statements of a body to pair as one statement edited.
STATEMENT_PAIR = 0.75


@dataclass(frozen=True, slots=True)
class Merged:
    """omni's text with upstream's edits applied."""

    text: str
    #: Upstream edits taken into omni's text, one short phrase each, in text order.
    taken: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Clash:
    """Both sides changed the same element, or the merge could not be written safely."""

    reason: str


class _Conflict(Exception):
    """Raised inside the merge; becomes a Clash."""


@memo.memoized
def merge(base: str, omni: str, upstream: str, fields: Fields = ()) -> Merged | Clash:
    """Merge upstream's edits (``base`` to ``upstream``) into ``omni`` (``base`` edited).

    Each code argument is Python code of one or more whole statements, at any
    indentation; ``fields`` are the records the output defines, whose field order decides
    the order of arguments both sides appended to their constructions. Never raises.
    Kept per arguments: the history and move rules ask the same merge again for each
    release that holds the same code (about half the merges of a sync).
    """
    try:
        sources = [_Source(dedent_code(code)) for code in (base, omni, upstream)]
    except SyntaxError as error:
        return Clash(f"a side does not parse: {error.msg}")
    b, o, t = sources
    context = _Context(o, t, dict(fields))
    try:
        merged = context.stmts(b.tree.body, o.tree.body, t.tree.body, "the statements")
        text = context.apply()
    except _Conflict as error:
        return Clash(str(error))
    try:
        again = ast.parse(text)
    except SyntaxError:
        return Clash("the merged text would not parse")
    if _dump(again.body) != _dump(merged):
        return Clash("the merged text would not say what the merged tree says")
    return Merged(_indented_like(omni, text), tuple(context.taken))


def _indented_like(original: str, text: str) -> str:
    """``text`` (dedented) at the indentation of ``original``'s first code line."""
    first = next((line for line in original.split("\n") if line.strip()), "")
    prefix = first[: len(first) - len(first.lstrip())]
    if not prefix:
        return text
    return reindent(text, "", prefix)


# --- comparing trees ------------------------------------------------------------------------


def _dump(value: object) -> str:
    """A canonical text of a tree (positions and comments left out; parameters by name)."""
    if isinstance(value, list):
        return "[" + ", ".join(_dump(v) for v in value) + "]"
    if isinstance(value, ast.arguments):
        return "arguments(" + ", ".join(_dump_param(p) for p in _params(value)) + ")"
    if isinstance(value, ast.AST):
        fields = ", ".join(
            f"{name}={_dump(_unquoted(item) if name in _ANNOTATIONS else item)}"
            for name, item in ast.iter_fields(value)
            if name != "type_comment"
        )
        return f"{type(value).__name__}({fields})"
    return repr(value)


#: Fields that hold annotations: a forward reference in quotes means the same unquoted.
_ANNOTATIONS = frozenset({"annotation", "returns"})


def _unquoted(node: object) -> object:
    """An annotation in the one form typing gives every spelling of it: unquoted, and
    ``Optional[X]`` / ``Union[X, Y]`` as ``X | None`` / ``X | Y`` (flat, in order)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return node
    if not isinstance(node, ast.expr):
        return node
    members = _union_members(node)
    if len(members) < 2:
        return node
    result: ast.expr = members[0]
    for member in members[1:]:
        result = ast.BinOp(result, ast.BitOr(), member)
    return result


def _union_members(node: ast.expr) -> list[ast.expr]:
    """The members of a union annotation, flattened (the node itself when it is none)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    if isinstance(node, ast.Subscript):
        name = node.value.attr if isinstance(node.value, ast.Attribute) else None
        name = node.value.id if isinstance(node.value, ast.Name) else name
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if name == "Optional" and len(items) == 1:
            return [*_union_members(items[0]), ast.Constant(None)]
        if name == "Union":
            return [member for item in items for member in _union_members(item)]
    return [node]


def _same(a: object, b: object) -> bool:
    return _dump(a) == _dump(b)


# --- source text ----------------------------------------------------------------------------


class _Source:
    """Code with its tree, and character offsets of its nodes (ast counts UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = ast.parse(text)
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, line: int, col: int) -> int:
        raw = self.lines[line - 1].encode("utf-8")[:col]
        return self.starts[line - 1] + len(raw.decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end_line = node.end_lineno  # type: ignore[attr-defined]
        end_col = node.end_col_offset  # type: ignore[attr-defined]
        return start, self.offset(end_line, end_col)

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def indent_of_line(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip())]

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets of whole lines ``first..last``, their newline included."""
        end = self.starts[last] if last < len(self.lines) else len(self.text)
        return self.starts[first - 1], end


def _with_items(b: list[object], o: list[object], t: list[object]) -> bool:
    """Whether three lists are ``with`` items, each calling something its list calls once."""
    lists = (b, o, t)
    if not all(isinstance(x, ast.withitem) for items in lists for x in items):
        return False
    return all(len({_callee(x) for x in items}) == len(items) for items in lists)  # type: ignore[arg-type]


def _callee(item: ast.withitem) -> str:
    """What a ``with`` item calls (its whole expression when it calls nothing)."""
    expr = item.context_expr
    return ast.dump(expr.func if isinstance(expr, ast.Call) else expr)


def _positioned(node: object) -> bool:
    return isinstance(node, ast.AST) and getattr(node, "end_lineno", None) is not None


# --- the merge ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Edit:
    start: int
    end: int
    text: str


@dataclass(slots=True)
class _Context:
    """The merge in progress: edits to omni's text and the upstream edits taken."""

    omni: _Source
    upstream: _Source
    #: The fields of the records the output defines, by record name.
    fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    edits: list[_Edit] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)

    def apply(self) -> str:
        text = self.omni.text
        edits = sorted(self.edits, key=lambda e: (e.start, e.end))
        for first, second in itertools.pairwise(edits):
            if second.start < first.end:
                raise _Conflict("upstream's edits overlap in omni's text")
        for edit in reversed(edits):
            text = text[: edit.start] + edit.text + text[edit.end :]
        return text

    # -- values

    def value(self, b: object, o: object, t: object, what: str) -> object:
        """The merge of one field value (a node, a list, a primitive or None)."""
        if _same(o, t):
            return o
        if _same(b, t):
            return o
        same_kind = isinstance(o, ast.AST) and type(b) is type(o) is type(t)
        if _same(b, o) and (_positioned(o) or not same_kind):
            self.take(o, t, what)
            return t
        if same_kind:
            assert isinstance(b, ast.AST) and isinstance(o, ast.AST) and isinstance(t, ast.AST)
            return self.node(b, o, t, what)
        raise _Conflict(f"both sides changed {what}")

    def take(self, o: object, t: object, what: str) -> None:
        """Replace omni's unchanged ``o`` with upstream's ``t``."""
        if not (_positioned(o) and _positioned(t)):
            raise _Conflict(
                f"upstream changed {what}, which has no place of its own in omni's text"
            )
        assert isinstance(o, ast.AST) and isinstance(t, ast.AST)
        if isinstance(o, ast.stmt) != isinstance(t, ast.stmt):
            raise _Conflict(f"upstream changed {what} into another kind of code")
        start, end = self.omni.span(o)
        text = self._moved_text(t, self.omni.indent_of_line(o.lineno))  # type: ignore[attr-defined]
        self.edits.append(_Edit(start, end, text))
        self.taken.append(what)

    def _moved_text(self, t: ast.AST, indent: str) -> str:
        """Upstream's code of ``t`` re-indented for its place in omni's text."""
        text = self.upstream.segment(t)
        if "\n" not in text:
            return text
        first, rest = text.split("\n", 1)
        old = self.upstream.indent_of_line(t.lineno)  # type: ignore[attr-defined]
        return first + "\n" + reindent(rest, old, indent)

    def node(self, b: ast.AST, o: ast.AST, t: ast.AST, what: str) -> ast.AST:
        """Both sides changed one node: merge it field by field."""
        if isinstance(o, ast.arguments):
            assert isinstance(b, ast.arguments) and isinstance(t, ast.arguments)
            return _Parameters(self, b, o, t).merge()
        if isinstance(o, ast.Dict | ast.JoinedStr):
            # Keys pair with values, and f-string parts have no places of their own.
            raise _Conflict(f"both sides changed {what}")
        if isinstance(o, ast.Call) and _another_callee(b, o, t):
            # Upstream's arguments are the old callee's: omni's function takes its own.
            raise _Conflict(
                f"omni calls {_short(ast.unparse(o.func))} where the base called "
                f"{_short(ast.unparse(b.func))}, whose arguments upstream changed"  # type: ignore[attr-defined]
            )
        merged = copy.copy(o)
        for name, o_value in ast.iter_fields(o):
            if name == "type_comment":
                continue
            b_value, t_value = getattr(b, name), getattr(t, name)
            primitive = not isinstance(o_value, list | ast.AST) and not isinstance(t_value, ast.AST)
            label = _describe(b) if primitive else f"{_describe(o)} {name}"
            if isinstance(o_value, list):
                result: object = self.sequence(o, name, b_value, o_value, t_value, label)
            elif name in _ANNOTATIONS:
                result = self.annotation(b_value, o_value, t_value, label)
            elif isinstance(o_value, ast.AST) or isinstance(t_value, ast.AST):
                result = self.value(b_value, o_value, t_value, label)
            else:
                result = self.primitive(o, name, b_value, o_value, t_value, label)
            setattr(merged, name, result)
        return merged

    def annotation(self, b: object, o: object, t: object, what: str) -> object:
        """An annotation: a quoted forward reference equals the same unquoted."""
        plain_b, plain_o, plain_t = _unquoted(b), _unquoted(o), _unquoted(t)
        if _same(plain_o, plain_t) or _same(plain_b, plain_t):
            return o
        if _same(plain_b, plain_o):
            self.take(o, t, what)
            return t
        return self.value(b, o, t, what)

    def primitive(
        self, o: ast.AST, name: str, b: object, ov: object, tv: object, what: str
    ) -> object:
        if ov == tv or b == tv:
            return ov
        if b == ov and isinstance(o, ast.Attribute) and name == "attr":
            # ``x.old`` -> ``x.new``: the name after the last dot.
            _, end = self.omni.span(o)
            self.edits.append(_Edit(end - len(str(ov)), end, str(tv)))
            self.taken.append(what)
            return tv
        raise _Conflict(f"both sides changed {what}" if b != ov else f"upstream changed {what}")

    def sequence(
        self,
        parent: ast.AST,
        name: str,
        b: list[object],
        o: list[object],
        t: list[object],
        what: str,
    ) -> Sequence[object]:
        if name == "keywords":
            return _Keywords(self, parent, b, o, t).merge()  # type: ignore[arg-type]
        if all(isinstance(x, ast.stmt) for x in (*b, *o, *t)):
            return self.stmts(b, o, t, what)  # type: ignore[arg-type]
        if not all(_positioned(x) for x in (*b, *o, *t)):
            if _same(b, o) or _same(b, t) or _same(o, t):
                return self.value(b, o, t, what)  # type: ignore[return-value]
            if _with_items(b, o, t):
                return self.with_items(b, o, t, what)  # type: ignore[arg-type]
            raise _Conflict(f"both sides changed {what}")
        # A set's items and an import's names: their order means nothing.
        unordered = isinstance(parent, ast.Set | ast.Import | ast.ImportFrom)
        kind = _UnorderedItems if unordered else _Items
        items = kind(self, name, b, o, t, what)  # type: ignore[arg-type]
        items.fields = self.filled(parent, name, (*b, *o, *t))
        return items.merge()

    def filled(self, parent: ast.AST, name: str, items: Sequence[object]) -> tuple[str, ...]:
        """The fields of the record a list of items fills in order: a construction's
        positional arguments, or the targets of an unpacking (none: ``()``)."""
        if isinstance(parent, ast.Call) and name == "args":
            return self.fields.get(records.callee(parent), ())
        if isinstance(parent, ast.Tuple | ast.List) and isinstance(parent.ctx, ast.Store):
            names = [i.id for i in items if isinstance(i, ast.Name)]
            return records.unpacked(names, self.fields) or ()
        return ()

    def with_items(
        self, b: list[ast.withitem], o: list[ast.withitem], t: list[ast.withitem], what: str
    ) -> list[ast.withitem]:
        """A ``with`` statement's items, which have no place of their own to write
        upstream's additions to: paired by what they call, when upstream added, removed
        and reordered none; omni's own additions and removals stand."""
        keys = [_callee(i) for i in b]
        if [_callee(i) for i in t] != keys:
            raise _Conflict(f"both sides changed {what}")
        merged: list[ast.withitem] = []
        for item in o:
            key = _callee(item)
            if key not in keys:
                merged.append(item)
                continue
            at = keys.index(key)
            merged.append(self.value(b[at], item, t[at], what))  # type: ignore[arg-type]
        for at, key in enumerate(keys):
            if key not in {_callee(i) for i in o} and not _same(b[at], t[at]):
                raise _Conflict(
                    f"omni removed {_describe(b[at].context_expr)}, which upstream edited"
                )
        return merged

    def stmts(
        self, b: list[ast.stmt], o: list[ast.stmt], t: list[ast.stmt], what: str
    ) -> list[ast.stmt]:
        return _Statements(self, b, o, t, what).merge()  # type: ignore[return-value]


#: Least similarity of two items both sides added at one place to count as one item.
ALIKE = 0.9


def _another_callee(b: ast.AST, o: ast.Call, t: ast.AST) -> bool:
    """Whether omni's call ``o`` calls another function, with other parameters, than the
    base's ``b`` while upstream's ``t`` changed the base's arguments. Another name alone is
    not enough (``helpers.f`` imported as ``f``; a subclass of the class built, which takes
    its fields by keyword, omni dropping some): the call must also pass another number of
    positional arguments, as omni's own wrapper with keyword parameters does in place of
    ``dispatch_cg_and_sync_dp(self.cudagraph_manager, num_reqs, ...)``."""
    assert isinstance(b, ast.Call) and isinstance(t, ast.Call)
    if _callee_name(b.func) == _callee_name(o.func) or len(o.args) == len(b.args):
        return False
    return not (_same(b.args, t.args) and _same(b.keywords, t.keywords))


def _callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ast.dump(func)


def _alike(a: ast.AST, b: ast.AST) -> bool:
    return _same(a, b) or similarity(ast.unparse(a), ast.unparse(b)) >= ALIKE


def _in_order(items: Sequence[ast.AST], among: Sequence[ast.AST]) -> bool:
    """Whether ``among`` holds ``items``, the same by syntax tree, in their order."""
    rest = iter(among)
    return all(any(_same(item, other) for other in rest) for item in items)


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return f"the call of {_short(ast.unparse(node.func))}"
    if isinstance(node, ast.keyword):
        return f"keyword {node.arg}" if node.arg else "keyword **"
    if isinstance(node, ast.stmt | ast.expr):
        return f"`{_short(ast.unparse(node).split(chr(10))[0])}`"
    return type(node).__name__


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- sequences ------------------------------------------------------------------------------


def _align(
    a: Sequence[object], b: Sequence[object], similar: Callable[[object, object], bool] | None
) -> list[tuple[int, int]]:
    """Pairs of equal items in order; then, in each gap between them, items of ``a`` paired
    with ``similar`` items of ``b`` (without ``similar``: a gap with as many items on both
    sides pairs them in order, each one item edited)."""
    keys_a, keys_b = [_dump(x) for x in a], [_dump(x) for x in b]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    exact = [
        (block.a + k, block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    ]
    result: list[tuple[int, int]] = []
    previous = (-1, -1)
    for pair in (*exact, (len(a), len(b))):
        gap_a = range(previous[0] + 1, pair[0])
        gap_b = range(previous[1] + 1, pair[1])
        if similar is None:
            if len(gap_a) == len(gap_b):
                result.extend(zip(gap_a, gap_b, strict=True))
        else:
            used = gap_b.start - 1
            for i in gap_a:
                match = next((j for j in range(used + 1, gap_b.stop) if similar(a[i], b[j])), None)
                if match is not None:
                    result.append((i, match))
                    used = match
        if pair != (len(a), len(b)):
            result.append(pair)
        previous = pair
    return result


@dataclass(frozen=True, slots=True)
class _Side:
    """How one side changed a base sequence: each base item's counterpart, and insertions."""

    #: For each base item, the index of its counterpart on this side (None: removed).
    counterpart: tuple[int | None, ...]
    #: For each gap (before base item g; ``len(base)`` is the end), the items inserted there.
    inserted: tuple[tuple[int, ...], ...]


def _side(
    base: Sequence[object],
    other: Sequence[object],
    similar: Callable[[object, object], bool] | None,
) -> _Side:
    pairs = _align(base, other, similar)
    counterpart: list[int | None] = [None] * len(base)
    for i, j in pairs:
        counterpart[i] = j
    inserted: list[list[int]] = [[] for _ in range(len(base) + 1)]
    paired = {j: i for i, j in pairs}
    gap = 0
    for j in range(len(other)):
        if j in paired:
            gap = paired[j] + 1
        else:
            inserted[gap].append(j)
    return _Side(tuple(counterpart), tuple(tuple(g) for g in inserted))


def _touching(inserter: _Side, remover: _Side, what: str) -> None:
    """diff3's adjacency: one side's insertion next to an item the other side removed is
    one change meeting another (a replacement, most likely), never two edits to merge."""
    for gap, inserted in enumerate(inserter.inserted):
        if not inserted:
            continue
        neighbours = [i for i in (gap - 1, gap) if 0 <= i < len(remover.counterpart)]
        if any(remover.counterpart[i] is None for i in neighbours):
            raise _Conflict(f"both sides changed {what} at the same place")


class _Sequence:
    """diff3 over one list field, item by item: an edit of one side merges with any edit
    of the other side that touches another item or another gap. Subclasses write the
    text edits of their kind of list."""

    similar: Callable[[object, object], bool] | None = None

    def __init__(
        self,
        context: _Context,
        b: Sequence[ast.AST],
        o: Sequence[ast.AST],
        t: Sequence[ast.AST],
        what: str,
    ) -> None:
        self.context = context
        self.b, self.o, self.t = list(b), list(o), list(t)
        self.what = what

    def merge(self) -> list[ast.AST]:
        ours = _side(self.b, self.o, self.similar)
        theirs = _side(self.b, self.t, self.similar)
        _touching(ours, theirs, self.what)
        _touching(theirs, ours, self.what)
        result: list[ast.AST] = []
        last_o = -1  # the last omni item placed so far: where upstream's insertions go
        for gap in range(len(self.b) + 1):
            mine = [self.o[j] for j in ours.inserted[gap]]
            new = [self.t[j] for j in theirs.inserted[gap]]
            result.extend(self._both_added(gap, last_o, mine, new, ours.inserted[gap]))
            if ours.inserted[gap]:
                last_o = ours.inserted[gap][-1]
            if gap == len(self.b):
                break
            item = self._item(gap, ours.counterpart[gap], theirs.counterpart[gap])
            if item is not None:
                result.append(item)
            if ours.counterpart[gap] is not None:
                last_o = ours.counterpart[gap]  # type: ignore[assignment]
        self._never_twice(result)
        return result

    def _never_twice(self, result: list[ast.AST]) -> None:
        """A clash where the merge holds an item more often than either side does: both
        sides added it, at different places, and written twice it would run twice. (An
        item both sides edited is neither side's; once, it is what they both had.)"""
        most = Counter(_dump(x) for x in self.o) | Counter(_dump(x) for x in self.t)
        for key, count in Counter(_dump(x) for x in result).items():
            if count > max(most[key], 1):
                item = next(x for x in result if _dump(x) == key)
                raise _Conflict(
                    f"both sides added {_describe(item)} to {self.what}, at different places"
                )

    def _both_added(
        self,
        gap: int,
        last_o: int,
        mine: list[ast.AST],
        new: list[ast.AST],
        positions: Sequence[int],
    ) -> list[ast.AST]:
        """The items of one gap: what omni added, and what upstream added there too."""
        if not new:
            return mine
        if not mine:
            self.insert_after(last_o, new)
            return new
        # What both added alike, at the start of the gap, counts once: the same item, or
        # one so similar that omni's is upstream's edited (``batch_desc``, ``_batch_desc``).
        common = 0
        while common < min(len(mine), len(new)) and _alike(mine[common], new[common]):
            common += 1
        rest = new[common:]
        if _in_order(rest, mine[common:]):
            # omni's additions hold upstream's, in upstream's order: omni made upstream's
            # change already (against an older release), so it is written once.
            return mine
        if common == len(mine):
            self.insert_after(positions[-1], rest)
            return [*mine, *rest]
        if not self.unordered() and (gap < len(self.b) or not self.appendable()):
            raise _Conflict(f"both sides added {self.what} at the same place")
        if self.omni_first(mine[common:], rest):
            self.insert_after(positions[-1], rest)
            self.context.taken[-1] = (
                f"{self.what}: {len(rest)} appended by both, omni's first (the order of the "
                "fields they fill)"
            )
            return [*mine, *rest]
        # Both appended: upstream's first, so every position upstream's code relies on
        # stays (the convention of the ports replayed: a NamedTuple's new fields, the
        # arguments that fill them); verify checks omni's calls against the fields (OP510).
        self.insert_before(positions[common], rest)
        return [*mine[:common], *rest, *mine[common:]]

    def _item(self, index: int, mine: int | None, theirs: int | None) -> ast.AST | None:
        """The merge of base item ``index``; None when it is gone."""
        base = self.b[index]
        if mine is None and theirs is None:
            return None
        if mine is None:
            assert theirs is not None
            if not _same(base, self.t[theirs]):
                raise _Conflict(
                    f"omni replaced or removed {_describe(base)}, which upstream edited"
                )
            return None
        if theirs is None:
            if not _same(base, self.o[mine]):
                raise _Conflict(
                    f"upstream replaced or removed {_describe(base)}, which omni edited"
                )
            self.delete(mine)
            self.context.taken.append(f"{self.what}: {_describe(base)} removed")
            return None
        merged = self.context.value(
            base, self.o[mine], self.t[theirs], self.item_name(self.o[mine])
        )
        return merged  # type: ignore[return-value]

    def item_name(self, item: ast.AST) -> str:
        return f"{self.what}: {_describe(item)}"

    def omni_first(self, mine: Sequence[ast.AST], new: Sequence[ast.AST]) -> bool:
        """Whether omni's appended items go before upstream's: only where they fill the
        fields of a record the output defines, and it puts omni's first (a clash where
        the two sides' fields interleave)."""
        return False

    def unordered(self) -> bool:
        """Whether the items' order means nothing, so both sides' additions can stand."""
        return False

    def appendable(self) -> bool:
        """Whether what both sides appended to the end can stand, upstream's first (items
        that are positions: arguments, fields)."""
        return True

    def insert_after(self, index: int, ts: list[ast.AST]) -> None:
        """Put upstream's ``ts`` after omni's item ``index`` (-1: before the first)."""
        raise NotImplementedError

    def insert_before(self, index: int, ts: list[ast.AST]) -> None:
        raise NotImplementedError

    def delete(self, index: int) -> None:
        raise NotImplementedError


class _Items(_Sequence):
    """Comma-separated items: arguments, list and tuple items, targets, bases, decorators."""

    #: The fields of the record the items fill in order, as the output defines them
    #: (empty: none known).
    fields: tuple[str, ...] = ()

    def __init__(
        self,
        context: _Context,
        name: str,
        b: Sequence[ast.AST],
        o: Sequence[ast.AST],
        t: Sequence[ast.AST],
        what: str,
    ) -> None:
        super().__init__(context, b, o, t, what)
        self.name = name

    def appendable(self) -> bool:
        # Decorators stack in an order that means something.
        return self.name != "decorator_list"

    def omni_first(self, mine: Sequence[ast.AST], new: Sequence[ast.AST]) -> bool:
        at = {name: i for i, name in enumerate(self.fields)}
        names = [[getattr(x, "id", None) for x in side] for side in (mine, new)]
        if not all(name in at for side in names for name in side):
            return False  # not (all) bare names of its fields: the record says nothing
        ours, theirs = ([at[n] for n in side if n is not None] for side in names)
        if max(ours) < min(theirs):
            return True
        if max(theirs) < min(ours):
            return False
        raise _Conflict(f"both sides appended {self.what}, filling fields that interleave")

    def _layout(self) -> tuple[str, str]:
        """(separator, indentation of a new line) as omni's list writes them."""
        src = self.context.omni
        if not self.o:
            raise _Conflict(f"upstream added {self.what} where omni's code has none")
        last_line = self.o[-1].lineno  # type: ignore[attr-defined]
        if self.name == "decorator_list":
            indent = src.indent_of_line(last_line)
            return "\n" + indent + "@", indent
        if len({x.lineno for x in self.o}) > 1:  # type: ignore[attr-defined]
            indent = src.indent_of_line(last_line)
            return ",\n" + indent, indent
        return ", ", ""

    def _joined(self, ts: list[ast.AST]) -> tuple[str, str]:
        sep, indent = self._layout()
        return sep, sep.join(self.context._moved_text(item, indent) for item in ts)

    def insert_after(self, index: int, ts: list[ast.AST]) -> None:
        sep, text = self._joined(ts)
        if index >= 0:
            _, end = self.context.omni.span(self.o[index])
            self.context.edits.append(_Edit(end, end, sep + text))
        else:
            start, _ = self.context.omni.span(self.o[0])
            self.context.edits.append(_Edit(start, start, text + sep))
        self.context.taken.append(f"{self.what}: {len(ts)} added")

    def insert_before(self, index: int, ts: list[ast.AST]) -> None:
        sep, text = self._joined(ts)
        start, _ = self.context.omni.span(self.o[index])
        self.context.edits.append(_Edit(start, start, text + sep))
        said = (
            "beside omni's own (their order means nothing)"
            if self.unordered()
            else ("appended by both, upstream's first")
        )
        self.context.taken.append(f"{self.what}: {len(ts)} {said}")

    def delete(self, index: int) -> None:
        src = self.context.omni
        if index > 0:
            _, start = src.span(self.o[index - 1])
            _, end = src.span(self.o[index])
        elif index + 1 < len(self.o):
            start, _ = src.span(self.o[index])
            end, _ = src.span(self.o[index + 1])
        else:
            raise _Conflict(f"upstream removed every item of {self.what}")
        if self.name != "decorator_list" and "#" in src.text[start:end]:
            raise _Conflict(f"upstream removed items of {self.what} next to omni's comments")
        self.context.edits.append(_Edit(start, end, ""))


class _UnorderedItems(_Items):
    """A set's items and an import's names: what both sides added stands side by side."""

    def unordered(self) -> bool:
        return True


def _similar_statements(a: object, b: object) -> bool:
    """Two statements of one kind whose first lines are alike, or that bind the same
    targets: one statement edited."""
    if type(a) is not type(b) or not isinstance(a, ast.stmt) or not isinstance(b, ast.stmt):
        return False
    targets = _targets(a)
    if targets and targets == _targets(b):
        return True
    if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return a.name == getattr(b, "name", None)
    first_a = ast.unparse(a).split("\n")[0]
    first_b = ast.unparse(b).split("\n")[0]
    return similarity(first_a, first_b) >= STATEMENT_PAIR


def _targets(stmt: ast.stmt) -> str:
    """The targets an assignment binds, as text ("" for other statements)."""
    if isinstance(stmt, ast.Assign):
        return " = ".join(_dump(t) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        return _dump(stmt.target)
    return ""


def all_fields(code: str) -> bool:
    """Whether ``code`` is one or more field declarations of a class body."""
    try:
        nodes = ast.parse(dedent_code(code)).body
    except SyntaxError:
        return False
    return bool(nodes) and all(_is_field(node) for node in nodes)


def _is_field(stmt: ast.AST) -> bool:
    """A declaration of a class body's field: ``name: annotation`` (with or without value)."""
    return isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)


class _Statements(_Sequence):
    """Statements of a body: whole lines, re-indented for omni's text."""

    similar = staticmethod(_similar_statements)

    def appendable(self) -> bool:
        # Statement order is data flow, not position, except for the fields of a class
        # body (a NamedTuple's, a dataclass's): those are positions, like arguments.
        return all(_is_field(s) for s in (*self.b, *self.o, *self.t))

    def _lines(self, stmt: ast.AST) -> tuple[int, int]:
        decorators = getattr(stmt, "decorator_list", [])
        first = min([stmt.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]
        return first, stmt.end_lineno or first  # type: ignore[attr-defined]

    def _own_lines(self, stmt: ast.AST) -> tuple[int, int]:
        """Offsets of the whole lines of ``stmt``; a clash when it shares a line."""
        src = self.context.omni
        first, last = self._lines(stmt)
        start, end = src.line_span(first, last)
        code = src.offset(first, len(src.indent_of_line(first)))
        if first == stmt.lineno and code != src.offset(stmt.lineno, stmt.col_offset):  # type: ignore[attr-defined]
            raise _Conflict(f"{_describe(stmt)} shares a line with other code")
        tail = src.text[src.offset(last, stmt.end_col_offset or 0) : end].strip()  # type: ignore[attr-defined]
        if tail and not tail.startswith("#"):
            raise _Conflict(f"{_describe(stmt)} shares a line with other code")
        return start, end

    def _text(self, ts: list[ast.AST], indent: str) -> str:
        up = self.context.upstream
        out = []
        for stmt in ts:
            first, last = self._lines(stmt)
            old = up.indent_of_line(first)
            out.append(reindent("\n".join(up.lines[first - 1 : last]), old, indent) + "\n")
        return "".join(out)

    def _indent(self) -> str:
        # No statement at all: omni deleted everything, at the top of the (dedented) code.
        if not self.o:
            return ""
        return self.context.omni.indent_of_line(self._lines(self.o[0])[0])

    def insert_after(self, index: int, ts: list[ast.AST]) -> None:
        text = self._text(ts, self._indent())
        if index >= 0:
            _, end = self._own_lines(self.o[index])
            self.context.edits.append(_Edit(end, end, text))
        elif self.o:
            start, _ = self._own_lines(self.o[0])
            self.context.edits.append(_Edit(start, start, text))
        else:
            self.context.edits.append(_Edit(0, 0, text))
        self.context.taken.append(f"{self.what}: {len(ts)} statements added")

    def insert_before(self, index: int, ts: list[ast.AST]) -> None:
        start, _ = self._own_lines(self.o[index])
        self.context.edits.append(_Edit(start, start, self._text(ts, self._indent())))
        self.context.taken.append(f"{self.what}: {len(ts)} added by both, upstream's first")

    def delete(self, index: int) -> None:
        start, end = self._own_lines(self.o[index])
        self.context.edits.append(_Edit(start, end, ""))


# --- keyed lists: keywords and parameters ---------------------------------------------------


def _keyword_key(node: ast.keyword) -> str:
    return node.arg if node.arg is not None else "**" + _dump(node.value)


class _Keywords:
    """Keyword arguments, matched by name: their order means nothing to Python."""

    def __init__(
        self,
        context: _Context,
        parent: ast.AST,
        b: list[ast.keyword],
        o: list[ast.keyword],
        t: list[ast.keyword],
    ) -> None:
        self.context = context
        self.parent = parent
        self.b = {_keyword_key(k): k for k in b}
        self.o = {_keyword_key(k): k for k in o}
        self.t = {_keyword_key(k): k for k in t}
        self.order_t = [_keyword_key(k) for k in t]
        self.what = f"{_describe(parent)}"

    def merge(self) -> list[ast.keyword]:
        result: list[tuple[str, ast.keyword]] = []
        for key, kept in self.o.items():
            if key in self.b and key in self.t:
                merged = self.context.value(self.b[key], kept, self.t[key], f"keyword {key}")
                result.append((key, merged))  # type: ignore[arg-type]
            elif key in self.b:
                if not _same(self.b[key], kept):
                    raise _Conflict(
                        f"upstream removed keyword {key} of {self.what}; omni edited it"
                    )
                self._delete(key)
            elif key in self.t and not _same(kept, self.t[key]):
                raise _Conflict(f"both sides added keyword {key} of {self.what}, differently")
            else:
                result.append((key, kept))
        for key in self.b:
            if key not in self.o and key in self.t and not _same(self.b[key], self.t[key]):
                raise _Conflict(f"omni removed keyword {key} of {self.what}; upstream edited it")
        for key in self.order_t:
            if key not in self.b and key not in self.o:
                result = self._insert(key, result)
        return [node for _, node in result]

    def _items(self) -> list[ast.AST]:
        """Every argument of the call in omni's text, in text order."""
        args = list(getattr(self.parent, "args", None) or getattr(self.parent, "bases", []))
        items = [*args, *self.o.values()]
        return sorted(items, key=lambda n: (n.lineno, n.col_offset))

    def _delete(self, key: str) -> None:
        src = self.context.omni
        items = self._items()
        index = next(i for i, item in enumerate(items) if item is self.o[key])
        if index > 0:
            _, start = src.span(items[index - 1])
            _, end = src.span(items[index])
        elif index + 1 < len(items):
            start, _ = src.span(items[index])
            end, _ = src.span(items[index + 1])
        else:
            raise _Conflict(f"upstream removed the only argument of {self.what}")
        if "#" in src.text[start:end]:
            raise _Conflict(f"upstream removed keyword {key} next to omni's comments")
        self.context.edits.append(_Edit(start, end, ""))
        self.context.taken.append(f"keyword {key} of {self.what} removed")

    def _insert(
        self, key: str, result: list[tuple[str, ast.keyword]]
    ) -> list[tuple[str, ast.keyword]]:
        """Upstream's new keyword goes after the keyword it follows upstream."""
        src = self.context.omni
        position = self.order_t.index(key)
        before = [k for k in self.order_t[:position] if k in self.o]
        items = self._items()
        if not items:
            raise _Conflict(f"upstream added keyword {key} to {self.what}, which omni calls bare")
        lines = {item.lineno for item in items}  # type: ignore[attr-defined]
        multiline = len(items) > 1 and len(lines) > 1
        indent = src.indent_of_line(items[-1].lineno) if multiline else ""  # type: ignore[attr-defined]
        sep = ",\n" + indent if multiline else ", "
        text = self.context._moved_text(self.t[key], indent)
        if before:
            _, end = src.span(self.o[before[-1]])
            self.context.edits.append(_Edit(end, end, sep + text))
            at = next(i for i, (k, _) in enumerate(result) if k == before[-1]) + 1
            while at < len(result) and result[at][0] not in self.o:
                at += 1
        else:
            first_keyword = next(iter(self.o.values()), None)
            if first_keyword is not None:
                start, _ = src.span(first_keyword)
                self.context.edits.append(_Edit(start, start, text + sep))
            else:
                _, end = src.span(items[-1])
                self.context.edits.append(_Edit(end, end, sep + text))
            at = 0
        self.context.taken.append(f"keyword {key} of {self.what}")
        return [*result[:at], (key, self.t[key]), *result[at:]]


@dataclass(frozen=True, slots=True)
class _Param:
    """One parameter of a signature: its kind, its node and its default."""

    kind: str
    arg: ast.arg
    default: ast.expr | None

    @property
    def name(self) -> str:
        return self.arg.arg


def _params(arguments: ast.arguments) -> list[_Param]:
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults += list(arguments.defaults)
    params = [
        _Param("posonly" if i < len(arguments.posonlyargs) else "positional", arg, default)
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True))
    ]
    if arguments.vararg is not None:
        params.append(_Param("vararg", arguments.vararg, None))
    params += [
        _Param("keyword", arg, default)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    ]
    if arguments.kwarg is not None:
        params.append(_Param("kwarg", arguments.kwarg, None))
    return params


def _dump_param(param: _Param) -> str:
    return f"{param.kind}:{_dump(param.arg)}={_dump(param.default)}"


class _Parameters:
    """Parameters of a signature, matched by name; kept in omni's order."""

    def __init__(
        self, context: _Context, b: ast.arguments, o: ast.arguments, t: ast.arguments
    ) -> None:
        self.context = context
        self.b = {p.name: p for p in _params(b)}
        self.o = {p.name: p for p in _params(o)}
        self.t = {p.name: p for p in _params(t)}
        self.order_t = [p.name for p in _params(t)]
        self.original = o

    def span(self, source: _Source, param: _Param) -> tuple[int, int]:
        start, end = source.span(param.arg)
        if param.default is not None:
            end = source.span(param.default)[1]
        return start, end

    def merge(self) -> ast.arguments:
        result: list[_Param] = []
        for name, kept in self.o.items():
            if name in self.b and name in self.t:
                result.append(self._one(self.b[name], kept, self.t[name]))
            elif name in self.b:
                if _dump_param(self.b[name]) != _dump_param(kept):
                    raise _Conflict(f"upstream removed parameter {name}; omni edited it")
                self._delete(name)
            elif name in self.t and _dump_param(kept) != _dump_param(self.t[name]):
                raise _Conflict(f"both sides added parameter {name}, differently")
            else:
                result.append(kept)
        for name in self.b:
            gone = name not in self.o and name in self.t
            if gone and _dump_param(self.b[name]) != _dump_param(self.t[name]):
                raise _Conflict(f"omni removed parameter {name}; upstream edited it")
        for name in self.order_t:
            if name not in self.b and name not in self.o:
                result = self._insert(name, result)
        return _arguments(result, self.original)

    def _one(self, b: _Param, o: _Param, t: _Param) -> _Param:
        if _dump_param(o) == _dump_param(t) or _dump_param(b) == _dump_param(t):
            return o
        if b.kind != o.kind or b.kind != t.kind:
            raise _Conflict(f"both sides changed parameter {o.name}")
        if _dump_param(b) == _dump_param(o):
            start, end = self.span(self.context.omni, o)
            up_start, up_end = self.span(self.context.upstream, t)
            self.context.edits.append(
                _Edit(start, end, self.context.upstream.text[up_start:up_end])
            )
            self.context.taken.append(f"parameter {o.name}")
            return t
        arg = copy.copy(o.arg)
        arg.annotation = self.context.annotation(  # type: ignore[assignment]
            b.arg.annotation, o.arg.annotation, t.arg.annotation, f"parameter {o.name} annotation"
        )
        default = self.context.value(b.default, o.default, t.default, f"parameter {o.name} default")
        return _Param(o.kind, arg, default)  # type: ignore[arg-type]

    def _neighbours(self) -> list[_Param]:
        return list(self.o.values())

    def _delete(self, name: str) -> None:
        src = self.context.omni
        params = self._neighbours()
        index = next(i for i, p in enumerate(params) if p.name == name)
        if index > 0 and params[index - 1].kind == params[index].kind:
            start = self.span(src, params[index - 1])[1]
            end = self.span(src, params[index])[1]
        elif index + 1 < len(params) and params[index + 1].kind == params[index].kind:
            start = self.span(src, params[index])[0]
            end = self.span(src, params[index + 1])[0]
        else:
            raise _Conflict(f"upstream removed parameter {name}, next to a separator")
        if src.text[start:end].count(",") != 1 or "#" in src.text[start:end]:
            raise _Conflict(f"upstream removed parameter {name} next to other text")
        self.context.edits.append(_Edit(start, end, ""))
        self.context.taken.append(f"parameter {name} removed")

    def _insert(self, name: str, result: list[_Param]) -> list[_Param]:
        src = self.context.omni
        new = self.t[name]
        position = self.order_t.index(name)
        before = [n for n in self.order_t[:position] if n in self.o]
        if not before or self.o[before[-1]].kind != new.kind:
            raise _Conflict(f"upstream added parameter {name} where omni's order differs")
        anchor = self.o[before[-1]]
        params = self._neighbours()
        lines = {p.arg.lineno for p in params}
        indent = src.indent_of_line(params[-1].arg.lineno) if len(lines) > 1 else ""
        sep = ",\n" + indent if len(lines) > 1 else ", "
        up_start, up_end = self.span(self.context.upstream, new)
        end = self.span(src, anchor)[1]
        self.context.edits.append(
            _Edit(end, end, sep + self.context.upstream.text[up_start:up_end])
        )
        self.context.taken.append(f"parameter {name}")
        at = next(i for i, p in enumerate(result) if p.name == anchor.name) + 1
        while at < len(result) and result[at].name not in self.o:
            at += 1
        return [*result[:at], new, *result[at:]]


def _arguments(params: list[_Param], original: ast.arguments) -> ast.arguments:
    """An ``ast.arguments`` holding ``params`` (for the final comparison only)."""
    merged = copy.copy(original)
    positional = [p for p in params if p.kind in ("posonly", "positional")]
    keyword = [p for p in params if p.kind == "keyword"]
    merged.posonlyargs = [p.arg for p in positional if p.kind == "posonly"]
    merged.args = [p.arg for p in positional if p.kind == "positional"]
    first_default = next((i for i, p in enumerate(positional) if p.default is not None), None)
    if first_default is None:
        merged.defaults = []
    else:
        tail = positional[first_default:]
        if any(p.default is None for p in tail):
            raise _Conflict("a parameter without a default would follow one with a default")
        merged.defaults = [p.default for p in tail if p.default is not None]
    merged.kwonlyargs = [p.arg for p in keyword]
    merged.kw_defaults = [p.default for p in keyword]
    merged.vararg = next((p.arg for p in params if p.kind == "vararg"), None)
    merged.kwarg = next((p.arg for p in params if p.kind == "kwarg"), None)
    return merged


def written_against(older: str, mine: str, base: str) -> bool:
    """Whether ``mine`` was written against ``older`` rather than ``base``: upstream's
    changes from ``older`` to ``base`` merge cleanly into it and it lacks them."""
    if older == base:
        return False
    merged = merge(older, mine, base)
    return isinstance(merged, Merged) and bool(merged.taken)


# --- one expression moved into upstream's rewrite --------------------------------------------


@memo.memoized
def transplant(base: str, omni: str, upstream: str) -> Merged | None:
    """omni changed one expression of ``base`` and upstream rewrote the statements around
    it, keeping that expression as it was (``return f(x)`` became ``y = f(x)``): omni's
    expression in upstream's code. None when omni changed more than one expression, or
    upstream's code does not hold the old one exactly once."""
    try:
        b, o, t = (_Source(dedent_code(code)) for code in (base, omni, upstream))
    except SyntaxError:
        return None
    changed = _one_change(b.tree.body, o.tree.body)
    if changed is None:
        return None
    old, new = changed
    if not (isinstance(old, ast.expr) and isinstance(new, ast.expr) and _positioned(new)):
        return None
    held = [n for n in ast.walk(t.tree) if isinstance(n, ast.expr) and _same(n, old)]
    if len(held) != 1:
        return None
    start, end = t.span(held[0])
    text = t.text[:start] + o.segment(new) + t.text[end:]
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    taken = (f"upstream's code around {_describe(old)}, with omni's {_describe(new)}",)
    return Merged(_indented_like(omni, text), taken)


def _one_change(a: object, b: object) -> tuple[object, object] | None:
    """The one smallest pair of differing subtrees of ``a`` and ``b``, descending while a
    single field (or list item) differs; None when they are the same."""
    if _same(a, b):
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return (a, b)
        differing = [(x, y) for x, y in zip(a, b, strict=True) if not _same(x, y)]
        return _one_change(*differing[0]) if len(differing) == 1 else (a, b)
    if not (isinstance(a, ast.AST) and type(a) is type(b)):
        return (a, b)
    fields = [(x, getattr(b, name)) for name, x in ast.iter_fields(a) if name != "ctx"]
    differing = [(x, y) for x, y in fields if not _same(x, y)]
    if len(differing) == 1 and isinstance(differing[0][0], list | ast.AST):
        inner = _one_change(*differing[0])
        return inner if inner is not None and isinstance(inner[0], ast.AST) else (a, b)
    return (a, b)
