"""Find ``Omni-new`` marker comments and pair them into regions; diagnose malformed ones.

Markers pair by order inside one body (a module, class, function or clause body), so an
opener and its closer always sit at the same block level. A closer may be the same
labelled comment or a plain dashed line; a plain dashed line with no open region is an
ordinary divider, not a marker.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from omni_port.model import Code, Comment, Finding, Suite, Tree
from omni_port.pyast.syntax import walk
from omni_port.report import shorten

LABELLED = re.compile(
    r"""
    ^\#\s*                          # the comment sign
    -*\s*                           # optional run of dashes
    omni[-\s]?new                   # the label, any case, "-" or " " or nothing inside
    (?:\s*:\s*(?P<title>.*?))?      # optional ": title"
    \s*-*\s*$                       # optional run of dashes, nothing else
    """,
    re.VERBOSE | re.IGNORECASE,
)
PLAIN = re.compile(
    r"""
    ^\#\s*      # the comment sign
    -{10,}      # a long run of dashes and nothing else
    \s*$
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Marker:
    """One marker comment line."""

    line: int
    col: int
    #: Whether it carries the ``Omni-new`` label (False: plain dashed closer).
    labelled: bool
    #: Optional title written after the label (``# --- Omni-new: talker ---``).
    title: str


@dataclass(frozen=True, slots=True)
class Region:
    """A pair of markers in one body."""

    #: Headers of the enclosing statements of the body.
    path: tuple[str, ...]
    opener: Marker
    closer: Marker
    #: The body both markers belong to.
    suite: Suite


@dataclass(frozen=True, slots=True)
class Scan:
    """Regions found in a file, and diagnostics for markers that pair with nothing."""

    regions: tuple[Region, ...]
    findings: tuple[Finding, ...]


def as_marker(comment: Comment) -> Marker | None:
    """The marker a statement-level comment is, if any."""
    labelled = LABELLED.match(comment.text)
    if labelled:
        return Marker(comment.line, comment.col, True, (labelled.group("title") or "").strip())
    if PLAIN.match(comment.text):
        return Marker(comment.line, comment.col, False, "")
    return None


def scan(tree: Tree) -> Scan:
    """Pair the markers of ``tree``; never raises on malformed markers, reports them."""
    regions: list[Region] = []
    loose: list[tuple[Marker, Suite, tuple[str, ...]]] = []
    for path, suite in walk(tree.body):
        paired, opened = pair(list(_suite_markers(suite)))
        regions.extend(Region(path, o, c, suite) for o, c in paired)
        if opened is not None:
            loose.append((opened, suite, path))
    regions.sort(key=lambda r: r.opener.line)
    findings = [*_loose_findings(tree, loose), *_nested_findings(tree.path, regions)]
    findings.extend(_inner_findings(tree))
    findings.sort(key=lambda f: (f.line, f.col))
    return Scan(tuple(regions), tuple(findings))


def _suite_markers(suite: Suite) -> Iterator[Marker]:
    comments = [c for stmt in suite.stmts for c in stmt.leading] + list(suite.footer)
    for comment in comments:
        marker = as_marker(comment)
        if marker is not None:
            yield marker


def pair(markers: Sequence[Marker]) -> tuple[list[tuple[Marker, Marker]], Marker | None]:
    """(opener, closer) pairs in order, and an opener left open (or None): the one pairing
    rule. A labelled marker opens; the next marker of either kind closes; a plain dashed
    line with nothing open is an ordinary divider."""
    paired: list[tuple[Marker, Marker]] = []
    opener: Marker | None = None
    for marker in markers:
        if opener is not None:
            paired.append((opener, marker))
            opener = None
        elif marker.labelled:
            opener = marker
    return paired, opener


def _loose_findings(
    tree: Tree, loose: list[tuple[Marker, Suite, tuple[str, ...]]]
) -> Iterator[Finding]:
    loose.sort(key=lambda item: item[0].line)
    index = 0
    while index < len(loose):
        marker, suite, path = loose[index]
        if index + 1 < len(loose) and loose[index + 1][1] is not suite:
            other, _, other_path = loose[index + 1]
            yield _finding(tree.path, marker, Code.OP103, _apart(marker, path, other, other_path))
            index += 2
            continue
        if any(stmt.start > marker.line for stmt in suite.stmts):
            yield _finding(tree.path, marker, Code.OP101, _never_closed(tree, marker))
        else:
            yield _finding(
                tree.path,
                marker,
                Code.OP102,
                "marker closes a block that was never opened (its opening marker is missing)",
            )
        index += 1


def _apart(
    marker: Marker, path: tuple[str, ...], other: Marker, other_path: tuple[str, ...]
) -> str:
    """Why two markers that would pair do not: they sit at different indentation, or at
    the same one in two bodies (an ``if`` body and its ``else:``), which columns cannot tell."""
    head = f"marker pairs with the marker at line {other.line}, but "
    if marker.col != other.col:
        return head + f"they sit at different block levels (columns {marker.col} and {other.col})"
    return head + f"they sit in different bodies ({_body(path)} and {_body(other_path)})"


def _body(path: tuple[str, ...]) -> str:
    """A body as a reader finds it: the header that opens it, or the module."""
    return f"the body of `{shorten(path[-1], 40)}`" if path else "the module body"


def _never_closed(tree: Tree, marker: Marker) -> str:
    message = "block opened here is never closed in its body"
    for number in range(marker.line + 1, len(tree.lines) + 1):
        text = tree.lines[number - 1].strip()
        if PLAIN.match(text) or LABELLED.match(text):
            return f"{message}; the marker at line {number} sits at a different block level"
    return message


def _nested_findings(path: str, regions: list[Region]) -> Iterator[Finding]:
    for outer in regions:
        for inner in regions:
            if outer.opener.line < inner.opener.line and inner.closer.line < outer.closer.line:
                yield _finding(
                    path,
                    inner.opener,
                    Code.OP105,
                    f"marked block nested inside the block opened at line {outer.opener.line} "
                    f"(closed at line {outer.closer.line}); blocks must not nest",
                )


def _inner_findings(tree: Tree) -> Iterator[Finding]:
    """Labelled markers that are comments inside a statement rather than between statements."""
    statement_level = {c.line for _, suite in walk(tree.body) for c in _suite_comments(suite)}
    source = "".join(line + "\n" for line in tree.lines)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT or token.start[0] in statement_level:
            continue
        line_text = tree.lines[token.start[0] - 1]
        if line_text.strip() == token.string and LABELLED.match(token.string):
            marker = Marker(token.start[0], token.start[1] + 1, True, "")
            yield _finding(
                tree.path,
                marker,
                Code.OP104,
                "marker comment sits inside a statement (an expression, decorator list or "
                "between clauses), so it cannot open or close a block",
            )


def _suite_comments(suite: Suite) -> Iterator[Comment]:
    for stmt in suite.stmts:
        yield from stmt.leading
    yield from suite.footer


def _finding(path: str, marker: Marker, code: Code, message: str) -> Finding:
    return Finding(code, path, marker.line, message, marker.col)
