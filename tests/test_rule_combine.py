"""How the engine combines the rules' answers to one question (``sync.rule.Combine``):
declared once per hook, where the hook is, and done by one function per way."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from omni_port.model import Rule
from omni_port.sync.context import Dispute
from omni_port.sync.rule import COMBINED, Combine, PlacementRule, Silent, first


def _hooks() -> set[str]:
    return {
        name
        for name, value in inspect.getmembers(PlacementRule, inspect.isfunction)
        if not name.startswith("_")
    }


def test_every_hook_declares_how_its_answers_combine() -> None:
    assert set(COMBINED) == _hooks()
    assert _hooks() == {n for n, _ in inspect.getmembers(Silent, inspect.isfunction)}


def test_the_member_rules_are_asked_until_none_changes_a_decision() -> None:
    assert COMBINED["revise"] is Combine.EACH_UNTIL_STILL
    assert COMBINED["settle"] is Combine.EACH
    assert COMBINED["reconcile"] is Combine.FIRST_PLACED
    # The module rules too, with the decisions of every copied member of the module.
    assert COMBINED["revise_module"] is Combine.EACH_UNTIL_STILL


@dataclass(frozen=True)
class _Says:
    """A stand-in rule whose check answers ``answer``."""

    name: Rule
    answer: object


def test_a_check_stops_at_the_first_dispute() -> None:
    """A dispute is a check's answer: no later rule is asked (the counterpart rule, the only
    one that disputes, is the last rule with a check)."""
    assert COMBINED["check"] is Combine.FIRST
    dispute = Dispute.__new__(Dispute)
    asked: list[Rule] = []
    rules = [_Says(Rule.DATAFLOW, None), _Says(Rule.COUNTERPART, dispute), _Says(Rule.LAYOUT, 1)]

    def ask(rule: _Says) -> object:
        asked.append(rule.name)
        return rule.answer

    assert first(rules, ask) == (Rule.COUNTERPART, dispute)  # type: ignore[arg-type]
    assert asked == [Rule.DATAFLOW, Rule.COUNTERPART]
