"""A rule declares the providers of facts it reads (``PlacementRule.reads``, as LibCST's
``METADATA_DEPENDENCIES``), and reads no other: what a rule's answer rests on is in one
line of its module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from omni_port.model import Block
from omni_port.pyast.syntax import find_member
from omni_port.sync import rules
from omni_port.sync.evidence.places import Index, Scored, clear_place
from omni_port.sync.facts import PROVIDERS, Places
from omni_port.sync.facts import places as facts_places
from omni_port.sync.rules import RULES
from tests.golden import DATA
from tests.sync_cases import inputs

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


def test_a_counterpart_place_is_worked_out_once_per_block_and_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Places.counterpart`` keeps its answer: asked again for the same block and floor, it
    does not rank the member again (it did, every call: ``setdefault`` computes its default
    before it looks)."""
    folder = DATA / "rules" / "counterpart" / "yes_the_other_place_breaks_a_tie"
    patches, upstream, _ = inputs(folder)
    (block,) = [b for m in patches.modules for b in m.pieces if isinstance(b, Block)]
    assert block.counterpart is not None
    member = find_member(upstream.tree, "NPUModelRunner", block.member)
    assert member is not None
    asked: list[float] = []

    def counting(index: Index, ghost: Block, floor: float) -> Scored | None:
        asked.append(floor)
        return clear_place(index, ghost, floor)

    monkeypatch.setattr(facts_places, "clear_place", counting)
    places = Places(member)
    first = places.counterpart(block, 0.5)
    assert first is not None
    assert [places.counterpart(block, 0.5) for _ in range(3)] == [first] * 3
    places.counterpart(block, 0.9)
    places.counterpart(block, 0.9)
    assert asked == [0.5, 0.9], "each block and floor ranked once"
