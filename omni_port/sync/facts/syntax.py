"""The syntax provider: the new upstream's code as text and as ``ast`` statements, and any
code a rule compares with it, each text parsed once."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from functools import cached_property

from omni_port.model import Block, Stmt, Tree
from omni_port.pyast.diff import similarity
from omni_port.pyast.fields import Fields
from omni_port.pyast.syntax import dedent_code, header_end, is_compound, simple_key, walk
from omni_port.sync.evidence import code, places


class Syntax:
    """Code of one copied member's new upstream module, read as syntax."""

    def __init__(self, tree: Tree, member: Stmt, fields: Fields = ()) -> None:
        self._tree = tree
        self._member = member
        #: The records the output defines, with their fields in order (``pyast.fields``):
        #: the positions a construction's arguments fill.
        self.fields = fields
        self._parsed: dict[str, list[ast.stmt] | None] = {}
        self._statements: dict[str, list[str] | None] = {}

    def source(self, stmts: Sequence[Stmt], header: bool = False) -> str:
        """The dedented upstream code of ``stmts`` (a compound header alone with ``header``)."""
        return code.source(self._tree, stmts, header)

    def parsed(self, text: str) -> list[ast.stmt] | None:
        """The statements of some code as ``ast`` reads them (None when it does not
        parse), kept per text."""
        if text not in self._parsed:
            self._parsed[text] = code.parsed(text)
        return self._parsed[text]

    def same_code(self, mine: str, theirs: str) -> bool:
        """Whether two pieces of code are the same statements, compared as syntax trees
        (an empty deletion is the same as nothing), each read once."""
        found = self._dumps(mine)
        return found is not None and found == self._dumps(theirs)

    def _dumps(self, text: str) -> list[str] | None:
        if text not in self._statements:
            nodes = self.parsed(text)
            self._statements[text] = [ast.dump(n) for n in nodes] if nodes is not None else None
        return self._statements[text]

    @cached_property
    def _module_simple(self) -> tuple[Stmt, ...]:
        """Every simple statement of the new upstream module, in any body."""
        return tuple(s for _, suite in walk(self._tree.body) for s in suite.stmts if not s.clauses)

    def held_in_module(self, text: str) -> bool:
        """Whether a simple statement of ``text`` (in a compound one's bodies too) stands
        anywhere in the new upstream module, edited no further than the anchor still calls
        it the same: what upstream took out of the member may live on elsewhere (moved
        into a helper the member calls). True when ``text`` does not parse."""
        nodes = self.parsed(text)
        if nodes is None:
            return True
        leaves = [
            (type(n).__name__, simple_key(n))
            for top in nodes
            for n in ast.walk(top)
            if isinstance(n, ast.stmt) and not is_compound(n)
        ]
        return any(
            stmt.kind == kind and similarity(key, stmt.key) >= places.FUZZY
            for kind, key in leaves
            for stmt in self._module_simple
        )

    def makes_calls(self, stmts: Sequence[Stmt]) -> bool:
        """Whether upstream's ``stmts`` call anything (True when they do not parse)."""
        if not stmts:
            return False
        nodes = self.parsed(self.source(stmts))
        return nodes is None or any(isinstance(n, ast.Call) for top in nodes for n in ast.walk(top))

    def echo(self, block: Block, new: Sequence[Stmt]) -> Stmt | None:
        """A new upstream statement among ``new`` that nearly repeats one of the block's."""
        mine = self.parsed(block.code)
        return code.echo(mine, new, lambda s: self.source([s])) if mine is not None else None

    @cached_property
    def bridges(self) -> dict[str, str]:
        """Methods of the member's class that only return an expression, by name."""
        return code.bridges(self._tree, self._member)

    @cached_property
    def signature(self) -> str:
        """The member's upstream signature, made parseable with a stand-in body."""
        end = header_end(self._member)
        return code.with_body(dedent_code(self._tree.text(self._member.start, end)))
