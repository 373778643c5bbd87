"""Parse and render the markdown catalog of omni-specific blocks; match its code excerpts.

The catalog is the maintainers' guide to the omni edits of the NPU runners::

    # Title                           then free prose and a blockquote: the preamble
    ## ClassName (module.py)          a runner class; its entries follow
    ### method - Title                one entry
    Location: where the code sits     optional
    prose                             optional
    ```python                         exactly one code block: a marked block (markers
    ...                               included), a whole method, or unmarked statements;
    ```                               ``# ... words ...`` lines elide any run of code
    prose                             optional
    ---                               separates sections (carries no meaning)
    ## Name Title [(module.py)]       a module-level definition (``ExecuteModelState
                                      Extension``): prose and one code block, no entries
"""

from __future__ import annotations

import difflib
import enum
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from omni_port.errors import BadInput
from omni_port.markers import LABELLED, PLAIN
from omni_port.model import Anchor, Code, Edge, Finding
from omni_port.syntax import split_full_key

DEFAULT_TITLE = "Omni-specific blocks of the NPU runners"


class EntryKind(enum.StrEnum):
    """What an entry's code excerpt shows, which says how to find it in the runners."""

    BLOCK = "block"
    """An ``Omni-new`` marked block (the code opens with a marker, or contains one)."""
    METHOD = "method"
    """A whole method (``def ...``) whose omni code is not fenced by markers."""
    STATEMENT = "statement"
    """Unmarked omni statements, usually introduced by a ``# [Omni]`` comment."""
    MODULE = "module"
    """A module-level definition in a section of its own (the extended NamedTuple)."""


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One described piece of omni code. Line numbers take no part in equality."""

    #: Runner class of the section; "" for a module-level section.
    class_name: str
    #: Module file named in the section heading (``npu_model_runner.py``), or "".
    module: str
    #: Method name; for a module-level section, the name of the definition.
    method: str
    #: Maintainer-facing title (after `` - `` in an entry heading, after the name otherwise).
    title: str
    kind: EntryKind
    #: The code as written inside the fence, every line ending with "\n".
    code: str
    #: Text of the ``Location:`` line, or "".
    location: str = ""
    #: Prose between the heading (or the Location line) and the code block, or "".
    prose: str = ""
    #: Prose after the code block, or "".
    note: str = ""
    #: 1-based line of the ``###`` heading (of the ``##`` heading for a module-level entry).
    line: int = field(default=0, compare=False)
    #: 1-based line of the opening fence.
    code_line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Catalog:
    """A parsed catalog."""

    #: Text of the ``# Title`` line, or "" when the catalog has none.
    title: str
    #: Text between the title and the first section, without blank edge lines.
    preamble: str
    #: Entries in file order.
    entries: tuple[CatalogEntry, ...]


# --- Parsing -------------------------------------------------------------------------------

SECTION = re.compile(
    r"""
    ^\#\#\s+
    (?P<name>[^\W\d]\w*)                # class name, or name of a module-level definition
    (?:\s+(?P<title>[^\s()][^()]*?))?   # title words: only a module-level section has them
    (?:\s*\((?P<module>[^()\s]+)\))?    # optional "(module.py)"
    \s*$
    """,
    re.VERBOSE,
)
ENTRY = re.compile(
    r"""
    ^\#\#\#\s+
    (?P<method>[^\W\d]\w*)     # method name
    \s+-\s+                     # the " - " separator
    (?P<title>\S.*?)            # title
    \s*$
    """,
    re.VERBOSE,
)
RULE = re.compile(
    r"""
    ^\s*-{3,}\s*$      # a line of three or more dashes: a thematic break
    """,
    re.VERBOSE,
)
FENCE_LANGUAGES = ("python", "py", "")


class _Tag(enum.Enum):
    TEXT = enum.auto()
    RULE = enum.auto()
    SECTION = enum.auto()
    ENTRY = enum.auto()
    FENCE = enum.auto()


@dataclass(frozen=True, slots=True)
class _Item:
    """One line of markdown, or a whole fenced code block."""

    tag: _Tag
    line: int
    #: The line; the info string (language) of a fence.
    text: str
    #: Lines inside a fence.
    code: str = ""


def parse(text: str, path: str) -> Catalog:
    """Parse catalog markdown (LF or CRLF).

    Raises BadInput (OP401, with the line) for any structure it does not understand;
    never raises anything else.
    """
    items = _lex([line.rstrip("\r") for line in text.split("\n")], path)
    title, start = _title(items)
    first = next((i for i in range(start, len(items)) if items[i].tag is _Tag.SECTION), len(items))
    _only_text(items[start:first], path)
    entries: list[CatalogEntry] = []
    for heading, body in _split(items[first:], _Tag.SECTION):
        entries.extend(_section(heading, body, path))
    return Catalog(title, _text(items[start:first]), tuple(entries))


def _error(path: str, line: int, message: str) -> BadInput:
    return BadInput([Finding("catalog", Code.OP401, path, line, message)])


def _lex(lines: Sequence[str], path: str) -> list[_Item]:
    items: list[_Item] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                raise _error(path, i + 1, "code block is never closed")
            code = "".join(text + "\n" for text in lines[i + 1 : end])
            items.append(_Item(_Tag.FENCE, i + 1, line.strip()[3:].strip(), code))
            i = end + 1
            continue
        items.append(_Item(_tag(line), i + 1, line))
        i += 1
    return items


def _tag(line: str) -> _Tag:
    if line.startswith("### "):
        return _Tag.ENTRY
    if line.startswith("## "):
        return _Tag.SECTION
    return _Tag.RULE if RULE.match(line) else _Tag.TEXT


def _title(items: Sequence[_Item]) -> tuple[str, int]:
    """The ``# Title`` text and the index after it; ("", 0) when the catalog has none."""
    for i, item in enumerate(items):
        if item.tag is _Tag.TEXT and item.text.strip():
            return (item.text[2:].strip(), i + 1) if item.text.startswith("# ") else ("", 0)
    return "", 0


