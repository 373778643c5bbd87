"""Coupled code is placed together or conflicts together (docs/design.md: coupled edits).

A placed block is a conflict when what it holds with is not in the output: it reads a name
only a marked block binds (``built_on``) and that block is a conflict; it relies on another
block (``relies_on``: that block's code, or what it replaces, is what makes this one run)
and that one is a conflict; or it reads a local the base's method bound, which upstream
took out of the method and no placed block binds (nor the carried-binding rule carries):
placed, it would read a name nothing binds. The other way round too: a placed block takes
out upstream statements that bind a local which upstream code the output keeps still
reads, and nothing else binds it (``readers.unbound``): the reader stays because a block
that replaced it is a conflict (the two are one conflict), or because upstream added it.
A maintainer's recorded place stands (verify's OP303 is the net there).
"""

from __future__ import annotations

from collections.abc import Sequence

from omni_port.model import Rule
from omni_port.sync.context import Decision, conflict_at
from omni_port.sync.evidence.bindings import lost_binding
from omni_port.sync.evidence.code import short
from omni_port.sync.evidence.readers import Reading, Unbound, unbound
from omni_port.sync.facts import Flows, History, MemberFacts, Places, Records, Syntax
from omni_port.sync.rule import Silent


class Coupled(Silent):
    name = Rule.COUPLED
    reads = (Syntax, Places, Flows, History, Records)

    def revise(self, facts: MemberFacts, decisions: Sequence[Decision]) -> list[Decision] | None:
        """Each placed block judged against the member as it stands (a block that ends a
        conflict here counts as gone for the others once revised)."""
        result = list(decisions)
        placed = frozenset(d.block.id for d in decisions if not d.conflict)
        reading = Reading(facts.syntax, facts.places, facts.flows)
        unbinding = unbound(reading, decisions, facts.places.parameters, facts.history.base_keys)
        for position, decision in enumerate(decisions):
            if decision.conflict or decision.follow or decision.slot is None:
                continue
            reason = _unheld(facts, decision, decisions, placed)
            found = unbinding.get(decision.block.id)
            # A maintainer's recorded place stands: verify reports what it unbinds.
            if not reason and found is not None and decision.block.anchor.resolution is None:
                reason = _unbinds(found, _changes(facts, decisions, found.kept_by))
            if reason:
                result[position] = conflict_at(decision, reason)
        return result


def _unheld(
    facts: MemberFacts, decision: Decision, decisions: Sequence[Decision], placed: frozenset[str]
) -> str:
    """Why ``decision`` does not hold with the member's other ``decisions`` ("" when it
    does); ``placed``: the ids of their blocks that are no conflict."""
    for name, marked in facts.records.built_on(decision.block):
        if marked not in placed:
            return f"it reads `{name}`, which only omni's marked {marked} binds, a conflict"
    for other in decision.relies_on:
        if other not in placed:
            return f"it holds only with {other} placed, a conflict"
    lost = lost_binding(facts.flows, facts.history, decision, decisions)
    return f"{lost}: nothing binds it there" if lost else ""


def _changes(facts: MemberFacts, decisions: Sequence[Decision], ids: Sequence[str]) -> list[str]:
    """The upstream changes (named) that made the blocks ``ids`` conflicts: what each
    replaced changed in (docs/design.md rule 6: the coupled conflict is about them)."""
    blocks = {d.block.id: d.block for d in decisions}
    found = (facts.history.changed_by(blocks[i]) for i in ids if i in blocks)
    return list(dict.fromkeys(by for by in found if by))


def _unbinds(found: Unbound, changes: Sequence[str]) -> str:
    """The reason of a block that takes out a binding upstream's kept code reads
    (``changes``: the upstream changes that made the blocks keeping the reader conflicts)."""
    said = (
        f"it takes out upstream's binding of `{found.name}`, which upstream's "
        f"`{short(found.reader.key, 60)}` (line {found.reader.start}) still reads"
    )
    if found.kept_by:
        made = f" (what it replaced changed in {', '.join(changes)})" if changes else ""
        kept = ", ".join(found.kept_by)
        return f"{said}: {kept}, which replaces that statement, is a conflict{made}"
    return f"{said}: nothing else binds it there"


RULE = Coupled()
