"""Answers a command keeps for its run (``pyast.memo``): asked again, a pure question is
not worked out again, and the answer is the one worked out without the run (issue 46)."""

from __future__ import annotations

import pytest

from omni_port.pyast import memo
from omni_port.pyast.parser import parse
from omni_port.sync.evidence import code

RUNNER = """\
class R:
    def size(self):
        return self.n * 2

    def name(self):
        return "r"

    def step(self, x):
        return x + self.size()

    def run(self):
        y = self.size()
        return self.step(y)
"""


def test_the_bridges_of_a_class_are_parsed_once_for_all_its_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every member's facts ask which methods of its class only return an expression:
    a GPU upgrade asked 1,100 times of 110 methods, and parsed each method every time."""
    tree = parse(RUNNER, "r.py")
    members = tree.body.stmts[0].clauses[0].stmts
    alone = [code.bridges(tree, member) for member in members]
    assert alone[0] == {"size": "self.n * 2", "name": "'r'"}
    dedented: list[str] = []
    real = code.dedent_code

    def counted(text: str) -> str:
        dedented.append(text)
        return real(text)

    monkeypatch.setattr(code, "dedent_code", counted)
    with memo.run():
        kept = [code.bridges(tree, member) for member in members]
    assert kept == alone
    assert len(dedented) == len(members), "each method once, not once per member"