def _split(items: Sequence[_Item], tag: _Tag) -> Iterator[tuple[_Item, list[_Item]]]:
    """(heading, items up to the next heading) for every heading tagged ``tag``."""
    starts = [i for i, item in enumerate(items) if item.tag is tag]
    for n, i in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(items)
        yield items[i], list(items[i + 1 : end])


def _only_text(items: Sequence[_Item], path: str, where: str = "") -> None:
    """Raise for a code block or entry heading among ``items`` (outside any entry)."""
    for item in items:
        if item.tag is _Tag.FENCE:
            raise _error(path, item.line, "code block outside any entry" + where)
        if item.tag is _Tag.ENTRY:
            raise _error(path, item.line, "entry heading outside any section" + where)


def _text(items: Sequence[_Item]) -> str:
    """The lines of text and rule items, without blank edge lines."""
    lines = [item.text for item in items]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _section(heading: _Item, body: list[_Item], path: str) -> list[CatalogEntry]:
    match = SECTION.match(heading.text)
    if match is None:
        raise _error(
            path,
            heading.line,
            "section heading must read '## Class (module.py)' or '## Name Title'",
        )
    name, title, module = match.group("name", "title", "module")
    if title:
        entries = [item for item in body if item.tag is _Tag.ENTRY]
        if entries:
            raise _error(path, entries[0].line, f"entry heading inside module-level section {name}")
        return [_entry("", module or "", name, title, heading, body, path)]
    lead = next((i for i, item in enumerate(body) if item.tag is _Tag.ENTRY), len(body))
    _only_text(body[:lead], path, f" (section {name} has no entry here)")
    text = next((item for item in body[:lead] if item.tag is _Tag.TEXT and item.text.strip()), None)
    if text is not None:
        raise _error(path, text.line, f"text between section heading {name} and its first entry")
    return [
        _class_entry(name, module or "", item, rest, path)
        for item, rest in _split(body, _Tag.ENTRY)
    ]


def _class_entry(
    class_name: str, module: str, heading: _Item, body: list[_Item], path: str
) -> CatalogEntry:
    match = ENTRY.match(heading.text)
    if match is None:
        raise _error(path, heading.line, "entry heading must read '### method - Title'")
    return _entry(class_name, module, match["method"], match["title"], heading, body, path)


def _entry(
    class_name: str,
    module: str,
    method: str,
    title: str,
    heading: _Item,
    body: list[_Item],
    path: str,
) -> CatalogEntry:
    """The entry under ``heading``: optional Location line and prose, one code block, prose."""
    fences = [item for item in body if item.tag is _Tag.FENCE]
    if not fences:
        raise _error(path, heading.line, "entry has no code block")
    if len(fences) > 1:
        raise _error(path, fences[1].line, f"second code block in the entry at line {heading.line}")
    fence = fences[0]
    _check_code(fence, path)
    split = body.index(fence)
    location, prose = _location([item for item in body[:split] if item.tag is _Tag.TEXT])
    note = _text([item for item in body[split + 1 :] if item.tag is _Tag.TEXT])
    return CatalogEntry(
        class_name=class_name,
        module=module,
        method=method,
        title=title,
        kind=EntryKind.MODULE if not class_name else _kind(fence.code),
        code=fence.code,
        location=location,
        prose=prose,
        note=note,
        line=heading.line,
        code_line=fence.line,
    )


def _location(items: Sequence[_Item]) -> tuple[str, str]:
    """(location, prose) of the text before an entry's code block."""
    texts = [item for item in items if item.text.strip()]
    if texts and texts[0].text.startswith("Location:"):
        rest = items[items.index(texts[0]) + 1 :]
        return texts[0].text[len("Location:") :].strip(), _text(rest)
    return "", _text(items)


def _check_code(fence: _Item, path: str) -> None:
    if fence.text not in FENCE_LANGUAGES:
        raise _error(path, fence.line, f"code block language {fence.text!r} is not python")
    if not fence.code.strip():
        raise _error(path, fence.line, "code block is empty")
    _, unclosed = _marker_pairs(fence.code.split("\n"))
    if unclosed is not None:
        raise _error(path, fence.line + 1 + unclosed, "Omni-new marker is never closed")


def _kind(code: str) -> EntryKind:
    """Kind of a class-level entry, from its code (which is never blank)."""
    lines = [line.strip() for line in code.split("\n") if line.strip()]
    if LABELLED.match(lines[0]):
        return EntryKind.BLOCK
    first_code = next((line for line in lines if not line.startswith("#")), "")
    if first_code.startswith(("def ", "async def ", "@")):
        return EntryKind.METHOD
    if any(LABELLED.match(line) for line in lines):
        return EntryKind.BLOCK
    return EntryKind.STATEMENT


def _marker_pairs(lines: Sequence[str]) -> tuple[list[tuple[int, int]], int | None]:
    """(opener, closer) line indexes, and the index of a marker left open (or None).

    As in the runners, a plain dashed line closes an open region and is an ordinary
    comment otherwise.
    """
    pairs: list[tuple[int, int]] = []
    opened: int | None = None
    for i, line in enumerate(lines):
        text = line.strip()
        if opened is None:
            opened = i if LABELLED.match(text) else None
        elif LABELLED.match(text) or PLAIN.match(text):
            pairs.append((opened, i))
            opened = None
    return pairs, opened


def marked_regions(code: str) -> tuple[str, ...]:
    """The code between each pair of markers (markers excluded), in order.

    A marker left open runs to the end. Lets a checker match the marked part of an entry
    that also shows context, such as an unmarked statement and an elision before a block.
    """
    lines = code.removesuffix("\n").split("\n")
    pairs, unclosed = _marker_pairs(lines)
    if unclosed is not None:
        pairs.append((unclosed, len(lines)))
    return tuple("".join(line + "\n" for line in lines[a + 1 : b]) for a, b in pairs)


# --- Rendering -----------------------------------------------------------------------------


def render(entries: Iterable[CatalogEntry], title: str = DEFAULT_TITLE, preamble: str = "") -> str:
    """Catalog markdown that ``parse`` reads back to the same entries.

    Entries are grouped into one section per (class, module), sections in first-seen
    order; each module-level entry gets a section of its own. Raises ValueError for an
    entry that could not be read back (e.g. its kind disagrees with its code).
    """
    _check_text("title", title, single=True)
    _check_text("preamble", preamble, rules=True)
    if not title and preamble.startswith("# "):
        raise ValueError("a preamble without a title must not start with '# '")
    paragraphs = [f"# {title}"] if title else []
    paragraphs += [preamble] if preamble else []
    for n, (heading, group) in enumerate(_sections(entries)):
        paragraphs += ["---"] if n else []
        paragraphs.append(heading)
        for entry in group:
            _check_entry(entry)
            paragraphs += _entry_paragraphs(entry)
    return "\n\n".join(paragraphs) + "\n"


