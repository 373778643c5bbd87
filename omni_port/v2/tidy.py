"""Lay generated V2 modules out as vLLM-Omni's ruff rules want them: imports, long comments.

The generated modules go into vLLM-Omni, whose CI runs ruff with its own rules
(``[tool.ruff]`` of its pyproject: pycodestyle, pyflakes, isort, 120 columns). Composing
adds imports where a run of sync or a rewrite makes them (after omni's sorted block, after a
carried function, in place of a replaced one) and tags whose trailing comments run past 120
columns. So, on each generated module's text, last:

- every module-level import joins the import block at the top (E402), which is sorted as
  ruff's isort sorts it by default (I001): sections (standard library, third party,
  ``vllm_omni``, relative) a blank line apart, straight imports before ``from`` imports,
  modules and names in ruff's order, one ``from`` statement per module (an aliased name on
  its own), a statement past the line length or with a trailing comma exploded;
- a tag that makes its line too long goes onto comment lines above its statement, and every
  comment line past the line length wraps at a space, continued by ``#   `` (E501).

Comments above an import travel with it, as in ruff. Nothing else changes; the new line of
every old line is kept, for the rows that name lines.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

from omni_port.model import CONFLICT_CLOSE, CONFLICT_OPEN
from omni_port.v2.rewrite import CONTINUATION, TAG

#: vLLM-Omni's ruff line length.
LINE_LENGTH = 120
#: The header line that holds the command that regenerates a module.
REGENERATE = "# Regenerate: "
#: The first-party package of the modules (ruff sees it in the repository root).
FIRST_PARTY = frozenset({"vllm_omni"})
#: A line as (the line it was in the input, 1-based; 0 for a new line) and its text.
Line = tuple[int, str]


@dataclass(frozen=True, slots=True)
class Tidied:
    """A module laid out, and where each of its input lines went."""

    text: str
    #: The output line of each input line (index = input line; 0 unused).
    lines: tuple[int, ...]

    def line(self, old: int) -> int:
        return self.lines[old] if 0 < old < len(self.lines) else old


def tidy(text: str) -> Tidied:
    """``text`` with its imports sorted and its long comments wrapped; unchanged (and mapped
    one to one) when it does not parse."""
    lines: list[Line] = list(enumerate(text.split("\n"), 1))
    try:
        lines = _imports(lines)
        lines = _long_tags(lines)
    except (SyntaxError, ValueError, tokenize.TokenError):
        lines = list(enumerate(text.split("\n"), 1))
    lines = _wrapped(lines)
    return Tidied("\n".join(t for _, t in lines), _mapping(lines, text.count("\n") + 1))


def _mapping(lines: Sequence[Line], count: int) -> tuple[int, ...]:
    found = [0] * (count + 2)
    for new, (old, _) in enumerate(lines, 1):
        if old and not found[old]:
            found[old] = new
    following = len(lines)
    for old in range(count, 0, -1):  # a line that went maps to the next one kept
        following = found[old] = found[old] or following
    return tuple(found[: count + 1])


# --- imports ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Import:
    """One import statement of the block, as it will be written."""

    #: 0 future, 1 standard library, 2 third party, 3 first party, 4 relative.
    section: int
    #: Straight (``import x``) or not.
    straight: bool
    #: The module with its leading dots, and the names as ``name`` or ``name as alias``.
    module: str
    names: tuple[str, ...]
    #: The comment lines above it (its tag included), and its own lines when kept as written.
    comments: tuple[Line, ...]
    text: tuple[Line, ...]
    exploded: bool

    def key(self) -> tuple[int, bool, list[object], list[object]]:
        return (self.section, not self.straight, _natural(self.module), _member(self.names[0]))


def _imports(lines: list[Line]) -> list[Line]:
    source = "\n".join(t for _, t in lines)
    tree = ast.parse(source)
    body = tree.body
    first = next((i for i, s in enumerate(body) if _is_import(s) and not _future(s)), None)
    if first is None:
        return lines
    last = first
    while last + 1 < len(body) and _is_import(body[last + 1]):
        last += 1
    block = body[first : last + 1]
    strays = [s for s in body[last + 1 :] if _is_import(s)]
    comments = _trailing_comments(source)
    start = block[0].lineno
    entries: list[_Import] = []
    above: list[Line] = []
    previous_end = start - 1
    for stmt in block:
        above = [ln for ln in lines[previous_end : stmt.lineno - 1] if ln[1].strip()]
        entries.extend(_entries(stmt, lines, above, comments))
        previous_end = stmt.end_lineno or stmt.lineno
    for stmt in strays:
        entries.extend(_entries(stmt, lines, [], comments))
    written = _block(entries)
    gone = {n for s in strays for n in range(s.lineno, (s.end_lineno or s.lineno) + 1)}
    end = block[-1].end_lineno or block[-1].lineno
    rest = [ln for n, ln in enumerate(lines[end:], end + 1) if n not in gone]
    return [*lines[: start - 1], *written, *rest]


def _is_import(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Import | ast.ImportFrom)


def _future(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"


def _trailing_comments(source: str) -> dict[int, str]:
    """The trailing comment of each line that has code before it."""
    found: dict[int, str] = {}
    lines = source.split("\n")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and lines[token.start[0] - 1][: token.start[1]].strip():
            found[token.start[0]] = token.string
    return found


def _entries(
    stmt: ast.stmt, lines: Sequence[Line], above: Sequence[Line], comments: dict[int, str]
) -> list[_Import]:
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    own = list(lines[first - 1 : last])
    trailing = comments.get(last, "")
    extra: list[Line] = []
    if trailing and first == last:
        old, text = own[-1]
        own[-1] = (old, text[: text.rindex(trailing)].rstrip())
        extra = [(0, part) for part in _split_tags(trailing)]
    elif any(n in comments for n in range(first, last + 1)):
        # A comment inside a parenthesized import: kept as written, unmerged.
        return [_entry(stmt, (*above, *extra), tuple(own), keep=True)]
    exploded = first != last and own[-2][1].rstrip().endswith(",")
    if isinstance(stmt, ast.Import):
        return [_entry(stmt, (*above, *extra), tuple(own), keep=True)]
    return [_entry(stmt, (*above, *extra), tuple(own), keep=False, exploded=exploded)]


def _split_tags(comment: str) -> list[str]:
    """A trailing comment as comment lines: each tag on its own."""
    parts = comment.split(TAG)
    found = [parts[0].rstrip()] if parts[0].strip("# ") else []
    found += [TAG + part.rstrip() for part in parts[1:]]
    return found


def _entry(
    stmt: ast.stmt,
    comments: Sequence[Line],
    own: tuple[Line, ...],
    keep: bool,
    exploded: bool = False,
) -> _Import:
    if isinstance(stmt, ast.Import):
        names = tuple(_alias(a) for a in stmt.names)
        module = stmt.names[0].name
        return _Import(_section(module, 0), True, module, names, tuple(comments), own, False)
    assert isinstance(stmt, ast.ImportFrom)
    module = "." * stmt.level + (stmt.module or "")
    names = tuple(_alias(a) for a in stmt.names)
    section = _section(stmt.module or "", stmt.level)
    return _Import(section, False, module, names, tuple(comments), own if keep else (), exploded)


def _alias(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _section(module: str, level: int) -> int:
    top = module.split(".")[0]
    if level:
        return 4
    if top == "__future__":
        return 0
    if top in sys.stdlib_module_names:
        return 1
    return 3 if top in FIRST_PARTY else 2


def _block(entries: Sequence[_Import]) -> list[Line]:
    """The sorted block: same-module ``from`` imports merged, sections a blank line apart."""
    merged = _merged(entries)
    out: list[Line] = []
    section = None
    for entry in sorted(merged, key=_Import.key):
        if out and (entry.section != section or entry.comments) and out[-1][1]:
            out.append((0, ""))  # between sections, and above a comment (as ruff writes it)
        section = entry.section
        out.extend(entry.comments)
        out.extend(entry.text or _render(entry))
    return out


def _merged(entries: Sequence[_Import]) -> list[_Import]:
    """One ``from`` statement per module for the plain names; each aliased name its own."""
    found: dict[tuple[int, str], _Import] = {}
    out: list[_Import] = []
    for entry in entries:
        if entry.straight or entry.text:
            out.append(entry)
            continue
        comments = entry.comments
        for name in (n for n in entry.names if " as " in n):
            out.append(_Import(entry.section, False, entry.module, (name,), comments, (), False))
            comments = ()
        plain = tuple(n for n in entry.names if " as " not in n)
        if not plain:
            continue
        key = (entry.section, entry.module)
        known = found.get(key)
        if known is not None:
            plain = tuple(dict.fromkeys([*known.names, *plain]))
            comments = (*known.comments, *comments)
        exploded = entry.exploded or (known is not None and known.exploded)
        found[key] = _Import(entry.section, False, entry.module, plain, comments, (), exploded)
    return [*out, *found.values()]


def _render(entry: _Import) -> list[Line]:
    names = sorted(dict.fromkeys(entry.names), key=_member)
    line = f"from {entry.module} import {', '.join(names)}"
    if not entry.exploded and len(line) <= LINE_LENGTH:
        return [(0, line)]
    return [
        (0, f"from {entry.module} import ("),
        *((0, f"    {name},") for name in names),
        (0, ")"),
    ]


def _natural(text: str) -> list[object]:
    """ruff's natural, case-insensitive order."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text.lower())]


def _member(name: str) -> list[object]:
    """ruff's order of imported names (``order-by-type``): constants, classes, the rest."""
    bare = name.split(" as ")[0]
    if len(bare) > 1 and bare.isupper():
        kind = 0
    elif bare[:1].isupper():
        kind = 1
    else:
        kind = 2
    return [kind, *_natural(name)]


# --- comments -----------------------------------------------------------------------------


def _long_tags(lines: list[Line]) -> list[Line]:
    """Each trailing tag of a line past the line length, moved onto comment lines above the
    first line of its statement."""
    source = "\n".join(t for _, t in lines)
    starts = _statement_starts(source)
    moves: dict[int, list[str]] = {}
    cut: dict[int, int] = {}
    for number, comment in _trailing_comments(source).items():
        text = lines[number - 1][1]
        if TAG not in comment or len(text) <= LINE_LENGTH:
            continue
        cut[number] = text.rindex(comment)
        moves.setdefault(starts.get(number, number), []).extend(_split_tags(comment))
    out: list[Line] = []
    for number, (old, text) in enumerate(lines, 1):
        if number in moves:
            indent = text[: len(text) - len(text.lstrip())]
            out.extend((0, indent + part) for part in moves[number])
        if number in cut:
            text = text[: cut[number]].rstrip()
        out.append((old, text))
    return out


def _statement_starts(source: str) -> dict[int, int]:
    """The first line of the logical line each physical line belongs to."""
    found: dict[int, int] = {}
    start = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NEWLINE:
            for number in range(start or token.start[0], token.start[0] + 1):
                found.setdefault(number, start or token.start[0])
            start = 0
        elif token.type == tokenize.NL and not start:
            found.setdefault(token.start[0], token.start[0])  # a comment or blank line
        elif token.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT) and not start:
            start = token.start[0]
    return found


def _wrapped(lines: list[Line]) -> list[Line]:
    """Every comment-only line past the line length, wrapped at spaces; a conflict region's
    lines stay as they are (its size and wording are read back; a tree with one is not
    deployable anyway)."""
    out: list[Line] = []
    conflict = False
    for old, text in lines:
        stripped = text.lstrip()
        conflict = (conflict or stripped.startswith(CONFLICT_OPEN)) and not stripped.startswith(
            CONFLICT_CLOSE
        )
        if conflict or len(text) <= LINE_LENGTH or not stripped.startswith("#"):
            out.append((old, text))
            continue
        indent = text[: len(text) - len(stripped)]
        wrap = _wrap_command if stripped.startswith(REGENERATE) else _wrap
        out.extend((old if n == 0 else 0, part) for n, part in enumerate(wrap(stripped, indent)))
    return out


def regenerate_command(text: str) -> str:
    """The command a generated module's header names, its wrapped lines joined ("" when
    the header names none)."""
    lines = text.split("\n")
    start = next((n for n, line in enumerate(lines[:12]) if line.startswith(REGENERATE)), None)
    if start is None:
        return ""
    command = lines[start].removeprefix(REGENERATE)
    for line in lines[start + 1 :]:
        if not command.endswith(" \\") or not line.startswith(CONTINUATION):
            break
        command = command.removesuffix(" \\") + " " + line.removeprefix(CONTINUATION)
    return command


def _wrap_command(comment: str, indent: str) -> list[str]:
    """The header's command, wrapped between arguments as a shell continues a command
    (`` \\`` at the end of a line), so that it still runs once the ``#`` are taken off."""
    words = comment.split(" ")
    found: list[str] = []
    line = indent + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) + 2 > LINE_LENGTH and line.strip() != "#":
            found.append(line + " \\")
            line = indent + CONTINUATION + word
        else:
            line += " " + word
    found.append(line)
    return found


def _wrap(comment: str, indent: str) -> list[str]:
    found: list[str] = []
    line = indent + comment
    while len(line) > LINE_LENGTH:
        cut = line.rfind(" ", len(indent) + len(CONTINUATION) + 1, LINE_LENGTH + 1)
        if cut < 0:
            break  # one word longer than the line: left as it is
        found.append(line[:cut].rstrip())
        line = indent + CONTINUATION + line[cut + 1 :].lstrip()
    found.append(line)
    return found
