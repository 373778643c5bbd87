"""Dead stores of one function: bindings of a local name that no read can see.

A forward walk of reaching bindings over the function's statements (pyflakes' F841
widened to reassignments: ``x = a`` then ``x = b`` before any read of ``x`` leaves the
first dead). Every path is taken as possible, so a binding counts as read when some path
carries it to a read: silence rather than a false report. Reported are plain assignments
of a name (``x = ...``, ``x += ...``), and a declaration (``x: T = ...``) of a name nothing
reads at all (the idiom that declares a type before branches that all rebind it is left
alone); unpacking targets, loop and ``with`` targets, handlers, imports, defs and ``:=``
bind (and hide what they overwrite) but are never reported, as pyflakes leaves them. Names
starting with ``_``, names a nested function, lambda or class reads, ``global`` and
``nonlocal`` names, and every name of a function that calls ``locals()``, ``vars()``,
``eval`` or ``exec`` are never reported.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from omni_port.pyast.packages import FUNCTIONS, Function

#: Reaching bindings (indices into ``_Walk.stores``) by name; None where unreachable.
_State = dict[str, frozenset[int]] | None
#: Calls that read every local by name.
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec"})


class Binding(enum.Enum):
    """Which bindings are reported when dead."""

    PLAIN = "plain"
    """``x = ...``, ``x += ...``: reported."""
    DECLARATION = "declaration"
    """``x: T = ...``: reported when nothing reads ``x`` at all."""
    OTHER = "other"
    """Unpacking, loop, ``with`` and handler targets, imports, defs, ``:=``: never."""


@dataclass(frozen=True, slots=True)
class Store:
    """One binding of a local name."""

    name: str
    line: int
    #: 1-based column.
    col: int
    binding: Binding


@dataclass(slots=True)
class _Loop:
    breaks: list[_State] = field(default_factory=list)
    continues: list[_State] = field(default_factory=list)


def dead_stores(function: Function) -> list[Store]:
    """The plain assignments of ``function`` (not of its nested functions) nothing reads,
    in source order."""
    body = function.body
    if any(_calls_introspection(node) for node in body):
        return []
    walk = _Walk()
    state: _State = {a.arg: frozenset() for a in _arguments(function.args)}
    walk.suite(body, state)
    spared = _nested_reads(body) | _declared(body)
    read = {name for node in body for name in _reads_anywhere(node)}
    found = [
        store
        for store, index in walk.index.items()
        if (
            store.binding is Binding.PLAIN
            or (store.binding is Binding.DECLARATION and store.name not in read)
        )
        and index not in walk.used
        and store.name not in spared
        and not store.name.startswith("_")
    ]
    return sorted(found, key=lambda s: (s.line, s.col))


def scopes(function: Function) -> Iterator[tuple[str, Function]]:
    """``function`` ("") and every function nested in it, at any depth (methods of nested
    classes too), each with its dotted path below ``function`` (``helper``,
    ``helper.inner``, ``Local.run``), in source order: each has locals of its own."""
    yield "", function
    yield from _nested(function.body, "")


def _nested(body: Sequence[ast.stmt], prefix: str) -> Iterator[tuple[str, Function]]:
    for node in body:
        for inner in _defs(node):
            path = f"{prefix}{inner.name}"
            if isinstance(inner, FUNCTIONS):
                yield path, inner
            yield from _nested(inner.body, f"{path}.")


def _defs(node: ast.AST) -> Iterator[Function | ast.ClassDef]:
    """The outermost defs and classes under ``node`` (``node`` itself when it is one)."""
    if isinstance(node, FUNCTIONS | ast.ClassDef):
        yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from _defs(child)


def _arguments(args: ast.arguments) -> list[ast.arg]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return [a for a in every if a is not None]


def _join(*states: _State) -> _State:
    reachable = [s for s in states if s is not None]
    if not reachable:
        return None
    joined: dict[str, frozenset[int]] = {}
    for state in reachable:
        for name, stores in state.items():
            joined[name] = joined.get(name, frozenset()) | stores
    return joined


class _Walk:
    """Reaching bindings through one function body; records the bindings some read sees."""

    def __init__(self) -> None:
        #: Every binding met, numbered in the order met.
        self.index: dict[Store, int] = {}
        self.used: set[int] = set()
        self.loops: list[_Loop] = []
        #: Every state inside each enclosing ``try`` (what a handler or ``finally`` may see).
        self.tries: list[list[_State]] = []

    def suite(self, body: Sequence[ast.stmt], state: _State) -> _State:
        for node in body:
            if state is None:
                return None
            state = self.stmt(node, state)
            for seen in self.tries:
                seen.append(state)
        return state

    def read(self, node: ast.AST | None, state: dict[str, frozenset[int]]) -> None:
        if node is None:
            return
        for name in _reads(node):
            self.used |= state.get(name, frozenset())

    def bind(
        self,
        state: dict[str, frozenset[int]],
        node: ast.AST,
        binding: Binding = Binding.OTHER,
        kill: bool = True,
    ) -> dict[str, frozenset[int]]:
        """``state`` after ``node`` (a target, def or import) binds its names."""
        after = dict(state)
        for name, line, col in _targets(node):
            index = frozenset({self.store(Store(name, line, col + 1, binding))})
            after[name] = index if kill else after.get(name, frozenset()) | index
        return after

    def store(self, store: Store) -> int:
        """The index of ``store``, the same on every walk of a loop body."""
        return self.index.setdefault(store, len(self.index))

    def stmt(self, node: ast.stmt, state: dict[str, frozenset[int]]) -> _State:
        handler = getattr(self, "_" + type(node).__name__, None)
        if handler is not None:
            result: _State = handler(node, state)
            return result
        self.read(node, state)
        return self._walrus(node, state)

    def _walrus(self, node: ast.AST, state: dict[str, frozenset[int]]) -> dict[str, frozenset[int]]:
        """Names ``:=`` may bind: they hide nothing (the branch may not run)."""
        for inner in _same_scope(node):
            if isinstance(inner, ast.NamedExpr):
                state = self.bind(state, inner.target, kill=False)
        return state

    def _Assign(self, node: ast.Assign, state: dict[str, frozenset[int]]) -> _State:
        self.read(node.value, state)
        for target in node.targets:
            self.read(target, state)
        state = self._walrus(node.value, state)
        for target in node.targets:
            state = self.bind(state, target, _plain(target))
        return state

    def _AugAssign(self, node: ast.AugAssign, state: dict[str, frozenset[int]]) -> _State:
        self.read(node.value, state)
        if isinstance(node.target, ast.Name):
            self.used |= state.get(node.target.id, frozenset())
        else:
            self.read(node.target, state)
        state = self._walrus(node.value, state)
        return self.bind(state, node.target, _plain(node.target))

    def _AnnAssign(self, node: ast.AnnAssign, state: dict[str, frozenset[int]]) -> _State:
        if node.value is None:
            return state
        self.read(node.value, state)
        self.read(node.target, state)
        state = self._walrus(node.value, state)
        declaration = Binding.DECLARATION if isinstance(node.target, ast.Name) else Binding.OTHER
        return self.bind(state, node.target, declaration)

    def _Import(
        self, node: ast.Import | ast.ImportFrom, state: dict[str, frozenset[int]]
    ) -> _State:
        return self.bind(state, node)

    _ImportFrom = _Import

    def _FunctionDef(self, node: ast.stmt, state: dict[str, frozenset[int]]) -> _State:
        self.read(node, state)  # decorators, defaults, bases
        return self.bind(state, node)

    _AsyncFunctionDef = _FunctionDef
    _ClassDef = _FunctionDef

    def _exit(self, node: ast.Return | ast.Raise, state: dict[str, frozenset[int]]) -> _State:
        self.read(node, state)
        return None

    _Return = _exit
    _Raise = _exit

    def _Break(self, node: ast.Break, state: dict[str, frozenset[int]]) -> _State:
        if self.loops:
            self.loops[-1].breaks.append(state)
        return None

    def _Continue(self, node: ast.Continue, state: dict[str, frozenset[int]]) -> _State:
        if self.loops:
            self.loops[-1].continues.append(state)
        return None

    def _If(self, node: ast.If, state: dict[str, frozenset[int]]) -> _State:
        self.read(node.test, state)
        entry = self._walrus(node.test, state)
        return _join(self.suite(node.body, entry), self.suite(node.orelse, entry))

    def _For(self, node: ast.For | ast.AsyncFor, state: dict[str, frozenset[int]]) -> _State:
        self.read(node.iter, state)
        return self._loop(node, self._walrus(node.iter, state))

    _AsyncFor = _For

    def _While(self, node: ast.While, state: dict[str, frozenset[int]]) -> _State:
        return self._loop(node, state)

    def _loop(
        self, node: ast.For | ast.AsyncFor | ast.While, state: dict[str, frozenset[int]]
    ) -> _State:
        """Walk the body until the state at the loop's head no longer grows: every store of
        an iteration may reach a read of the next."""
        head: dict[str, frozenset[int]] = state
        loop = _Loop()
        self.loops.append(loop)
        while True:
            if isinstance(node, ast.While):
                self.read(node.test, head)
                entry = self._walrus(node.test, head)
            else:
                entry = self.bind(head, node.target)
            grown = _join(head, self.suite(node.body, entry), *loop.continues)
            assert grown is not None  # head itself is reachable
            if grown == head:
                break
            head = grown
        self.loops.pop()
        return _join(self.suite(node.orelse, head), *loop.breaks)

    def _With(self, node: ast.With | ast.AsyncWith, state: dict[str, frozenset[int]]) -> _State:
        for item in node.items:
            self.read(item.context_expr, state)
            state = self._walrus(item.context_expr, state)
            if item.optional_vars is not None:
                self.read(item.optional_vars, state)
                state = self.bind(state, item.optional_vars)
        return self.suite(node.body, state)

    _AsyncWith = _With

    def _Try(self, node: ast.Try | ast.TryStar, state: dict[str, frozenset[int]]) -> _State:
        seen: list[_State] = [state]
        self.tries.append(seen)
        done = self.suite(node.body, state)
        raised = _join(*seen)
        outcomes = [self.suite(node.orelse, done)]
        for handler in node.handlers:
            outcomes.append(self._handler(handler, raised))
        self.tries.pop()
        after = _join(*outcomes)
        if not node.finalbody:
            return after
        final = self.suite(node.finalbody, _join(after, *seen))
        return None if after is None else final

    _TryStar = _Try

    def _handler(self, handler: ast.ExceptHandler, state: _State) -> _State:
        if state is None:
            return None
        self.read(handler.type, state)
        if handler.name:
            bound = Store(handler.name, handler.lineno, handler.col_offset + 1, Binding.OTHER)
            state = {**state, handler.name: frozenset({self.store(bound)})}
        return self.suite(handler.body, state)

    def _Match(self, node: ast.Match, state: dict[str, frozenset[int]]) -> _State:
        self.read(node.subject, state)
        entry = self._walrus(node.subject, state)
        outcomes: list[_State] = [entry]
        for case in node.cases:
            bound = self.bind(entry, case.pattern)
            self.read(case.guard, bound)
            outcomes.append(self.suite(case.body, bound))
        return _join(*outcomes)


def _plain(target: ast.expr) -> Binding:
    return Binding.PLAIN if isinstance(target, ast.Name) else Binding.OTHER


def _reads_anywhere(node: ast.AST) -> Iterator[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Store):
            yield inner.id


def _same_scope(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it evaluates in its own scope: nested functions, lambdas and classes
    contribute their decorators, defaults and bases only; statements' bodies are left to the
    walk (a compound statement is read through its header)."""
    yield node
    if isinstance(node, FUNCTIONS | ast.Lambda):
        children: list[ast.AST] = [
            *(node.decorator_list if isinstance(node, FUNCTIONS) else []),
            *node.args.defaults,
            *(d for d in node.args.kw_defaults if d is not None),
        ]
    elif isinstance(node, ast.ClassDef):
        children = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    else:
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt)]
    for child in children:
        yield from _same_scope(child)


