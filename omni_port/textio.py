"""File I/O at the edges: decoding with line-ending detection, and atomic writes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code

BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class SourceText:
    """A decoded text file: content with "\\n" line endings plus what to restore."""

    #: Path as given by the user.
    path: str
    #: Content, BOM removed, line endings normalized to "\n".
    text: str
    #: Dominant line ending of the file ("\n" or "\r\n").
    newline: str
    #: Whether the file started with a UTF-8 byte order mark.
    bom: bool
    #: sha256 of the raw bytes.
    sha256: str


def decode(data: bytes, path: str) -> SourceText:
    """Decode UTF-8 bytes, remembering BOM and line endings.

    Raises BadInput (OP001) for bytes that are not UTF-8, naming the first bad line.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadInput.at(
            Code.OP001, path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})"
        ) from None
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return SourceText(path, text, newline, bom, hashlib.sha256(data).hexdigest())


def read_source(path: str | Path) -> SourceText:
    """Read and decode one file; OP001 when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadInput.at(Code.OP001, str(path), 0, f"cannot read: {exc.strerror}") from None
    return decode(data, str(path))


def encode(text: str, newline: str = "\n", bom: bool = False) -> bytes:
    """Encode "\\n"-normalized text back to the conventions of its source."""
    if newline != "\n":
        text = text.replace("\n", newline)
    return ((BOM if bom else "") + text).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old or the new content, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_tree(root: Path, files: Mapping[str, bytes], remove: tuple[str, ...] = ()) -> None:
    """Write several files under ``root``: all temp files first, then the renames.

    A failure while preparing leaves every previous file untouched; the renames at the
    end are individually atomic.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for rel, data in sorted(files.items()):
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            staged.append((tmp, target))
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for tmp, target in staged:
        os.replace(tmp, target)
    for rel in remove:
        with contextlib.suppress(FileNotFoundError):
            (root / rel).unlink()
