"""The catalog's ``Location:`` lines read as constraints on a block's place.

A Location line is prose ("Inside synchronize_input_prep context", "After model forward,
before dummy_compute_logits"). Where it names code of the method, it is a constraint: a
name or a string label inside ``inside``/``in ... section`` must be on the block's path;
after ``before`` (``after``) it must be in a statement of the block's body after (before)
the block. Words that name no code of the method say nothing, so prose never rules out a
place by accident.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from omni_port.model import Block, Stmt, Suite
from omni_port.pyast.syntax import walk
from omni_port.sync.evidence import history
from omni_port.sync.evidence.places import Slot

_CLAUSE = re.compile(
    r"""
    ^\s*(?P<word>inside|in|before|after)\s+   # how the clause places the block
    (?P<what>.+?)                             # what it names
    (?:\s+(?:context|block|section|branch(?:es)?|call|assignment))?\s*$
    """,
    re.VERBOSE | re.IGNORECASE,
)
#: A name as code writes it: backquoted, or with an underscore (``dummy_compute_logits``).
_CODE_NAME = re.compile(r"`([^`]+)`|\b(_*[A-Za-z]\w*_\w*)\b")


@dataclass(frozen=True, slots=True)
class Constraint:
    """What a ``Location:`` line says about a block's place."""

    #: The line as the catalog writes it.
    text: str
    #: Names or labels one of the headers on the block's path must hold.
    inside: tuple[str, ...] = ()
    #: Names or labels a statement of the block's body after it must hold.
    before: tuple[str, ...] = ()
    #: Names or labels a statement of the block's body before it must hold.
    after: tuple[str, ...] = ()


def parse(text: str) -> Constraint:
    """The constraints a Location line states (clauses it cannot read say nothing)."""
    inside: list[str] = []
    before: list[str] = []
    after: list[str] = []
    for clause in re.split(r",|;|\band\b(?=\s+(?:before|after|inside|in)\b)", text):
        found = _CLAUSE.match(clause)
        if found is None:
            continue
        terms = _terms(found.group("what"))
        word = found.group("word").lower()
        {"inside": inside, "in": inside, "before": before, "after": after}[word].extend(terms)
    return Constraint(text, tuple(inside), tuple(before), tuple(after))


def _terms(what: str) -> list[str]:
    """Code names in ``what``; without any, the words as a string label (``'post process'``)."""
    names = [m.group(1) or m.group(2) for m in _CODE_NAME.finditer(what)]
    if names:
        return names
    words = what.strip().lower()
    words = re.sub(r"^(?:the|a|an)\s+", "", words)
    return [f"'{words}'"] if re.fullmatch(r"[a-z][a-z ]*[a-z]", words) else []


def allows(constraint: Constraint, slot: Slot, method: Stmt) -> bool | None:
    """Whether the constraint allows ``slot``; None when it names no code of ``method``."""
    known = _method_text(method)
    verdicts: list[bool] = []
    for term in constraint.inside:
        if term in known:
            verdicts.append(any(term in header for header in slot.path))
    stmts = slot.suite.stmts
    later = stmts[slot.index + slot.span :]
    earlier = stmts[: slot.index]
    for term in constraint.before:
        if term in known:
            verdicts.append(_holds(later, term) and not any(term in h for h in slot.path))
    for term in constraint.after:
        if term in known:
            verdicts.append(_holds(earlier, term))
    return all(verdicts) if verdicts else None


def held(constraint: Constraint, block: Block, base: history.Version | None) -> bool:
    """Whether the block's old place satisfied the constraint: a Location line that the
    block's own release breaks is stale, and says nothing about the new one.

    With the old method (the ``base`` release's), the place is found in it and checked,
    and names the old method lacks (code that came later) are left to the new one. Without
    it, only the anchor's path and neighbours are checked.
    """
    found = history.place(base, block.anchor) if base is not None else None
    if found is not None and base is not None and base.member is not None:
        old = base.member
        slot = Slot(found.suite, _path_to(old, found.suite), found.start, 0)
        return allows(constraint, slot, old) is not False
    # Without it, a name the anchor shows on the wrong side is a contradiction; a name it
    # does not show may be code that came later.
    anchor = block.anchor
    near = (*anchor.before, *anchor.after)
    inside = not any(t in k for t in constraint.inside for k in near if t not in str(anchor.path))
    before = not any(_only(t, anchor.before, anchor.after) for t in constraint.before)
    after = not any(_only(t, anchor.after, anchor.before) for t in constraint.after)
    return inside and before and after


def _only(term: str, wrong: Sequence[str], right: Sequence[str]) -> bool:
    """Whether ``term`` is in a statement of ``wrong`` and in none of ``right``."""
    return any(term in k for k in wrong) and not any(term in k for k in right)


def _path_to(method: Stmt, suite: Suite) -> tuple[str, ...]:
    return next((path for path, s in walk(method.clauses[0]) if s is suite), ())


def _holds(stmts: Sequence[Stmt], term: str) -> bool:
    return any(term in stmt.key or _nested_holds(stmt, term) for stmt in stmts)


def _nested_holds(stmt: Stmt, term: str) -> bool:
    return any(_holds(clause.stmts, term) for clause in stmt.clauses)


def _method_text(method: Stmt) -> str:
    return "\n".join(s.key for _, suite in walk(method.clauses[0]) for s in suite.stmts)
