"""Release archives read as text: a wheel (a zip) or an sdist (a tar.gz, or an old zip).

A member is named by its path inside the package tree, the same for both kinds: an
sdist's files sit in one top folder (``vllm_ascend-0.30.0rc2/``), which is left off.
Nothing is extracted to disk, and only regular files are read: a link inside an archive
is never followed, and an unsafe name (absolute, ``..``, a backslash) is refused.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from omni_port.errors import BadInput
from omni_port.model import Code

#: A wheel's metadata, and an sdist's (at the top of the tree).
_WHEEL_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")
_SDIST_METADATA = "PKG-INFO"
#: A wheel's RECORD: every file of the wheel with its sha256 and size (PEP 376, PEP 427).
_WHEEL_RECORD = re.compile(r"[^/]+\.dist-info/RECORD")

#: What a caller wants of an archive: a predicate over member names (paths inside the
#: package tree, an sdist's top folder left off).
Wanted = Callable[[str], bool]


def is_wheel(archive: Path) -> bool:
    return archive.name.endswith(".whl")


def kind(archive: Path) -> str:
    """``wheel`` or ``sdist``, for messages."""
    return "wheel" if is_wheel(archive) else "sdist"


def safe_member(name: str) -> bool:
    """A member name that stays inside the tree it is read into."""
    pure = PurePosixPath(name)
    return bool(name) and not (pure.is_absolute() or ".." in pure.parts or "\\" in name)


def is_whole(archive: Path) -> bool:
    """Whether ``archive`` reads to its end (a truncated download does not)."""
    try:
        for _ in _entries(archive, lambda name: False, is_wheel(archive)):
            pass
    except BadInput:
        return False
    return True


def read_member(archive: Path, member: str) -> bytes:
    """One file of the package tree in ``archive``; refuses unsafe names (OP003)."""
    if not safe_member(member):
        raise _bad(archive, f"refusing unsafe member name {member!r}")
    for _, data in _entries(archive, lambda name: name == member, is_wheel(archive)):
        return data
    raise _bad(archive, f"the {kind(archive)} has no {member}")


def python_members(archive: Path, package: str) -> dict[str, bytes]:
    """Every ``.py`` file of ``package`` in ``archive``, by member path."""
    return members(archive, python_sources(package))


def members(
    archive: Path, wanted: Wanted, wheel: bool | None = None, first: bool = False
) -> dict[str, bytes]:
    """Every regular file of ``archive`` that ``wanted`` takes, by member path, in archive
    order (``wheel``: whether it is one, when its name does not say: a temporary file;
    ``first``: only the first such file, reading no further, as an sdist is read from its
    start). Raises BadInput (OP003) when the archive is damaged or holds an unsafe name."""
    found: dict[str, bytes] = {}
    for name, data in _entries(archive, wanted, is_wheel(archive) if wheel is None else wheel):
        found.setdefault(name, data)
        if first:
            break
    return found


def python_sources(package: str) -> Wanted:
    """The ``.py`` files of ``package`` (and of its subpackages)."""
    prefix = package + "/"
    return lambda name: name.startswith(prefix) and name.endswith(".py")


def metadata_file(wheel: bool) -> Wanted:
    """A wheel's ``METADATA`` (in its ``.dist-info``), or an sdist's ``PKG-INFO``."""
    if wheel:
        return lambda name: _WHEEL_METADATA.fullmatch(name) is not None
    return lambda name: name == _SDIST_METADATA


def any_metadata(name: str) -> bool:
    """A wheel's ``METADATA`` or an sdist's ``PKG-INFO``: what either kind of archive holds
    (a wheel has no ``PKG-INFO`` at its top, an sdist no ``.dist-info``)."""
    return name == _SDIST_METADATA or _WHEEL_METADATA.fullmatch(name) is not None


def metadata(archive: Path) -> str | None:
    """A wheel's ``METADATA`` or an sdist's ``PKG-INFO``, as text; None when it has none."""
    wheel = is_wheel(archive)
    for _, data in _entries(archive, metadata_file(wheel), wheel):
        return data.decode("utf-8", "replace")
    return None


# --- a wheel's RECORD -------------------------------------------------------------------------


def is_record(name: str) -> bool:
    """Whether ``name`` is a wheel's RECORD."""
    return _WHEEL_RECORD.fullmatch(name) is not None


def record_digest(data: bytes) -> str:
    """The RECORD form of a sha256: urlsafe base64 without padding (PEP 376)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def record_line(member: str, data: bytes) -> str:
    """The RECORD row of ``member`` holding ``data`` (no newline)."""
    return f"{member},sha256={record_digest(data)},{len(data)}"


def parse_record(text: str) -> dict[str, tuple[str, int]]:
    """(sha256 in RECORD form, size) of every file a RECORD lists with a sha256, by name.

    Rows without one (the RECORD itself, signatures) are left out: nothing can be
    checked against them. A RECORD is CSV, so a name holding a comma is quoted.
    """
    rows: dict[str, tuple[str, int]] = {}
    for row in csv.reader(text.splitlines()):
        if len(row) != 3 or not row[1].startswith("sha256=") or not row[2].isdigit():
            continue
        rows[row[0]] = (row[1].removeprefix("sha256="), int(row[2]))
    return rows


def unlike_record(member: str, data: bytes, record: dict[str, tuple[str, int]]) -> str:
    """Why ``data`` is not the ``member`` the RECORD lists ("" when it is)."""
    listed = record.get(member)
    if listed is None:
        return f"{member} is not listed with a sha256 in the wheel's RECORD"
    if (record_digest(data), len(data)) != listed:
        return f"{member} does not match the sha256 the wheel's RECORD gives it"
    return ""


def _entries(archive: Path, wanted: Wanted, wheel: bool) -> Iterator[tuple[str, bytes]]:
    """(member, bytes) of every regular file ``wanted`` takes, in archive order.

    Every name is checked, wanted or not: an archive holding an unsafe name is refused.
    Raises BadInput (OP003) when the archive is damaged or unreadable.
    """
    try:
        if zipfile.is_zipfile(archive):
            yield from _zip_entries(archive, wanted, sdist=not wheel)
        elif wheel:
            raise _bad(archive, "not a wheel: not a zip archive (a damaged download?)")
        else:
            yield from _tar_entries(archive, wanted)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise _bad(archive, f"unreadable {kind(archive)}: {exc}") from None


def _zip_entries(archive: Path, wanted: Wanted, sdist: bool) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(archive) as opened:
        for info in opened.infolist():
            name = _member_name(archive, info.filename, sdist)
            if name and not info.is_dir() and wanted(name):
                yield name, opened.read(info)


def _tar_entries(archive: Path, wanted: Wanted) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, "r:*") as opened:
        for info in opened:
            name = _member_name(archive, info.name, sdist=True)
            if not (name and info.isfile() and wanted(name)):
                continue
            handle = opened.extractfile(info)
            if handle is not None:
                yield name, handle.read()


def _member_name(archive: Path, name: str, sdist: bool) -> str:
    """The path inside the package tree ("" for an sdist's top folder itself)."""
    if not safe_member(name.rstrip("/")):
        raise _bad(archive, f"refusing unsafe member name {name!r}")
    if not sdist:
        return name
    _, slash, rest = name.partition("/")
    return rest if slash else ""


def _bad(archive: Path, reason: str) -> BadInput:
    return BadInput.at(Code.OP003, str(archive), 0, reason)
