"""File I/O at the edges: decoding with line-ending detection, and atomic writes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.model import SourceText as SourceText  # what a read gives

BOM = "\ufeff"


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


def no_special_file(text: str) -> None:
    """Raise BadInput (OP001) when ``text`` names something that exists but is neither a
    regular file nor a folder (``/dev/null``, a FIFO, a socket): read as an input it would
    be empty or block, and "no such file" would be untrue. Anything else passes (a path
    that does not exist, a release spec), for the reader to judge."""
    try:
        mode = os.stat(text).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kinds = (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    message = f"{kind}, not a file or a folder: give a file, a folder or a release"
    raise BadInput.at(Code.OP001, text, 1, message)


def encode(text: str, newline: str = "\n", bom: bool = False) -> bytes:
    """Encode "\\n"-normalized text back to the conventions of its source."""
    if newline != "\n":
        text = text.replace("\n", newline)
    return ((BOM if bom else "") + text).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old or the new content, never a mix.

    A new file gets the mode ``open()`` gives one under the umask (``output_mode``); a file
    it replaces keeps its own mode (a 640 or 755 file stays so, as editors keep it). Raises
    BadInput (OP006) when it cannot be written (read-only location, full disk): the old file
    is left as it was.
    """
    _through_temp(path, lambda handle: handle.write(data))


@contextlib.contextmanager
def scratch_beside(path: Path) -> Iterator[Path]:
    """A new empty temporary file beside ``path``, removed when the block ends however it
    ends. Named as every write's temporary file, so one a killed run leaves is removed by
    the next write into the folder (``remove_dead_temps``); never a file in ``/tmp``.
    Writes into it are the caller's: ``writing(path)`` says when they fail."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_temps(path.parent)
        fd, tmp = temp_beside(path)
        os.close(fd)
    try:
        yield Path(tmp)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _through_temp(path: Path, fill: Callable[[BinaryIO], object]) -> None:
    """Fill a new temporary file beside ``path``, sync it, rename it onto ``path``."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_temps(path.parent)
        fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise unwritable(path, exc) from exc
        raise


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Raise BadInput (OP006) naming ``path`` for an OSError of the block: writes the
    helpers here do not make themselves (a download streamed into ``scratch_beside``'s
    file and renamed, files kept one by one), so that a full disk is one line, not a
    traceback. The block cleans up what it leaves (its ``finally`` runs first)."""
    try:
        yield
    except OSError as exc:
        raise unwritable(path, exc) from exc


def unwritable(path: Path, error: OSError) -> BadInput:
    """The one-line error (OP006) for a file that cannot be written."""
    reason = error.strerror or str(error)
    return BadInput.at(Code.OP006, str(path), 0, f"cannot write: {reason}")


def safe_relative(rel: str) -> bool:
    """Whether ``rel`` names a file below a root: relative, POSIX, no ``..``, no empty part."""
    parts = rel.split("/")
    return (
        bool(rel)
        and not rel.startswith("/")
        and "\\" not in rel
        and "\0" not in rel
        and not any(part in ("", ".", "..") for part in parts)
        and not (len(parts[0]) >= 2 and parts[0][1] == ":")
    )


def remove_dead_temps_under(root: Path, rels: Iterable[str]) -> None:
    """``remove_dead_temps`` in every folder the files ``rels`` (relative to ``root``) go to."""
    for folder in sorted({(root / rel).parent for rel in rels}):
        remove_dead_temps(folder)


def rename_all(staged: list[tuple[str, Path]]) -> None:
    """Rename every staged (temporary file, target) onto its target; on failure, restore
    the targets done so far (best effort) and raise BadInput (OP006) for an OS error."""
    done: list[tuple[Path, bytes | None]] = []
    target = Path()
    try:
        for tmp, target in staged:
            old = target.read_bytes() if target.is_file() else None
            os.replace(tmp, target)
            done.append((target, old))
    except BaseException as exc:
        for renamed, old in reversed(done):
            with contextlib.suppress(OSError):
                if old is None:
                    renamed.unlink()
                else:
                    _put_back(renamed, old)
        if isinstance(exc, OSError):
            raise unwritable(target, exc) from exc
        raise


def _put_back(target: Path, data: bytes) -> None:
    """Restore a file's previous bytes (best effort: the caller is already failing)."""
    with contextlib.suppress(BadInput):
        write_atomic(target, data)


def temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file in ``path``'s folder (so the final rename is atomic), open for writing.

    Its name carries this process's id (``.NAME.PID-XXXX.tmp``): a run killed before its
    renames leaves its temp files behind, and the next write into the folder removes those
    of processes that are gone (``remove_dead_temps``), never a live run's.
    """
    # Imported here: tempfile (and the random module it loads) is start-up time that
    # `check` on unchanged inputs, which writes nothing, should not pay.
    import tempfile

    mode = kept_mode(path)
    prefix = f".{path.name}.{os.getpid()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        # mkstemp makes the file 0600 whatever the umask: others could not read the outputs.
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp


#: How every temporary file of a write ends.
TEMP_SUFFIX = ".tmp"

_TEMP_NAME = re.compile(
    r"""^\.(?P<name>.+)      # a dot and the name of the file it was to become
    \.(?P<pid>[0-9]+)-       # the id of the process that wrote it
    [A-Za-z0-9_]+\.tmp$      # mkstemp's random part and the suffix
    """,
    re.VERBOSE,
)


#: The temp names of earlier versions, which carry no process id (``.NAME.XXXXXXXX.tmp``,
#: mkstemp's eight random characters): removed once they are older than ``LEGACY_AGE``.
_LEGACY_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
#: Seconds after which a legacy temp file is a killed run's: no write takes an hour.
LEGACY_AGE = 3600.0


def remove_dead_temps(folder: Path) -> list[str]:
    """Remove the temp files a killed run left in ``folder`` (those whose process is gone;
    an earlier version's, once an hour old); returns their names. Best effort: what cannot
    be listed or removed is left."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        if not _dead_temp(folder / name):
            continue
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
            removed.append(name)
    return removed


def _dead_temp(path: Path) -> bool:
    found = _TEMP_NAME.match(path.name)
    if found is not None:
        return not _alive(int(found.group("pid")))
    if _LEGACY_TEMP_NAME.match(path.name) is None:
        return False
    import time  # only here: most folders hold no legacy temp file

    try:
        return time.time() - path.stat().st_mtime > LEGACY_AGE
    except OSError:
        return False


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (on this machine)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or an id we cannot ask about: leave it
    return True


def kept_mode(path: Path) -> int:
    """The mode a write gives ``path``: its own when it exists, else ``output_mode``."""
    try:
        info = path.stat()
    except OSError:
        return output_mode()
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else output_mode()


def output_mode() -> int:
    """The mode ``open()`` gives a new file under this process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask
