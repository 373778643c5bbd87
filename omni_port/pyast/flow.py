"""Which local names are definitely bound before a line of a function, on every path."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Sequence

from omni_port.pyast import memo
from omni_port.pyast.packages import (
    COMPREHENSIONS,
    FUNCTIONS,
    STATEMENTS,
    Function,
    Names,
    same_scope_children,
    scope_bindings,
    scope_nodes,
)
from omni_port.pyast.syntax import import_bindings

#: Names visible in every module without a binding.
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}

#: Definitely-bound names at a point of a function; None where the point is unreachable.
_State = frozenset[str] | None


def unbound_reads(
    chain: Sequence[Function], module_names: Names, lines: frozenset[int]
) -> list[ast.Name]:
    """Reads, on ``lines``, of a local name of ``chain[-1]`` not definitely bound where read.

    A name the function never binds and nothing else defines (no global, builtin or
    enclosing local) counts as a local that is never bound.
    """
    function = chain[-1]
    local = _locals(function)
    reads = {n.id for node in function.body for n in _reads(node) if n.lineno in lines}
    visible = set().union(*(_locals(f) for f in chain[:-1])) | _BUILTINS
    lost = set() if module_names.open else reads - local - visible - module_names.names
    flow = _Flow(frozenset(local | lost), lines)
    flow.suite(function.body, frozenset(_parameters(function.args)))
    return flow.unbound


@memo.memoized
def hazards(function: Function) -> frozenset[str]:
    """Locals ``function`` itself reads somewhere they are not bound on every path."""
    lines = frozenset(range(function.lineno, (function.end_lineno or function.lineno) + 1))
    flow = _Flow(frozenset(_locals(function)), lines)
    flow.suite(function.body, frozenset(_parameters(function.args)))
    return frozenset(n.id for n in flow.unbound)


def _parameters(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}


def _locals(function: Function) -> set[str]:
    """Names local to a function: parameters and names bound in its body, minus declarations."""
    body = function.body
    declared = {
        name
        for node in scope_nodes(body)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for name in node.names
    }
    return (_parameters(function.args) | scope_bindings(body)) - declared


def _reads(node: ast.AST, shadow: frozenset[str] = frozenset()) -> Iterator[ast.Name]:
    """Names ``node`` reads in its own scope (annotations and nested bodies are not read).

    A comprehension reads in the enclosing scope whatever its own targets do not shadow.
    """
    if isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Store) and node.id not in shadow:
            yield node
        return
    target = node.target if isinstance(node, ast.AugAssign) else None
    if isinstance(target, ast.Name) and target.id not in shadow:
        yield target
    if isinstance(node, COMPREHENSIONS):
        shadow = shadow | {n for g in node.generators for n in _stores(g.target)}
        children: list[ast.AST] = list(ast.iter_child_nodes(node))
    elif isinstance(node, FUNCTIONS | ast.Lambda | ast.ClassDef):
        children = same_scope_children(node)
    elif isinstance(node, ast.AnnAssign):
        children = [node.target, *([node.value] if node.value else [])]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _reads(child, shadow)


def _stores(target: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _binds(node: ast.stmt) -> set[str]:
    """Names a simple statement binds when it completes."""
    if isinstance(node, ast.Assign):
        return set().union(*(_stores(t) for t in node.targets)) | _walrus(node.value)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        bound = _stores(node.target) if node.value is not None else set()
        return bound | (_walrus(node.value) if node.value is not None else set())
    if isinstance(node, ast.Import | ast.ImportFrom):
        return set(import_bindings(node))
    if isinstance(node, FUNCTIONS | ast.ClassDef):
        return {node.name}
    return _walrus(node)


def _walrus(node: ast.AST) -> set[str]:
    """Names bound by ``:=`` wherever evaluation certainly reaches (not after ``and``/``or``,
    not in a branch of ``x if c else y``, not in comprehensions or lambdas)."""
    if isinstance(node, ast.NamedExpr):
        return {node.target.id} | _walrus(node.value)
    if isinstance(node, COMPREHENSIONS | ast.Lambda | FUNCTIONS | ast.ClassDef):
        return set()
    if isinstance(node, ast.BoolOp):
        return _walrus(node.values[0])
    if isinstance(node, ast.IfExp):
        return _walrus(node.test)
    return set().union(
        *(_walrus(c) for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
    )


def _any_walrus(node: ast.AST) -> set[str]:
    return {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)}


def _deleted(body: Sequence[ast.AST]) -> set[str]:
    return {
        n.id
        for node in body
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)
    }


def _breaks(body: Sequence[ast.AST]) -> bool:
    """Whether a ``break`` in ``body`` leaves the loop that owns ``body``."""
    for node in body:
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, FUNCTIONS | ast.ClassDef):
            continue
        # A nested loop keeps the breaks of its body, not those of its else clause.
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            inner: list[ast.AST] = list(node.orelse)
        else:
            inner = [c for c in ast.iter_child_nodes(node) if isinstance(c, STATEMENTS)]
        if _breaks(inner):
            return True
    return False


def _meet(*states: _State) -> _State:
    """Names bound on every reachable path."""
    reachable = [s for s in states if s is not None]
    return frozenset.intersection(*reachable) if reachable else None


def _header(node: ast.stmt) -> list[ast.AST]:
    """The parts of a statement evaluated before any of its bodies."""
    if isinstance(node, ast.If | ast.While):
        return [node.test]
    if isinstance(node, ast.For | ast.AsyncFor):
        return [node.iter, node.target]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [
            part for item in node.items for part in (item.context_expr, item.optional_vars) if part
        ]
    if isinstance(node, ast.Try | ast.TryStar):
        return []
    if isinstance(node, ast.Match):
        return [node.subject]
    return [node]


class _Flow:
    """Definite-binding walk over one function body.

    Records every read, on lines in ``lines``, of a name in ``local`` that is not bound on
    every path reaching it. Sound by construction (a name counts as bound only when every
    path binds it), at the price of some conservatism: loop bodies bind nothing after the
    loop, and a ``with`` body is assumed not to have its exceptions suppressed.
    """

    def __init__(self, local: frozenset[str], lines: frozenset[int]) -> None:
        self.local = local
        self.lines = lines
        self.unbound: list[ast.Name] = []

    def suite(self, body: Sequence[ast.stmt], state: _State) -> _State:
        for node in body:
            if state is None:
                return None
            state = self.stmt(node, state)
        return state

    def check(self, parts: Sequence[ast.AST], state: frozenset[str]) -> None:
        same_statement = set().union(*(_any_walrus(p) for p in parts))
        for part in parts:
            for name in _reads(part):
                if (
                    name.lineno in self.lines
                    and name.id in self.local
                    and name.id not in state
                    and name.id not in same_statement
                ):
                    self.unbound.append(name)

    def stmt(self, node: ast.stmt, state: frozenset[str]) -> _State:
        self.check(_header(node), state)
        transfer = getattr(self, "_" + type(node).__name__, None)
        if transfer is not None:
            result: _State = transfer(node, state)
            return result
        if isinstance(node, ast.Return | ast.Raise | ast.Break | ast.Continue):
            return None
        if isinstance(node, ast.Delete):
            return state - _deleted([node])
        return state | _binds(node)

    def _If(self, node: ast.If, state: frozenset[str]) -> _State:
        entry = state | _walrus(node.test)
        return _meet(self.suite(node.body, entry), self.suite(node.orelse, entry))

    def _For(self, node: ast.For | ast.AsyncFor, state: frozenset[str]) -> _State:
        entry = state | _walrus(node.iter)
        entry -= _deleted(node.body)
        self.suite(node.body, entry | _stores(node.target))
        return self._loop_exit(node, entry)

    _AsyncFor = _For

    def _While(self, node: ast.While, state: frozenset[str]) -> _State:
        entry = (state | _walrus(node.test)) - _deleted(node.body)
        self.suite(node.body, entry)
        return self._loop_exit(node, entry)

    def _loop_exit(self, node: ast.For | ast.AsyncFor | ast.While, entry: frozenset[str]) -> _State:
        """After a loop: its ``else`` ran, unless a ``break`` may have skipped it."""
        after_else = self.suite(node.orelse, entry)
        return entry if _breaks(node.body) else after_else

    def _With(self, node: ast.With | ast.AsyncWith, state: frozenset[str]) -> _State:
        bound = set().union(*(_walrus(p) | _stores(p) for p in _header(node)))
        return self.suite(node.body, state | bound)

    _AsyncWith = _With

    def _Try(self, node: ast.Try | ast.TryStar, state: frozenset[str]) -> _State:
        completed = self.suite(node.orelse, self.suite(node.body, state))
        raised = state - _deleted(node.body)
        outcomes = [completed, *(self._handler(h, raised) for h in node.handlers)]
        if not node.finalbody:
            return _meet(*outcomes)
        everything = [*node.body, *node.handlers, *node.orelse]
        final = self.suite(node.finalbody, state - _deleted(everything))
        after = _meet(*outcomes)
        return None if after is None or final is None else after | final

    _TryStar = _Try

    def _handler(self, handler: ast.ExceptHandler, state: frozenset[str]) -> _State:
        if handler.type is not None:
            self.check([handler.type], state)
        name = {handler.name} if handler.name else set()
        out = self.suite(handler.body, state | name)
        return None if out is None else out - name

    def _Match(self, node: ast.Match, state: frozenset[str]) -> _State:
        entry = state | _walrus(node.subject)
        outcomes: list[_State] = []
        for case in node.cases:
            bound = entry | scope_bindings([case.pattern])
            if case.guard is not None:
                self.check([case.guard], bound)
                bound |= _walrus(case.guard)
            outcomes.append(self.suite(case.body, bound))
        last = node.cases[-1]
        irrefutable = isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
        if not irrefutable or last.guard is not None:
            outcomes.append(entry)
        return _meet(*outcomes)
