"""Release archives read as text: a wheel (a zip) or an sdist (a tar.gz, or an old zip).

A member is named by its path inside the package tree, the same for both kinds: an
sdist's files sit in one top folder (``vllm_ascend-0.30.0rc2/``), which is left off.
Nothing is extracted to disk, and only regular files are read: a link inside an archive
is never followed, and an unsafe name (absolute, ``..``, a backslash) is refused.
"""

from __future__ import annotations

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
        for _ in _entries(archive, lambda name: False):
            pass
    except BadInput:
        return False
    return True


def read_member(archive: Path, member: str) -> bytes:
    """One file of the package tree in ``archive``; refuses unsafe names (OP003)."""
    if not safe_member(member):
        raise _bad(archive, f"refusing unsafe member name {member!r}")
    for _, data in _entries(archive, lambda name: name == member):
        return data
    raise _bad(archive, f"the {kind(archive)} has no {member}")


def python_members(archive: Path, package: str) -> dict[str, bytes]:
    """Every ``.py`` file of ``package`` in ``archive``, by member path."""
    prefix = package + "/"
    return dict(_entries(archive, lambda name: name.startswith(prefix) and name.endswith(".py")))


def metadata(archive: Path) -> str | None:
    """A wheel's ``METADATA`` or an sdist's ``PKG-INFO``, as text; None when it has none."""
    if is_wheel(archive):
        wanted: Callable[[str], bool] = _WHEEL_METADATA.fullmatch  # type: ignore[assignment]
    else:

        def wanted(name: str) -> bool:
            return name == _SDIST_METADATA

    for _, data in _entries(archive, wanted):
        return data.decode("utf-8", "replace")
    return None


def _entries(archive: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """(member, bytes) of every regular file ``wanted`` takes, in archive order.

    Every name is checked, wanted or not: an archive holding an unsafe name is refused.
    Raises BadInput (OP003) when the archive is damaged or unreadable.
    """
    try:
        if zipfile.is_zipfile(archive):
            yield from _zip_entries(archive, wanted)
        elif is_wheel(archive):
            raise _bad(archive, "not a wheel: not a zip archive (a damaged download?)")
        else:
            yield from _tar_entries(archive, wanted)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise _bad(archive, f"unreadable {kind(archive)}: {exc}") from None


def _zip_entries(archive: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    sdist = not is_wheel(archive)
    with zipfile.ZipFile(archive) as opened:
        for info in opened.infolist():
            name = _member_name(archive, info.filename, sdist)
            if name and not info.is_dir() and wanted(name):
                yield name, opened.read(info)


def _tar_entries(archive: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
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
