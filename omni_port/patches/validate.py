"""What a patch set must hold before any stage uses it: code that parses, one piece per id,
and blocks that belong to a member their module copies.

A patch file is a maintainer's to edit (titles, resolutions), so it is an input like any
other: what is wrong in it is exit 2 at its file and line, never an internal error or a
conflict made up from a block that could not be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omni_port.errors import BadInput
from omni_port.model import Block, BlockKind, Chunk, ClassHeader, Code, Copy, Piece
from omni_port.pyast.parser import parse_ast
from omni_port.pyast.syntax import syntax_error
from omni_port.report import display_path

#: Bodies that complete a lone compound-statement header (a header or signature edit, a
#: class header) so that it parses; the first that fits is taken.
_BODIES = ("\n    pass\n", "\n    pass\nfinally:\n    pass\n", "\n    case _:\n        pass\n")


def check_code(piece: Piece, path: str, text: str, first_line: int) -> None:
    """Raise BadInput (OP002, the line echoed with a caret) when ``piece``'s code, which
    starts at line ``first_line`` of the patch file ``text``, is not valid Python."""
    code, wrapped = _compilable(piece)
    if not code.strip():
        return
    error = _first_error(code, wrapped)
    if error is None:
        return
    line = first_line + max((error.lineno or 1) - (1 if wrapped == "class" else 0), 1) - 1
    col = error.offset or 1
    reason = f"the code of this patch does not parse: {error.msg}"
    raise syntax_error(path, text, line, col, reason)


def _compilable(piece: Piece) -> tuple[str, str]:
    """The code to compile and how it must be completed: ``header`` (a lone header takes
    a body), ``class`` (class-level code takes a class around it) or ``""``."""
    if isinstance(piece, Copy):
        return piece.leading, ""
    if isinstance(piece, ClassHeader):
        return piece.code, "header"
    if isinstance(piece, Chunk):
        return piece.code, "class" if piece.owner else ""
    if piece.kind in (BlockKind.HEADER, BlockKind.SIGNATURE):
        return piece.code, "header"
    return piece.code, ""


def _first_error(code: str, wrapped: str) -> SyntaxError | None:
    if wrapped == "class":
        attempts = ["class _:\n" + code + "\n" + _class_pass(code)]
    elif wrapped == "header":
        attempts = [code.rstrip("\n") + body for body in _BODIES]
    else:
        attempts = [code]
    first: SyntaxError | None = None
    for attempt in attempts:
        try:
            parse_ast(attempt)  # too deep to walk is refused here too (TooDeep)
        except SyntaxError as exc:
            first = first or exc
        except ValueError:  # a NUL byte
            return SyntaxError("a NUL byte in the code", ("", 1, 1, ""))
        else:
            return None
    return first


def _class_pass(code: str) -> str:
    """A ``pass`` at the indentation of the first statement of class-level code (which
    may hold comments only)."""
    for line in code.split("\n"):
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return line[: len(line) - len(stripped)] + "pass\n"
    return "    pass\n"


@dataclass(frozen=True, slots=True)
class ReadPiece:
    """A piece as read, with where it came from (for diagnostics)."""

    piece: Piece
    #: The patch file, as given.
    path: str
    #: The patch file's text.
    text: str
    #: The line of the index that lists it.
    index_line: int


def check_set(pieces: Sequence[ReadPiece]) -> None:
    """Raise BadInput (OP201) for a piece whose id another piece has too, naming both."""
    seen: dict[str, str] = {}
    for read in pieces:
        other = seen.setdefault(read.piece.id, read.path)
        if other != read.path:
            line = header_line(read.text, "id")
            message = (
                f"id {read.piece.id} is also the id of {display_path(other)}; ids must be unique"
            )
            raise BadInput.at(Code.OP201, read.path, line, message)


def check_members(pieces: Sequence[ReadPiece], index_path: str) -> None:
    """Raise BadInput for a block that does not follow the copy of the member it names:
    OP201 at its ``member:`` (or ``owner:``) line when the module copies no such member,
    OP204 at the index line when the index lists it elsewhere."""
    current: Piece | None = None
    copies = {(r.piece.owner, r.piece.name) for r in pieces if isinstance(r.piece, Copy)}
    for read in pieces:
        piece = read.piece
        if not isinstance(piece, Block):
            current = piece
            continue
        named = (piece.owner, piece.member)
        if named not in copies:
            key = "member" if piece.owner in {owner for owner, _ in copies} else "owner"
            shown = ".".join(part for part in named if part)
            message = f"{key} names no method this module copies: there is no copy of {shown}"
            raise BadInput.at(Code.OP201, read.path, header_line(read.text, key), message)
        if not isinstance(current, Copy) or (current.owner, current.name) != named:
            message = f"{piece.id} must follow the copy of {'.'.join(p for p in named if p)}"
            raise BadInput.at(Code.OP204, index_path, read.index_line, message)


def header_line(text: str, key: str) -> int:
    """The line of a patch file's header field ``key`` (1 when it has none)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line == "---":
            break
        if line.startswith((f"{key}:", f"{key}::")):
            return number
    return 1
