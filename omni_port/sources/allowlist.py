"""Reviewed allow-lists: one entry a line, two spaces (or a tab) before its reason.

The one reader of every list a maintainer reviews (``parity-allow``, ``v2-allow``,
``marker-allow``): each says what an entry names; this module says where its reason
starts. A line that starts with ``#`` is a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from omni_port.errors import BadInput
from omni_port.model import Code

#: What separates an entry from its reason: a tab, or two spaces or more (an entry may hold
#: single spaces, as a statement prefix does).
_REASON = re.compile(r"\t+|\s{2,}")


@dataclass(frozen=True, slots=True)
class AllowLine:
    """One entry of an allow-list, before its list reads what it names."""

    #: What the entry names, as written (everything before the reason).
    key: str
    #: Why a reviewer accepted it.
    reason: str
    #: The list's file, for diagnostics about the entry.
    path: str
    #: 1-based line of the entry in that file.
    line: int

    def bad(self, form: str) -> BadInput:
        """OP005 at this entry: it is not of ``form`` (what the list's entries look like)."""
        message = f"expected '{form}  reason' (two spaces or a tab before the reason)"
        return BadInput.at(Code.OP005, self.path, self.line, message)


def allow_lines(text: str, path: str, form: str) -> tuple[AllowLine, ...]:
    """The entries of an allow-list file (``path`` names it in diagnostics).

    Raises BadInput (OP005, at its line, saying ``form``) for an entry with no reason: an
    accepted exception that does not say why is no reviewed one.
    """
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, *reason = _REASON.split(stripped, maxsplit=1)
        entry = AllowLine(key, reason[0].strip() if reason else "", path, number)
        if not entry.reason:
            raise entry.bad(form)
        found.append(entry)
    return tuple(found)
