"""The catalog's ``Location:`` lines as constraints on where a block goes."""

from __future__ import annotations

from dataclasses import dataclass

from omni_port.sync.rules.anchor import Scored


@dataclass(frozen=True, slots=True)
class Constraint:
    """What a ``Location:`` line says about a block's place."""

    #: The line as the catalog writes it.
    text: str


def ranked(constraint: Constraint | None, top: tuple[Scored, ...]) -> tuple[Scored, ...]:
    """The candidates the constraint allows, best first (all of them without one)."""
    return top
