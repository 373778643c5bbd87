"""A rule declares the providers of facts it reads (``PlacementRule.reads``, as LibCST's
``METADATA_DEPENDENCIES``), and reads no other: what a rule's answer rests on is in one
line of its module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from omni_port.sync import rules
from omni_port.sync.facts import PROVIDERS
from omni_port.sync.rules import RULES

#: A provider by the name a rule reads it by (``ctx.history``, ``facts.flows``).
NAMES = {provider.__name__.lower(): provider for provider in PROVIDERS}

RULE_DIR = Path(rules.__file__).parent
EVIDENCE_DIR = RULE_DIR.parent / "evidence"


def read_by(source: str) -> set[str]:
    """The providers some rule code reads: an attribute by a provider's name, or the
    provider's class named (a helper that takes one), outside the ``reads`` declaration."""
    found: set[str] = set()
    todo: list[ast.AST] = [ast.parse(source)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign | ast.AnnAssign) and _declares(node):
            continue
        if isinstance(node, ast.Attribute) and node.attr in NAMES:
            found.add(node.attr)
        if isinstance(node, ast.Name) and node.id in {p.__name__ for p in PROVIDERS}:
            found.add(node.id.lower())
        todo.extend(ast.iter_child_nodes(node))
    return found


def _declares(node: ast.Assign | ast.AnnAssign) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(t, ast.Name) and t.id == "reads" for t in targets)


def undeclared(source: str, declared: tuple[type, ...]) -> set[str]:
    """The providers ``source`` reads that ``declared`` does not name."""
    return read_by(source) - {provider.__name__.lower() for provider in declared}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name.value)
def test_a_rule_reads_only_the_providers_it_declares(rule: object) -> None:
    module = importlib.import_module(type(rule).__module__)
    source = Path(str(module.__file__)).read_text(encoding="utf-8")
    declared = rule.reads  # type: ignore[attr-defined]
    assert not undeclared(source, declared), f"{type(rule).__module__} reads more than it says"
    # And declares none it does not read: the declaration says what the answer rests on.
    assert {p.__name__.lower() for p in declared} <= read_by(source)
    assert all(p in PROVIDERS for p in declared)


def test_a_rule_reading_an_undeclared_provider_is_caught() -> None:
    source = (
        "class Late(Silent):\n"
        "    reads = (Flows,)\n"
        "    def decide(self, ctx):\n"
        "        return ctx.flows.flow(ctx.block) and ctx.history.named('v1')\n"
        "def _helper(found: Calls) -> None: ...\n"
    )
    from omni_port.sync.facts import Flows

    assert undeclared(source, (Flows,)) == {"history", "calls"}


@pytest.mark.parametrize("path", sorted(EVIDENCE_DIR.glob("*.py")), ids=lambda p: p.stem)
def test_evidence_takes_providers_not_the_whole_facts(path: Path) -> None:
    """A rule passes evidence the providers it reads; evidence given the whole facts (or a
    context) would read past the rule's declaration unseen."""
    source = path.read_text(encoding="utf-8")
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert not names & {"MemberFacts", "Context"}
