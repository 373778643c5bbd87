"""Token-wise comparison of catalog code excerpts with runner code, blind to layout."""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from omni_port.extract.markers import as_marker, pair
from omni_port.model import Comment

# --- Tokens --------------------------------------------------------------------------------

TOKEN = re.compile(
    r"""
    (?P<string>
        [rRbBuUfF]{0,2}                 # string prefix
        (?: '''(?:\\.|[^\\])*?'''       # triple-quoted, may span lines
          | \"\"\"(?:\\.|[^\\])*?\"\"\"
          | '(?:\\.|[^'\\\n])*'         # one-line quoted
          | "(?:\\.|[^"\\\n])*"
        )
    )
    | (?P<comment>\#[^\n]*)             # comment (markers, notes, elisions) to the line end
    | (?P<newline>\n)                   # end of a physical line
    | (?P<space>[ \t\f\r]+|\\\n)        # blanks and backslash continuations
    | (?P<word>\w+)                     # name, keyword or number
    | (?P<op>\S)                        # any other character, one at a time
    """,
    re.VERBOSE | re.DOTALL,
)
ELISION = re.compile(
    r"""
    ^\#\s*          # a comment on a line of its own...
    (?:\.\.\.|…)    # ...whose text starts with an ellipsis: "# ... forward ..."
    """,
    re.VERBOSE,
)
_ELIDED = "# ..."  # token text of an elision; no real token starts with "#"
OPENERS = ("(", "[", "{")
CLOSERS = (")", "]", "}")


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    #: First token of a logical line (a statement, a clause header, or an elision).
    starts_line: bool


def _tokens(code: str) -> list[_Token]:
    """Code tokens without comments, blanks or layout; elision lines become ``_ELIDED``.

    Strings are one token with ``"`` quotes where the text allows; a comma before a closing
    bracket is dropped, so formatter differences (wrapping, quotes, magic trailing commas)
    do not matter.
    """
    out: list[_Token] = []
    depth, line_start, fresh = 0, True, True
    for match in TOKEN.finditer(code):
        kind, text = match.lastgroup, match.group()
        if kind == "newline":
            line_start, fresh = line_start or depth == 0, True
        elif kind == "comment":
            if fresh and ELISION.match(text):
                out.append(_Token(_ELIDED, True))
                line_start = True
        elif kind != "space":
            if kind == "string":
                text = _double_quoted(text)
            depth = depth + (text in OPENERS) - (depth > 0 and text in CLOSERS)
            out.append(_Token(text, line_start))
            line_start = fresh = False
    return [
        token
        for i, token in enumerate(out)
        if not (token.text == "," and i + 1 < len(out) and out[i + 1].text in CLOSERS)
    ]


def _double_quoted(literal: str) -> str:
    prefix = literal[: len(literal) - len(literal.lstrip("rRbBuUfF"))]
    quote = literal[len(prefix) : len(prefix) + 3]
    quote = quote if quote in ("'''", '"""') else quote[0]
    body = literal[len(prefix) + len(quote) : -len(quote)]
    if quote[0] == "'" and '"' not in body:
        quote = '"' * len(quote)
    return prefix.lower() + quote + body + quote


def normalized_lines(code: str) -> tuple[str, ...]:
    """The code as matching sees it: one logical line each, elisions as ``...``.

    Comments, markers, blank lines and indentation are gone; tokens are joined with a
    space only between two names, numbers or strings. Useful to show why code differs.
    """
    lines: list[list[str]] = []
    for token in _tokens(code):
        if token.starts_line or not lines:
            lines.append([])
        lines[-1].append("..." if token.text == _ELIDED else token.text)
    return tuple(_join(line) for line in lines)


def _join(tokens: Sequence[str]) -> str:
    out = tokens[0] if tokens else ""
    for prev, token in itertools.pairwise(tokens):
        spaced = (_wordy(prev[-1]) or prev in CLOSERS) and _wordy(token[0])
        out += (" " if spaced else "") + token
    return out


def _wordy(char: str) -> bool:
    """Part of a name, number or string: such a token after another one needs a space."""
    return char.isalnum() or char in "_'\""


# --- Matching ------------------------------------------------------------------------------


def code_matches(entry_code: str, block_code: str) -> bool:
    """Whether an entry's code is the block's code, each elision standing for any run of it.

    Markers, comments, blank lines, indentation, wrapping and quote style do not matter.
    """
    return _glob(_segments(entry_code), _tokens(block_code), anchored=True)


