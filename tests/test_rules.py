"""The evidence rules of the placement engine on their golden cases:
tests/data/rules/<rule>/<case>/, in the one format of the golden sync cases
(tests/sync_cases.py), whose expected outputs tests/test_splice.py checks.

Every case is a whole upgrade in the folder named after the rule's ``decided_by`` value
(``upstream-history``, ``merge3``, ...). A case named ``yes_*`` is one the rule decides (the
engine stamps its name into the ``decided_by`` of some block; also a conflict it made, by
a check of a place or, for a member or module rule, a revision of a decided block, which
the engine names it in and no report shows), both with every rule and with the
rule alone (the engine's own steps, the rules its ``with`` flag names, and no other: a case
must not pass on another rule's answer); ``no_*`` is one it must leave alone (no block is
decided by it, with every rule or alone). Every rule has both, and so do the engine's own
steps that stamp a name no rule has (``stepwise``: its cases run alone with no rule at all).
A ``failing_*`` case
records a known gap: ``expected.*`` hold today's output and ``ideal.py``/``ideal.txt``
the right one, which the test requires to differ (when a change makes them equal, the case
becomes a ``yes_``/``no_`` one). The three-way statement merge below the engine has its own
cases (tests/test_merge3.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from omni_port.api.inputs import with_members
from omni_port.model import Rule
from omni_port.sources.textio import decode
from omni_port.sync import decisions
from omni_port.sync.facts import declared
from omni_port.sync.pipeline import SyncResult
from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import RULES as ENGINE
from tests.golden import DATA
from tests.sync_cases import fates, flag, inputs, rule_cases, rule_folders, run

RULES = DATA / "rules"
#: The names the engine's own steps stamp that no rule has (run with no rule at all).
STEPS = {Rule.STEPWISE.value}


def _engine_cases() -> list[str]:
    return [f"{rule}/{case}" for rule in rule_folders() for case in rule_cases(rule)]


def _text(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def _decided_by(
    folder: Path, rule: Rule, result: SyncResult, rules: Sequence[PlacementRule]
) -> list[str]:
    """The blocks ``rule`` decided in the case's sync ``result`` with ``rules``: those whose
    ``decided_by`` names it, and the conflicts it made, by a check or a member rule's
    revision (the engine names the rule in the rules of such a conflict; no report shows
    a conflict's)."""
    decided = [p.block_id for p in result.placements if rule in p.decided_by]
    patches, upstream, locations = inputs(folder)
    upstream = with_members(upstream, patches)
    owned = declared(patches)
    made = [
        d.block.id
        for module in patches.modules
        for copied in decisions.decide(module, upstream, locations, rules, owned).copies.values()
        for d in copied.decisions
        if d.conflict and rule in d.rules
    ]
    return decided + made


@pytest.mark.parametrize("case", _engine_cases())
def test_rule_case(case: str) -> None:
    """The case's rule decides a ``yes_`` case, with every rule and alone, and no ``no_``
    case; a ``failing_`` case's output is not its ideal one yet."""
    folder = RULES / case
    _, result = run(folder)
    directory, name = case.split("/")
    rule = Rule(directory)
    decided = _decided_by(folder, rule, result, ENGINE)
    needed = {rule, *(Rule(n) for n in flag(folder, "with").split())}
    rules = [r for r in ENGINE if r.name in needed]
    by_itself = _decided_by(folder, rule, run(folder, rules)[1], rules)
    if name.startswith("failing_"):
        # A known gap: expected.* hold today's output, ideal.* the right one.
        text = decode(result.files["omni.py"], "omni.py").text
        assert (_text(folder, "ideal.py"), _text(folder, "ideal.txt")) != (
            text,
            fates(result),
        ), f"{case} gives the ideal output now: make it a yes_ or no_ case"
    elif name.startswith("yes_"):
        assert decided, f"no block decided by {rule.value}"
        assert by_itself, f"no block decided by {rule.value} alone"
    else:
        assert name.startswith("no_") and not decided, f"decided by {rule.value}: {decided}"
        assert not by_itself, f"decided by {rule.value} alone: {by_itself}"


def test_every_rule_has_its_folder_of_cases() -> None:
    """One folder per placement rule (and per name only an engine step stamps), named after
    its ``decided_by`` value, and no other."""
    names = {r.name.value for r in ENGINE} | STEPS
    assert {p.name for p in RULES.iterdir() if p.is_dir()} == names


@pytest.mark.parametrize("rule", rule_folders())
def test_rule_cases_show_both_sides(rule: str) -> None:
    """Every rule has a case it decides and a case it must leave alone; a known gap is a
    ``failing_*`` case (today's output and the ideal one)."""
    names = rule_cases(rule)
    assert any(n.startswith("yes_") for n in names), rule
    assert any(n.startswith("no_") for n in names), rule
    assert all(n.startswith(("yes_", "no_", "failing_")) for n in names), rule


@pytest.mark.parametrize("case", _engine_cases())
def test_every_note_of_a_case_is_a_line_of_the_output(case: str) -> None:
    """A note about a block names a line of the generated module an editor can open, also
    for an edit that follows upstream's deletion and so has no lines of its own (it named
    the upstream module's line, which a summary then printed as the output's)."""
    _, result = run(RULES / case)
    lines = decode(result.files["omni.py"], "omni.py").text.count("\n")
    for finding in result.findings:
        assert finding.path == "omni.py", f"{finding.code.value} names {finding.path}"
        assert 1 <= finding.line <= lines, f"{finding.code.value} at line {finding.line}"
