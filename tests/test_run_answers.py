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


def test_code_is_counted_once_a_run_for_every_members_facts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each member's facts, and each trial of a conflict's candidates, count the call
    statements of the same upstream and runner code (4,700 counts of 230 codes in a GPU
    upgrade); each caller may change its count (``runner_calls`` subtracts and adds)."""
    from omni_port.sync.facts import calls
    from omni_port.sync.facts.syntax import Syntax

    tree = parse(RUNNER, "r.py")
    members = tree.body.stmts[0].clauses[0].stmts
    facts = [calls.Calls(m, Syntax(tree, m), None) for m in members]  # type: ignore[arg-type]
    body = "y = self.size()\nself.step(y)\nself.step(y)\n"
    alone = facts[0].counted(body)
    assert list(alone.values()) == [2], "self.step(y), twice"
    counted: list[int] = []
    real = calls.call_counts

    def counting(*args: object, **kwargs: object) -> object:
        counted.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(calls, "call_counts", counting)
    with memo.run():
        first = facts[0].counted(body)
        first.clear()
        again = [f.counted(body) for f in facts]
    assert again == [alone] * len(facts)
    assert len(counted) == 1, "the code once, not once per member"