def appears_in(entry_code: str, method_code: str) -> bool:
    """Whether an entry's code appears in a method as a run of whole statements.

    For whole-method excerpts and unmarked ``# [Omni]`` statements, which describe code
    outside any marked block; the same normalization and elisions as ``code_matches``.
    """
    return _glob(_segments(entry_code), _tokens(method_code), anchored=False)


def code_similarity(entry_code: str, block_code: str) -> float:
    """How alike an entry's code and a block's code are, in [0, 1]; 1.0 exactly on a match.

    Without elisions: difflib's ratio over normalized tokens (2 * common / total). With
    elisions, whose hidden code must not count against the entry: the share of the entry's
    own tokens found in order in the block, capped at 0.99 when the code does not match.
    """
    if code_matches(entry_code, block_code):
        return 1.0
    entry = [t.text for t in _tokens(entry_code)]
    block = [t.text for t in _tokens(block_code)]
    code = [text for text in entry if text != _ELIDED]
    matcher = difflib.SequenceMatcher(None, code, block, autojunk=False)
    if len(code) == len(entry):
        return matcher.ratio()
    common = sum(size for _, _, size in matcher.get_matching_blocks())
    return min(0.99, common / len(code))


#: Shortest run of tokens that counts as shared code, not a coincidence (``self . x (``).
SHARED_RUN = 4


def code_containment(entry_code: str, block_code: str) -> float:
    """Share of an entry's tokens that a block holds in order, in runs of ``SHARED_RUN``.

    For a block that grew around the code an entry shows: the symmetric similarity falls
    with every line added, but the entry's own code is still there (mostly unchanged).
    """
    code = [t.text for t in _tokens(entry_code) if t.text != _ELIDED]
    block = [t.text for t in _tokens(block_code)]
    if not code:
        return 0.0
    matcher = difflib.SequenceMatcher(None, code, block, autojunk=False)
    shared = sum(size for _, _, size in matcher.get_matching_blocks() if size >= SHARED_RUN)
    return shared / len(code)


def _segments(code: str) -> list[tuple[str, ...]]:
    """Token texts between elisions (an elision at an edge gives an empty segment)."""
    segments: list[list[str]] = [[]]
    for token in _tokens(code):
        if token.text == _ELIDED:
            segments.append([])
        else:
            segments[-1].append(token.text)
    return [tuple(segment) for segment in segments]


def _glob(segments: Sequence[tuple[str, ...]], hay: Sequence[_Token], anchored: bool) -> bool:
    """Whether the segments, each separated by a wildcard, match ``hay``.

    Anchored: all of ``hay``. Otherwise a run of it that starts and ends at statement
    boundaries. Each segment takes its first possible place, which is optimal for wildcards.
    """
    texts = tuple(token.text for token in hay)
    if anchored:
        starts = [i == 0 for i in range(len(hay) + 1)]
        ends = [i == len(hay) for i in range(len(hay) + 1)]
    else:
        starts = ends = [token.starts_line for token in hay] + [True]
    pos, last = 0, len(segments) - 1
    for n, segment in enumerate(segments):
        size = len(segment)
        found = next(
            (
                i
                for i in range(pos, len(texts) - size + 1)
                if texts[i : i + size] == segment
                and (n > 0 or starts[i])
                and (n < last or ends[i + size])
            ),
            None,
        )
        if found is None:
            return False
        pos = found + size
    return True


# --- Marked regions ------------------------------------------------------------------------


def marked_regions(code: str) -> tuple[str, ...]:
    """The code between each pair of markers (markers excluded), in order.

    A marker left open runs to the end. Lets a checker match the marked part of an entry
    that also shows context, such as an unmarked statement and an elision before a block.
    """
    lines = code.removesuffix("\n").split("\n")
    pairs, unclosed = marker_pairs(lines)
    if unclosed is not None:
        pairs.append((unclosed, len(lines)))
    return tuple("".join(line + "\n" for line in lines[a + 1 : b]) for a, b in pairs)


def marker_pairs(lines: Sequence[str]) -> tuple[list[tuple[int, int]], int | None]:
    """(opener, closer) line indexes, and the index of a marker left open (or None).

    Catalog excerpts need not parse, so markers are read line by line; they pair by the
    runners' own rule (``markers.pair``).
    """
    found = (as_marker(Comment(i, 1, line.strip())) for i, line in enumerate(lines))
    paired, opened = pair([marker for marker in found if marker is not None])
    return [(a.line, b.line) for a, b in paired], opened.line if opened is not None else None
