"""A fact of one block, worked out once per block object and kept for the sync."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from omni_port.model import Block

_T = TypeVar("_T")


class PerBlock(Generic[_T]):
    """The values of one fact, by block object: a block equal to another is still asked
    anew (a golden case may hold two alike), one seen before is not."""

    def __init__(self, make: Callable[[Block], _T]) -> None:
        self._make = make
        self._kept: dict[int, tuple[Block, _T]] = {}

    def __call__(self, block: Block) -> _T:
        kept = self._kept.get(id(block))
        if kept is not None and kept[0] is block:
            return kept[1]
        found = self._make(block)
        self._kept[id(block)] = (block, found)
        return found
