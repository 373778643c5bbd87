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


def test_a_module_is_compiled_once_a_run_and_each_caller_gets_its_own_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sync compiles each output as its imports settle and once written, and verify and
    a conflict's trials compile the same texts again (34 compiles of 20 texts in a GPU
    upgrade)."""
    from omni_port.pyast import parser

    broken = "def f(:\n    pass\n"
    alone = [parser.compile_findings("m.py", text) for text in (RUNNER, broken)]
    assert alone[0] == [] and alone[1][0].code.value == "OP501"
    compiled: list[str] = []

    def counted(text: str, *args: object, **kwargs: object) -> object:
        compiled.append(text)
        return compile(text, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(parser, "compile", counted, raising=False)
    with memo.run():
        first = parser.compile_findings("m.py", broken)
        first.clear()
        again = [parser.compile_findings("m.py", text) for text in (RUNNER, broken, RUNNER)]
    assert again == [alone[0], alone[1], alone[0]]
    assert compiled == [broken, RUNNER], "each text once"