def _sections(entries: Iterable[CatalogEntry]) -> list[tuple[str, list[CatalogEntry]]]:
    groups: dict[tuple[str, str] | int, list[CatalogEntry]] = {}
    for n, entry in enumerate(entries):
        key = (entry.class_name, entry.module) if entry.class_name else n
        groups.setdefault(key, []).append(entry)
    return [(_section_heading(group[0]), group) for group in groups.values()]


def _section_heading(entry: CatalogEntry) -> str:
    module = f" ({entry.module})" if entry.module else ""
    if entry.class_name:
        return f"## {entry.class_name}{module}"
    return f"## {entry.method} {entry.title}{module}"


def _entry_paragraphs(entry: CatalogEntry) -> list[str]:
    paragraphs = [] if not entry.class_name else [f"### {entry.method} - {entry.title}"]
    paragraphs += [f"Location: {entry.location}"] if entry.location else []
    paragraphs += [entry.prose] if entry.prose else []
    paragraphs.append(f"```python\n{entry.code}```")
    return paragraphs + ([entry.note] if entry.note else [])


def _check_entry(entry: CatalogEntry) -> None:
    """Raise ValueError unless ``parse`` would read ``entry`` back unchanged."""
    where = f"catalog entry {entry.class_name or '<module>'}.{entry.method}"
    names = [entry.method] + ([entry.class_name] if entry.class_name else [])
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"{where}: class and method must be identifiers")
    if any(char in "()" or char.isspace() for char in entry.module):
        raise ValueError(f"{where}: module {entry.module!r} has spaces or parentheses")
    if not entry.title or (not entry.class_name and ("(" in entry.title or ")" in entry.title)):
        raise ValueError(f"{where}: empty title, or parentheses in a module-level title")
    _check_text("title", entry.title, single=True)
    _check_text("location", entry.location, single=True)
    _check_text("prose", entry.prose)
    _check_text("note", entry.note)
    if not entry.location and entry.prose.startswith("Location:"):
        raise ValueError(f"{where}: prose would read as a Location line")
    _check_entry_code(entry, where)


def _check_entry_code(entry: CatalogEntry, where: str) -> None:
    code = entry.code
    lines = code.split("\n")
    if not code.strip() or not code.endswith("\n") or "\r" in code:
        raise ValueError(f"{where}: code must be non-blank lines ending with '\\n', without CR")
    if any(line.strip() == "```" for line in lines) or _marker_pairs(lines)[1] is not None:
        raise ValueError(f"{where}: code holds a fence line or a marker never closed")
    kind = EntryKind.MODULE if not entry.class_name else _kind(code)
    if kind is not entry.kind:
        raise ValueError(f"{where}: kind {entry.kind} but the code reads as {kind}")


def _check_text(name: str, text: str, single: bool = False, rules: bool = False) -> None:
    """Raise ValueError unless ``text`` parses back as the same prose (rules kept if ``rules``)."""
    lines = text.split("\n")
    if "\r" in text or (single and (len(lines) > 1 or text != text.strip())):
        raise ValueError(f"{name} must be a single stripped line without CR: {text!r}")
    if text and (not lines[0].strip() or not lines[-1].strip()):
        raise ValueError(f"{name} must not start or end with a blank line: {text!r}")
    allowed = (_Tag.TEXT, _Tag.RULE) if rules else (_Tag.TEXT,)
    if any(_tag(line) not in allowed or line.lstrip().startswith("```") for line in lines):
        raise ValueError(f"{name} holds a heading, rule or fence line: {text!r}")


# --- Matching code -------------------------------------------------------------------------

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
_OPENERS = ("(", "[", "{")
_CLOSERS = (")", "]", "}")


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
            depth = depth + (text in _OPENERS) - (depth > 0 and text in _CLOSERS)
            out.append(_Token(text, line_start))
            line_start = fresh = False
    return [
        token
        for i, token in enumerate(out)
        if not (token.text == "," and i + 1 < len(out) and out[i + 1].text in _CLOSERS)
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
        spaced = (_wordy(prev[-1]) or prev in _CLOSERS) and _wordy(token[0])
        out += (" " if spaced else "") + token
    return out


def _wordy(char: str) -> bool:
    """Part of a name, number or string: such a token after another one needs a space."""
    return char.isalnum() or char in "_'\""


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


# --- Locations -----------------------------------------------------------------------------

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
        elif char in _OPENERS:
            depth += 1
            start = i + 1 if depth == 1 else start
        elif char in _CLOSERS and depth:
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