def _reads(node: ast.AST) -> Iterator[str]:
    """Names ``node`` reads or deletes in its own scope (comprehensions included)."""
    for inner in _same_scope(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Store):
            yield inner.id


def _targets(node: ast.AST) -> Iterator[tuple[str, int, int]]:
    """(name, line, col) of each name ``node`` binds: a target, def, import or pattern."""
    if isinstance(node, FUNCTIONS | ast.ClassDef):
        yield node.name, node.lineno, node.col_offset
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            yield name, node.lineno, node.col_offset
        return
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            yield inner.id, inner.lineno, inner.col_offset
        elif isinstance(inner, ast.MatchAs | ast.MatchStar) and inner.name:
            yield inner.name, inner.lineno, inner.col_offset
        elif isinstance(inner, ast.MatchMapping) and inner.rest:
            yield inner.rest, inner.lineno, inner.col_offset


def _nested_reads(body: Sequence[ast.stmt]) -> set[str]:
    """Names read inside nested functions, lambdas and classes (they run later, and see
    whatever the enclosing function bound last)."""
    names: set[str] = set()
    for node in body:
        for inner in ast.walk(node):
            if isinstance(inner, FUNCTIONS | ast.Lambda | ast.ClassDef):
                names.update(
                    n.id
                    for n in ast.walk(inner)
                    if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)
                )
    return names


def _declared(body: Sequence[ast.stmt]) -> set[str]:
    return {
        name
        for node in body
        for inner in ast.walk(node)
        if isinstance(inner, ast.Global | ast.Nonlocal)
        for name in inner.names
    }


def _calls_introspection(node: ast.AST) -> bool:
    return any(
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Name)
        and inner.func.id in _INTROSPECTION
        for inner in ast.walk(node)
    )
