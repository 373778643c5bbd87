"""Conflicts left in generated modules: a block sync could not place, commented out in place,
or (V2) a method both runner families override that no rule composes, under its region.

A runner with such a region runs without that block, so every gate (``verify``, ``check``,
the runtime switch) refuses it until the conflict is resolved. The regions are read from
the text itself, so a lock file that says otherwise cannot hide one.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from omni_port.model import (
    CONFLICT_CANDIDATE,
    CONFLICT_CLOSE,
    CONFLICT_LINE,
    CONFLICT_OPEN,
    CONFLICT_VANISHED,
    Code,
    Finding,
)

#: What a V2 composition conflict's region says after its id (``v2.compose``).
NOT_COMPOSED = "(V2: not composed)"
#: What resolves a conflict whose region lists no candidate place (BLOCK: its id).
UNLISTED_ROUTES = (
    "write the code where it belongs in its region and run `omni-port continue`, or record "
    "`omni-port resolve BLOCK --at LINE` (the upstream line it goes before) or "
    "`--drop --why REASON` when the edit is obsolete"
)
#: What resolves a conflict of a copy whose upstream method vanished: neither `resolve`
#: nor `continue` places code in a method the new upstream does not have.
VANISHED_ROUTE = (
    "change the override in the runners it was extracted from, then extract and sync again"
)


@dataclass(frozen=True, slots=True)
class Region:
    """A conflict region of a generated module, as its text shows it."""

    #: The block it holds; for a copy whose upstream method vanished, the copy.
    piece: str
    #: What its opening line says after ``CONFLICT_OPEN``.
    what: str
    #: Its opening line, 1-based.
    line: int
    #: The column its opening marker starts at, 1-based.
    col: int
    #: How many candidate places it lists.
    candidates: int


def regions(text: str) -> Iterator[Region]:
    """Every conflict region of a module's text, in order."""
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if not stripped.startswith(CONFLICT_OPEN):
            continue
        what = stripped[len(CONFLICT_OPEN) :].strip()
        piece = what.split(" ", 1)[0].rstrip(":")
        listed = 0
        for inside in lines[number:]:
            if inside.lstrip().startswith((CONFLICT_CLOSE, CONFLICT_OPEN)):
                break
            listed += inside.lstrip().startswith(CONFLICT_CANDIDATE)
        yield Region(piece, what, number, len(line) - len(stripped) + 1, listed)


def commented_code(text: str) -> Iterator[tuple[Region, int, str]]:
    """Each line of code a conflict region of ``text`` holds commented out: (its region,
    its line, the code without the comment prefix)."""
    lines = text.split("\n")
    for region in regions(text):
        for number in range(region.line + 1, len(lines) + 1):
            stripped = lines[number - 1].lstrip()
            if stripped.startswith((CONFLICT_CLOSE, CONFLICT_OPEN)):
                break
            if stripped.startswith(CONFLICT_LINE):
                yield region, number, stripped[len(CONFLICT_LINE) :]


def uncommented(text: str, region: Region) -> str:
    """``text`` with the commented-out code of ``region`` restored where it stands, every
    line where it was (the region's other comment lines stay comments)."""
    lines = text.split("\n")
    for held, number, code in commented_code(text):
        if held == region:
            lines[number - 1] = " " * (region.col - 1) + code
    return "\n".join(lines)


class Route(enum.Enum):
    """How a conflict is resolved, as its region shows."""

    RANKED = "ranked"
    """`resolve BLOCK --at '#K'`: its region lists candidate places."""
    UNLISTED = "unlisted"
    """Its region lists no candidate: `continue` after an edit in place, `resolve --at LINE`
    or `resolve --drop`."""
    VANISHED = "vanished"
    """Its copy's upstream method is gone: nothing in the new upstream takes it; the override
    changes in the runners it was extracted from."""


def routes(modules: Mapping[str, str], blocks: Iterable[str]) -> dict[str, Route]:
    """The route of each conflicting block (its id) by the regions of ``modules`` (name ->
    text): a block without a region of its own, in no vanished copy, is UNLISTED."""
    found = {region.piece: region for text in modules.values() for region in regions(text)}
    gone = tuple(f"{piece}." for piece, r in found.items() if r.what.endswith(CONFLICT_VANISHED))
    chosen = {}
    for block in blocks:
        region = found.get(block)
        if region is not None and region.candidates:
            chosen[block] = Route.RANKED
        else:
            chosen[block] = Route.VANISHED if block.startswith(gone) else Route.UNLISTED
    return chosen


def conflict_findings(modules: Mapping[str, str]) -> list[Finding]:
    """One OP310 per conflict region, at its opening line, for every module (name -> text)."""
    return [
        Finding(Code.OP310, name, region.line, _message(region), col=region.col)
        for name in sorted(modules)
        for region in regions(modules[name])
    ]


def _message(region: Region) -> str:
    piece = region.piece
    if NOT_COMPOSED in region.what:
        return (
            f"unresolved conflict: {piece} is omni's method alone, its NPU override never "
            "runs, so this runner is not deployable; compose the two by hand, or list the "
            "method in the --v2-allow file when dropping the NPU override is intended"
        )
    if region.what.endswith(CONFLICT_VANISHED):
        return (
            f"unresolved conflict: {region.what.split(': ', 1)[-1]}, so the copy {piece} and its "
            "blocks are commented out here and this runner is not deployable; no place in the "
            f"new upstream takes them: {VANISHED_ROUTE}"
        )
    return (
        f"unresolved conflict: {piece} is commented out here, so this runner is not "
        f"deployable; {resolve_hint(piece, region.candidates)}"
    )


def resolve_hint(block: str, candidates: int) -> str:
    """How a conflict of ``block`` is resolved: by a candidate's rank when its region lists
    some (``candidates``), else by the routes that need none."""
    if candidates:
        return f"`omni-port resolve {block} --at '#K'` records one of the candidates listed below"
    return "it lists no candidate place: " + UNLISTED_ROUTES.replace("BLOCK", block)
