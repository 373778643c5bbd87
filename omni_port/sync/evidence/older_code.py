"""An unmarked edit that holds an older upstream revision's code beside omni's own lines.

A hand port copies a method from one revision and edits it. Where an unmarked edit
replaced statements the base has, and its statements hold, as one run, the code an older
revision had at that place (which a later one changed into the base's), that run is no
edit of omni's: it is upstream's older code, a lag (docs/design.md rules 1 and 4). Only the
rest of the edit is omni's. Restated against the base, the edit is the base's code there
with omni's own statements around it as omni wrote them; the statement merge carries that
onto the new upstream like any edit written against the base.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from omni_port.errors import BadInput
from omni_port.model import Block, BlockKind, Stmt
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import dedent_code, split_full_key
from omni_port.sync.evidence import history
from omni_port.sync.evidence.code import short
from omni_port.sync.evidence.history import MemberHistory, Version


@dataclass(frozen=True, slots=True)
class OlderCode:
    """An unmarked edit whose statements hold an older revision's code at its place."""

    #: The newest revision before the base whose code at the edit's place the edit holds.
    had: str
    #: The revision after it that first changed that code: the change the runners lack.
    changed_by: str
    #: Keys of the older code the edit holds, and of the statements omni added around it.
    older: tuple[str, ...]
    own: tuple[str, ...]
    #: The edit restated against the base: the base's code in place of the older code.
    code: str
    #: What ``changed_by`` made of the older code, for a note after "changed"
    #: (``history.what_changed``; "" when its code there is not at hand).
    into: str = ""

    def note(self, replaced: Sequence[str], named: Callable[[str], str]) -> str:
        """The lag, for a note: the older code, the revision that had it, what the one after
        it changed (into ``replaced`` when not known better; each revision as ``named``
        names it: rule 6), and omni's own."""
        into = self.into or f"into `{_quoted(replaced)}`"
        return (
            f"`{_quoted(self.older)}` is the code of {named(self.had)}, which "
            f"{named(self.changed_by)} changed {into}, and "
            f"`{_quoted(self.own)}` beside it is omni's"
        )


def older_code(block: Block, past: MemberHistory) -> OlderCode | None:
    """The older revision's code an unmarked replacement holds beside omni's own statements
    (None when it holds none, holds all of it only, or the place is not the base's).

    Of the revisions before the base, the newest whose code at the edit's place is a run of
    the edit's statements, neither empty nor the base's, with something of omni's beside it
    that is none of the base's statements there: omni cannot have meant to keep code it
    never saw replaced (rule 4)."""
    replaced = block.anchor.replaced
    if block.marked or block.kind is not BlockKind.REPLACEMENT or not replaced:
        return None
    base_code = history.base_text(block, past)
    mine = history.code_keys(block.code) if base_code is not None else None
    if base_code is None or not mine:
        return None
    for at in range(past.base - 1, -1, -1):
        older = _keys_at(past.versions[at], block)
        start = _run_in(mine, older) if older and older != replaced else None
        if not older or start is None:
            continue
        own = mine[:start] + mine[start + len(older) :]
        stmts = _statements(block.code)  # the statement tree only for an edit that qualifies
        if not own or set(own) & set(replaced) or stmts is None or len(stmts) != len(mine):
            return None
        run = stmts[start : start + len(older)]
        changed = _changed_after(past, at, block, older)
        code = _restated(block, run, base_code)
        into = history.changed_at(past, changed, block.anchor, run)
        return OlderCode(past.versions[at].label, changed, older, own, code, into)
    return None


def _quoted(keys: Sequence[str]) -> str:
    """Statements for a note, shortened: the code a reader looks for."""
    return short("; ".join(split_full_key(k)[0] for k in keys), 80)


def _statements(code: str) -> tuple[Stmt, ...] | None:
    try:
        return parse(dedent_code(code), "<block>").body.stmts
    except BadInput:
        return None


def _keys_at(version: Version, block: Block) -> tuple[str, ...] | None:
    found = history.place(version, block.anchor, fuzzy=True)
    return found.keys() if found is not None else None


def _run_in(keys: tuple[str, ...], run: tuple[str, ...]) -> int | None:
    """Where ``run`` stands in ``keys`` as consecutive items (None when nowhere, or when
    more than once: which of them is upstream's would be a guess)."""
    starts = [i for i in range(len(keys) - len(run) + 1) if keys[i : i + len(run)] == run]
    return starts[0] if len(starts) == 1 else None


def _changed_after(past: MemberHistory, at: int, block: Block, older: tuple[str, ...]) -> str:
    """The first revision after ``at`` up to the base whose code at the edit's place is not
    ``older`` (the base itself when none before it differs)."""
    later = past.versions[at + 1 : past.base + 1]
    return next((v.label for v in later if _keys_at(v, block) != older), later[-1].label)


def _restated(block: Block, run: Sequence[Stmt], base_code: str) -> str:
    """The edit's code with the statements of ``run`` (from the first one's code to the
    last one's end, comments above the first staying omni's) replaced by ``base_code``."""
    lines = dedent_code(block.code).splitlines(keepends=True)
    first, last = run[0].start, run[-1].full_end
    middle = dedent_code(base_code)
    middle = middle if middle.endswith("\n") else middle + "\n"
    return "".join(lines[: first - 1]) + middle + "".join(lines[last:])
