"""Read and write patch files and the patch index; every file round-trips byte for byte.

A patch file is a header of ``key: value`` lines, a line ``---``, then the code verbatim::

    omni-port-patch: 1
    id: npu_ar_model_runner.NPUARModelRunner.execute_model.block-2
    type: block
    ...
    path: with record_function_or_nullcontext('prepare input'):
    before: deferred_state_corrections_fn = self._update_states(scheduler_output)
    ---
    <code>

Repeated keys (``path``, ``before``, ``after``, ``replaces`` and their ``counterpart-``
forms, the block's place in omni's GPU runner) form lists, in order. A value
that does not fit on one line is written as ``key:: "json string"``. The index
(``omni-port.index``) lists modules and their pieces in output order.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TypeVar

from omni_port.errors import BadInput
from omni_port.model import (
    Anchor,
    Block,
    BlockKind,
    Chunk,
    ClassHeader,
    Code,
    Copy,
    Edge,
    ModulePatches,
    Origin,
    PatchSet,
    Piece,
    Resolution,
)
from omni_port.patches.validate import check_code

_E = TypeVar("_E", BlockKind, Edge)

FORMAT = "1"
INDEX_NAME = "omni-port.index"
SEPARATOR = "---"


# --- writing --------------------------------------------------------------------------------


def render_piece(piece: Piece) -> str:
    """The text of one patch file."""
    header = [("omni-port-patch", FORMAT), ("id", piece.id)]
    header.extend(_fields(piece))
    lines = [_header_line(key, value) for key, value in header]
    return "\n".join(lines) + f"\n{SEPARATOR}\n" + _code(piece)


def _code(piece: Piece) -> str:
    if isinstance(piece, Copy):
        return piece.leading
    return piece.code


def _fields(piece: Piece) -> list[tuple[str, str]]:
    if isinstance(piece, Chunk):
        return [
            ("type", "chunk"),
            ("owner", piece.owner),
            ("name", piece.name),
            ("marked", _yes(piece.marked)),
            ("title", piece.title),
            ("origin", str(piece.origin)),
        ]
    if isinstance(piece, ClassHeader):
        return [
            ("type", "class"),
            ("name", piece.name),
            ("body-indent", json.dumps(piece.body_indent)),
            ("origin", str(piece.origin)),
        ]
    if isinstance(piece, Copy):
        upstream = f"{piece.upstream_owner}.{piece.upstream_name}".lstrip(".")
        fields = [("type", "copy"), ("owner", piece.owner), ("name", piece.name)]
        fields.append(("upstream", upstream))
        if piece.similarity is not None:
            fields.append(("similarity", f"{piece.similarity:.3f}"))
        fields.append(("origin", str(piece.origin)))
        return fields
    return _block_fields(piece)


def _block_fields(block: Block) -> list[tuple[str, str]]:
    anchor = block.anchor
    fields = [
        ("type", "block"),
        ("kind", block.kind.value),
        ("marked", _yes(block.marked)),
        ("title", block.title),
        ("owner", block.owner),
        ("member", block.member),
        ("origin", str(block.origin)),
        ("edge", anchor.edge.value),
    ]
    fields += [("path", key) for key in anchor.path]
    fields += [("before", key) for key in anchor.before]
    fields += [("after", key) for key in anchor.after]
    fields += [("replaces", key) for key in anchor.replaced]
    if anchor.resolution is not None:
        fields += _resolution_fields(anchor.resolution)
    fields += [("fenced", side) for side, on in zip(_FENCED, block.fenced, strict=True) if on]
    counterpart = block.counterpart
    if counterpart is not None:
        fields.append(("counterpart-edge", counterpart.edge.value))
        fields += [("counterpart-path", key) for key in counterpart.path]
        fields += [("counterpart-before", key) for key in counterpart.before]
        fields += [("counterpart-after", key) for key in counterpart.after]
    return fields


def _resolution_fields(resolution: Resolution) -> list[tuple[str, str]]:
    fields = [("resolved-path", key) for key in resolution.path]
    fields.append(("resolved-after", resolution.after))
    fields += [("resolved-replaces", key) for key in resolution.replaces]
    if resolution.code is not None:
        fields.append(("resolved-code", resolution.code))
        fields.append(("resolved-for", resolution.made_for))
    if resolution.by:
        fields.append(("resolved-by", resolution.by))
    if resolution.why:
        fields.append(("resolved-why", resolution.why))
    return fields


#: The ``fenced`` values: the sides of a region's part that hold upstream code.
_FENCED = ("before", "after")


def _fenced(header: _Header) -> tuple[bool, bool]:
    found = header.values.get("fenced", [])
    for number, side in found:
        if side not in _FENCED:
            message = f"fenced must be one of: {', '.join(_FENCED)}"
            raise BadInput.at(Code.OP201, header.path, number, message)
    sides = {side for _, side in found}
    return ("before" in sides, "after" in sides)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _header_line(key: str, value: str) -> str:
    if "\n" in value or "\r" in value or value != value.strip():
        return f"{key}:: {json.dumps(value)}"
    return f"{key}: {value}" if value else f"{key}:"


def piece_filename(module: ModulePatches, piece: Piece) -> str:
    """Relative path of a piece's file: ``<module stem>/<id without the stem>.patch``.

    Raises BadInput (OP203) when the module name or the id would put the file anywhere
    but one folder below the patches directory (a source file named ``...py``, an id
    edited into ``../x``).
    """
    stem = module.name.removesuffix(".py")
    local = piece.id.removeprefix(stem + ".")
    if not (_plain_name(stem) and _plain_name(local)):
        raise BadInput.at(
            Code.OP203,
            module.source or module.name,
            0,
            f"module {module.name!r} and piece {piece.id!r} do not make a file name inside "
            "the patches directory",
        )
    return f"{stem}/{local}.patch"


def _plain_name(name: str) -> bool:
    """A single path component: not empty, not ``.`` or ``..``, no separator or NUL."""
    return name not in ("", ".", "..") and not any(c in name for c in "/\\\0")


def render_index(patches: PatchSet, tool: str) -> str:
    lines = [f"omni-port-index: {FORMAT}", f"tool: {tool}"]
    for module in patches.modules:
        lines += [
            "",
            f"module: {module.name}",
            f"source: {module.source}",
            f"source-sha256: {module.source_sha256}",
            _header_line("base", module.base),
            _header_line("base-sha256", module.base_sha256),
            f"newline: {'crlf' if module.newline == chr(13) + chr(10) else 'lf'}",
            _header_line("unused-imports", " ".join(module.unused_imports)),
        ]
        lines += ["bom: yes"] if module.bom else []
        lines += [f"piece: {piece_filename(module, p)}" for p in module.pieces]
    return "\n".join(lines) + "\n"


def render_patch_set(patches: PatchSet, tool: str) -> dict[str, str]:
    """Every file of a patches directory, by relative path."""
    files = {INDEX_NAME: render_index(patches, tool)}
    for module in patches.modules:
        for piece in module.pieces:
            files[piece_filename(module, piece)] = render_piece(piece)
    return files


# --- reading --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Header:
    path: str
    values: dict[str, list[tuple[int, str]]]

    def one(self, key: str, default: str | None = None) -> str:
        found = self.values.get(key)
        if not found:
            if default is not None:
                return default
            raise BadInput.at(Code.OP201, self.path, 1, f"missing header field {key!r}")
        if len(found) > 1:
            raise BadInput.at(Code.OP201, self.path, found[1][0], f"field {key!r} given twice")
        return found[0][1]

    def many(self, key: str) -> tuple[str, ...]:
        return tuple(value for _, value in self.values.get(key, []))

    def line_of(self, key: str) -> int:
        found = self.values.get(key)
        return found[0][0] if found else 1


def _parse_header(path: str, lines: list[str]) -> _Header:
    values: dict[str, list[tuple[int, str]]] = {}
    for number, line in enumerate(lines, start=1):
        key, sep, rest = line.partition(":")
        if not sep or not key or key != key.strip() or " " in key:
            raise BadInput.at(Code.OP201, path, number, f"not a 'key: value' header line: {line!r}")
        if rest.startswith(":"):
            value = _json_value(path, number, rest[1:].strip())
        elif rest and not rest.startswith(" "):
            raise BadInput.at(Code.OP201, path, number, "a space must follow the ':'")
        else:
            value = rest[1:]
        values.setdefault(key, []).append((number, value))
    return _Header(path, values)


def _json_value(path: str, number: int, text: str) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput.at(Code.OP201, path, number, f"bad JSON string: {exc.msg}") from None
    if not isinstance(value, str):
        raise BadInput.at(Code.OP201, path, number, "a '::' value must be a JSON string")
    return value


def parse_piece(text: str, path: str, code_must_parse: bool = True) -> Piece:
    """Parse one patch file; BadInput names the bad line: OP201 in the header, OP002 (with
    a caret) in code that does not parse (unless ``code_must_parse`` is False)."""
    lines = text.split("\n")
    try:
        split = lines.index(SEPARATOR)
    except ValueError:
        raise BadInput.at(Code.OP201, path, 1, f"no {SEPARATOR!r} line before the code") from None
    header = _parse_header(path, lines[:split])
    if header.one("omni-port-patch", "") != FORMAT:
        raise BadInput.at(Code.OP201, path, 1, f"not an omni-port patch (format {FORMAT})")
    code = "\n".join(lines[split + 1 :])
    if not _plain_name(header.one("id")):
        raise BadInput.at(
            Code.OP201, path, header.line_of("id"), "an id is one name: no '/', '\\' or '..'"
        )
    kind = header.one("type")
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise BadInput.at(Code.OP201, path, header.line_of("type"), f"unknown type {kind!r}")
    _known_fields(header, kind)
    piece = builder(header, code)
    if code_must_parse:
        check_code(piece, path, text, split + 2)
    return piece


def _origin(header: _Header) -> Origin:
    text = header.one("origin")
    where, _, span = text.rpartition(":")
    start, _, end = span.partition("-")
    if not where or not start.isdigit() or not end.isdigit():
        raise BadInput.at(
            Code.OP201, header.path, header.line_of("origin"), "origin must be path:start-end"
        )
    return Origin(where, int(start), int(end))


def _flag(header: _Header, key: str) -> bool:
    value = header.one(key)
    if value not in ("yes", "no"):
        raise BadInput.at(Code.OP201, header.path, header.line_of(key), f"{key} must be yes or no")
    return value == "yes"


def _chunk(header: _Header, code: str) -> Chunk:
    return Chunk(
        header.one("id"),
        header.one("owner"),
        header.one("name"),
        code,
        _origin(header),
        _flag(header, "marked"),
        header.one("title", ""),
    )


def _class(header: _Header, code: str) -> ClassHeader:
    indent = _json_value(header.path, header.line_of("body-indent"), header.one("body-indent"))
    return ClassHeader(header.one("id"), header.one("name"), code, indent, _origin(header))


def _copy(header: _Header, code: str) -> Copy:
    upstream_owner, _, upstream_name = header.one("upstream").rpartition(".")
    similarity = header.one("similarity", "")
    try:
        value = float(similarity) if similarity else None
    except ValueError:
        raise BadInput.at(
            Code.OP201, header.path, header.line_of("similarity"), "similarity must be a number"
        ) from None
    return Copy(
        header.one("id"),
        header.one("owner"),
        header.one("name"),
        upstream_owner,
        upstream_name,
        code,
        _origin(header),
        value,
    )


def _block(header: _Header, code: str) -> Block:
    kind = _enum(header, "kind", BlockKind)
    edge = _enum(header, "edge", Edge)
    anchor = Anchor(
        header.many("path"),
        header.many("before"),
        header.many("after"),
        header.many("replaces"),
        edge,
        _resolution(header),
    )
    return Block(
        header.one("id"),
        header.one("owner"),
        header.one("member"),
        kind,
        _flag(header, "marked"),
        code,
        anchor,
        _origin(header),
        header.one("title", ""),
        _counterpart(header),
        _fenced(header),
    )


def _resolution(header: _Header) -> Resolution | None:
    """The recorded resolution; OP201 at the first ``resolved-*`` field when
    ``resolved-after`` (which every resolution has) is missing: a resolution half-written
    by hand is never silently ignored."""
    if "resolved-after" not in header.values:
        stray = [(line, key) for key in _RESOLVED for line, _ in header.values.get(key, [])]
        if stray:
            line, key = min(stray)
            message = f"{key} without resolved-after: a resolution names the statement it follows"
            raise BadInput.at(Code.OP201, header.path, line, message)
        return None
    code = header.one("resolved-code", "") if "resolved-code" in header.values else None
    made_for = header.one("resolved-for", "")
    if code is not None and not made_for:
        message = "resolved-code without resolved-for (the sha256 of the code it replaces)"
        raise BadInput.at(Code.OP201, header.path, header.line_of("resolved-code"), message)
    return Resolution(
        header.one("resolved-after"),
        header.many("resolved-path"),
        header.many("resolved-replaces"),
        code,
        made_for,
        header.one("resolved-by", ""),
        header.one("resolved-why", ""),
    )


#: The fields of a recorded resolution.
_RESOLVED = (
    "resolved-path",
    "resolved-after",
    "resolved-replaces",
    "resolved-code",
    "resolved-for",
    "resolved-by",
    "resolved-why",
)


def _counterpart(header: _Header) -> Anchor | None:
    if "counterpart-edge" not in header.values:
        return None
    return Anchor(
        header.many("counterpart-path"),
        header.many("counterpart-before"),
        header.many("counterpart-after"),
        (),
        _enum(header, "counterpart-edge", Edge),
    )


def _enum(header: _Header, key: str, enum: type[_E]) -> _E:
    value = header.one(key)
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum)
        raise BadInput.at(
            Code.OP201, header.path, header.line_of(key), f"{key} must be one of: {allowed}"
        ) from None


_BUILDERS: dict[str, Callable[[_Header, str], Piece]] = {
    "chunk": _chunk,
    "class": _class,
    "copy": _copy,
    "block": _block,
}

#: The header fields of every piece, then those of each type: any other field is a typo
#: (``resolved-aftr``) that would silently lose what it records, so it is refused.
_COMMON = ("omni-port-patch", "id", "type")
_FIELDS: dict[str, tuple[str, ...]] = {
    "chunk": ("owner", "name", "marked", "title", "origin"),
    "class": ("name", "body-indent", "origin"),
    "copy": ("owner", "name", "upstream", "similarity", "origin"),
    "block": (
        "kind",
        "marked",
        "title",
        "owner",
        "member",
        "origin",
        "edge",
        "path",
        "before",
        "after",
        "replaces",
        *_RESOLVED,
        "fenced",
        "counterpart-edge",
        "counterpart-path",
        "counterpart-before",
        "counterpart-after",
    ),
}


def _known_fields(header: _Header, kind: str) -> None:
    """OP201 at the first header field a piece of type ``kind`` does not have."""
    known = (*_COMMON, *_FIELDS[kind])
    for key, found in header.values.items():
        if key in known:
            continue
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        message = f"unknown header field {key!r} for a {kind} piece{hint}"
        raise BadInput.at(Code.OP201, header.path, found[0][0], message)


@dataclass(frozen=True, slots=True)
class IndexModule:
    """One module entry of the index, before its pieces are read."""

    line: int
    fields: dict[str, str]
    pieces: tuple[tuple[int, str], ...]


def parse_index(text: str, path: str) -> Iterator[IndexModule]:
    """Module entries of an index file, with the line of each entry for diagnostics."""
    lines = text.split("\n")
    if not lines or lines[0] != f"omni-port-index: {FORMAT}":
        raise BadInput.at(Code.OP204, path, 1, f"not an omni-port index (format {FORMAT})")
    current: tuple[int, dict[str, str], list[tuple[int, str]]] | None = None
    listed: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.startswith("tool:"):
            continue
        key, sep, rest = line.partition(":")
        if not sep:
            raise BadInput.at(Code.OP204, path, number, f"not a 'key: value' line: {line!r}")
        value = (
            _json_value(path, number, rest[1:].strip()) if rest.startswith(":") else rest.strip()
        )
        if key == "module":
            if current is not None:
                yield IndexModule(current[0], current[1], tuple(current[2]))
            current = (number, {"module": value}, [])
        elif current is None:
            raise BadInput.at(Code.OP204, path, number, f"{key!r} before the first 'module:' line")
        elif key == "piece":
            _check_relative(path, number, value)
            _check_once(path, number, value, listed)
            current[2].append((number, value))
        elif key not in _INDEX_FIELDS:
            close = difflib.get_close_matches(key, _INDEX_FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise BadInput.at(Code.OP204, path, number, f"unknown index field {key!r}{hint}")
        else:
            current[1][key] = value
    if current is not None:
        yield IndexModule(current[0], current[1], tuple(current[2]))


#: The fields of a module entry of the index, besides ``module`` and ``piece``.
_INDEX_FIELDS = (
    "source",
    "source-sha256",
    "base",
    "base-sha256",
    "newline",
    "unused-imports",
    "bom",
)


def _check_once(path: str, number: int, name: str, listed: dict[str, int]) -> None:
    """OP201 at the second listing of a piece (``listed``: name -> line of the first): read
    twice, a block would be spliced twice, or conflict with itself."""
    first = listed.setdefault(PurePosixPath(name).as_posix(), number)
    if first != number:
        message = f"piece {name} is listed twice (first at line {first}); list each piece once"
        raise BadInput.at(Code.OP201, path, number, message)


def _check_relative(path: str, number: int, name: str) -> None:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or not name.endswith(".patch"):
        raise BadInput.at(
            Code.OP203,
            path,
            number,
            f"piece {name!r} is not a .patch file inside the patches directory",
        )


def build_module(entry: IndexModule, pieces: tuple[Piece, ...], path: str) -> ModulePatches:
    """The module an index entry describes; OP203 for a module name that is not a plain
    file name (sync writes the module under that name), OP204 for a missing field."""
    fields = entry.fields
    name = fields.get("module", "")
    if not (_plain_name(name) and _plain_name(name.removesuffix(".py"))):
        raise BadInput.at(
            Code.OP203,
            path,
            entry.line,
            f"module {name!r} is not a plain file name (the output would land outside "
            "the output directory)",
        )
    try:
        return ModulePatches(
            name=fields["module"],
            source=fields.get("source", ""),
            source_sha256=fields.get("source-sha256", ""),
            base=fields.get("base", ""),
            base_sha256=fields.get("base-sha256", ""),
            pieces=pieces,
            newline="\r\n" if fields.get("newline") == "crlf" else "\n",
            unused_imports=tuple(fields.get("unused-imports", "").split()),
            bom=fields.get("bom") == "yes",
        )
    except KeyError as exc:
        raise BadInput.at(
            Code.OP204, path, entry.line, f"module entry lacks {exc.args[0]!r}"
        ) from None
