"""Parse and render the markdown catalog of omni-specific blocks.

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

import enum
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

# Code matching and location wording are re-exported: callers reach them as ``catalog.*``.
from omni_port.catalog.codematch import (
    appears_in,
    code_containment,
    code_matches,
    code_similarity,
    marked_regions,
    marker_pairs,
    normalized_lines,
)
from omni_port.catalog.wording import describe_location
from omni_port.errors import BadInput
from omni_port.extract.markers import LABELLED
from omni_port.model import Code, Finding

__all__ = [
    "DEFAULT_TITLE",
    "ENTRY",
    "FENCE_LANGUAGES",
    "RULE",
    "SECTION",
    "Catalog",
    "CatalogEntry",
    "EntryKind",
    "appears_in",
    "code_containment",
    "code_matches",
    "code_similarity",
    "describe_location",
    "marked_regions",
    "normalized_lines",
    "parse",
    "render",
    "title_of",
]


def title_of(runners: str) -> str:
    """The catalog's heading for the runners a platform's headings call ``runners``."""
    return f"Omni-specific blocks of the {runners} runners"


DEFAULT_TITLE = title_of("NPU")


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
    if first == len(items):
        _no_sections(items, title, path)
    _only_text(items[start:first], path)
    entries: list[CatalogEntry] = []
    for heading, body in _split(items[first:], _Tag.SECTION):
        entries.extend(_section(heading, body, path))
    return Catalog(title, _text(items[start:first]), tuple(entries))


#: Catalog structure written inside a line: a heading or fence whose line break was lost.
_INLINE_STRUCTURE = re.compile(r"\S\s+(\#{2,3}\s|```)")


def _no_sections(items: Sequence[_Item], title: str, path: str) -> None:
    """A document without sections is an empty catalog only when nothing else claims to be
    one; read as empty, any other text would make every block "uncatalogued"."""
    text_items = [item for item in items if item.tag is _Tag.TEXT and item.text.strip()]
    for item in text_items:
        if _INLINE_STRUCTURE.search(item.text):
            message = "catalog headings and code fences must start a line (line breaks lost?)"
            raise _error(path, item.line, message)
    if not title and text_items:
        message = "not a catalog: no '# Title' line and no '## Class (module.py)' section"
        raise _error(path, text_items[0].line, message)


def _error(path: str, line: int, message: str) -> BadInput:
    return BadInput([Finding(Code.OP401, path, line, message)])


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
        return [_entry(_Names("", module or "", name, title), heading, body, path)]
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
    names = _Names(class_name, module, match["method"], match["title"])
    return _entry(names, heading, body, path)


@dataclass(frozen=True, slots=True)
class _Names:
    """What an entry's headings name: its class ("" for a module-level one), module,
    method and title."""

    class_name: str
    module: str
    method: str
    title: str


def _entry(names: _Names, heading: _Item, body: list[_Item], path: str) -> CatalogEntry:
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
        class_name=names.class_name,
        module=names.module,
        method=names.method,
        title=names.title,
        kind=EntryKind.MODULE if not names.class_name else _kind(fence.code),
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
    _, unclosed = marker_pairs(fence.code.split("\n"))
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
    if any(line.strip() == "```" for line in lines) or marker_pairs(lines)[1] is not None:
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
