"""Maintainer words for where a block sits: the ``Location:`` lines of the catalog."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from omni_port.catalog.codematch import CLOSERS, OPENERS
from omni_port.model import Anchor, Edge
from omni_port.pyast.syntax import split_full_key

SHORT = 60  # statements longer than this lose the arguments of their calls
_CLAUSES = ("else:", "elif ", "except", "finally:", "case ")  # labels of non-main bodies
_BODY_EDGE = {
    Edge.FIRST: "at the beginning of",
    Edge.LAST: "at the end of",
    Edge.ONLY: "as the whole body of",
}
_METHOD_EDGE = {
    Edge.FIRST: "at the very beginning of the method",
    Edge.LAST: "at the end of the method",
    Edge.ONLY: "as the whole method body",
}


def describe_location(anchor: Anchor) -> str:
    """Maintainer words for a ``Location:`` line, from a block's anchor ("" if it says nothing).

    E.g. "Inside `with record_function_or_nullcontext('post process')`, in the `else`
    branch of `if not self.broadcast_pp_output`, after `x = f(y)`, replacing `z = g(x)`".
    """
    places = _containers(anchor.path)
    phrases = [("in " if place.startswith("the ") else "inside ") + place for place in places]
    if anchor.edge is not Edge.NONE:
        if places:
            phrases[-1] = f"{_BODY_EDGE[anchor.edge]} {places[-1]}"
        else:
            phrases.append(_METHOD_EDGE[anchor.edge])
    if anchor.before and anchor.edge in (Edge.NONE, Edge.LAST):
        phrases.append(f"after `{_shown(anchor.before[0])}`")
    if anchor.after and anchor.edge in (Edge.NONE, Edge.FIRST):
        phrases.append(f"before `{_shown(anchor.after[0])}`")
    if anchor.replaced:
        phrases.append("replacing " + _listed([f"`{_shown(s)}`" for s in anchor.replaced]))
    text = ", ".join(phrases)
    return text[:1].upper() + text[1:]


def _containers(path: Sequence[str]) -> list[str]:
    """One phrase per enclosing body: "`with x`", "the `else` branch of `if y`".

    A clause label always follows the header of its statement, which it replaces.
    """
    places: list[str] = []
    for key in path:
        if key.startswith(_CLAUSES) and places:
            owner = places.pop()
            part = "branch" if owner.startswith("`if ") else "clause"
            places.append(f"the `{_shown(key)}` {part} of {owner}")
        else:
            places.append(f"`{_shown(key)}`")
    return places


def _listed(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    more = len(items) - 2
    return f"{items[0]}, {items[1]} and {more} more statement{'s' if more > 1 else ''}"


def _shown(key: str) -> str:
    """A normalized statement or header for display: no body fingerprint, colon, or long args."""
    text = split_full_key(key)[0].replace("\n", " ").rstrip()
    text = text[:-1].rstrip() if text.endswith(":") else text
    while len(text) > SHORT:
        groups = [(end - start, start, end) for start, end in _groups(text)]
        groups = [g for g in groups if g[0] > 3 and not _is_string(text[g[1] : g[2]])]
        if not groups:
            break
        _, start, end = max(groups, key=lambda g: (g[0], -g[1]))
        text = text[:start] + "..." + text[end:]
    return text


def _groups(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the contents of every outermost bracket pair outside string literals."""
    depth, start, quote, escaped = 0, 0, "", False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in OPENERS:
            depth += 1
            start = i + 1 if depth == 1 else start
        elif char in CLOSERS and depth:
            depth -= 1
            if not depth:
                yield start, i


STRING_LABEL = re.compile(
    r"""
    \s*[rbuf]*             # optional string prefix
    (?:'[^']*'|"[^"]*")     # one quoted string and nothing else
    \s*
    """,
    re.VERBOSE | re.IGNORECASE,
)


def _is_string(text: str) -> bool:
    """A lone string literal, such as the label of ``record_function_or_nullcontext('x')``."""
    return STRING_LABEL.fullmatch(text) is not None
