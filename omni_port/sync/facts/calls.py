"""The calls provider: the call statements of code, counted, in the new upstream's member
and in the old runner's (a moved call left at both places runs twice)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from functools import cached_property

from omni_port.model import Block, BlockKind, Stmt
from omni_port.pyast import memo
from omni_port.pyast.packages import call_counts, simple_statements
from omni_port.sync.evidence import code
from omni_port.sync.facts.history import History
from omni_port.sync.facts.syntax import Syntax


class Calls:
    """The call statements of one copied member, now and in the old runner."""

    def __init__(self, member: Stmt, syntax: Syntax, history: History) -> None:
        self._member = member
        self._syntax = syntax
        self._history = history

    def counted(self, text: str, every: bool = False) -> Counter[str]:
        """The call statements of some code (with ``every``: its simple statements),
        counted (none when it does not parse)."""
        return Counter(_counted(text, every))

    def counted_at(self, stmts: Sequence[Stmt], every: bool = False) -> Counter[str]:
        """The call statements (``every``: simple statements) of the new upstream's ``stmts``."""
        return self.counted(self._syntax.source(stmts), every)

    def call_code(self, text: str, key: str) -> str:
        """The statement of some code that ``counted`` counts under ``key``, as code."""
        nodes = self._syntax.parsed(text) or []
        found = next((s for s in simple_statements(nodes) if ast.dump(s) == key), None)
        return ast.unparse(found) if found is not None else "a call"

    @cached_property
    def upstream_calls(self) -> Counter[str]:
        """The call statements of the member's body in the new upstream."""
        return self.counted_at(self._member.clauses[0].stmts)

    @cached_property
    def upstream_statements(self) -> Counter[str]:
        """The simple statements of the member's body in the new upstream."""
        return self.counted_at(self._member.clauses[0].stmts, every=True)

    def calls_changed_by(self, key: str) -> str:
        """The first release or commit after the base whose member runs the call ``key`` a
        different number of times than the base's, as notes name it ("" when none, or
        without history)."""
        past = self._history.past
        if past is None:
            return ""
        counts = [
            self.counted(code.source(v.tree, v.member.clauses[0].stmts))[key]
            if v.member is not None
            else 0
            for v in past.versions[past.base : past.target + 1]
        ]
        changed = next((i for i, n in enumerate(counts) if n != counts[0]), None)
        return self._history.named(past.versions[past.base + changed].label) if changed else ""

    def runner_calls(self, blocks: Sequence[Block], every: bool = False) -> Counter[str] | None:
        """The call statements (``every``: simple statements) of the old runner's member:
        the base's, less what ``blocks`` replaced, plus the blocks' own. None without the
        base, or when the base code of what a block replaced is unknown."""
        base = self._history.base
        if base is None or base.member is None:
            return None
        counts = self.counted(code.source(base.tree, base.member.clauses[0].stmts), every)
        for block in blocks:
            if block.kind is BlockKind.HEADER:
                continue  # a compound header holds no call statement, and keeps its body
            if block.anchor.replaced:
                replaced = self._history.replaced_text(block)
                if replaced is None:
                    return None
                counts -= self.counted(replaced, every)
            counts += self.counted(block.code, every)
        return counts


@memo.memoized
def _counted(text: str, every: bool) -> Counter[str]:
    """``Calls.counted``, kept for the run (each caller gets a copy): every member's facts,
    and every trial of a conflict's candidates, count the same upstream and runner code
    again (4,700 counts of 230 codes in a GPU upgrade)."""
    nodes = code.parsed(text)
    return call_counts(nodes, every) if nodes is not None else Counter()
