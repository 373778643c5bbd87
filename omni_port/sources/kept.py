"""A release's Python sources kept in the cache: ``<cache>/src/<dist>-<version>/`` and a record.

The record (``python-sources.record``) lists every kept file with its sha256 and size, in
a wheel's RECORD form, and is written last: without it the folder is incomplete. Every
read checks each file against it, and a damaged copy is fetched again. A wheel's files
are checked against the wheel's own RECORD before they are kept (by range, or from the
whole archive); an sdist's come from the whole archive, checked against the index's hash.
A record of files read by range says so on its last line, so that a run that wants whole
archives does not take them. A release whose whole archive the cache keeps (an sdist) is
read from that archive each time instead: half a second, less than writing a thousand files.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources import archives, fetch
from omni_port.sources.fetch import Progress
from omni_port.sources.textio import write_atomic, writing

#: The record of the kept sources, written last.
RECORD_NAME = "python-sources.record"
#: The record's last line when its files were read by range.
_BY_RANGE = "# checked against the wheel's RECORD, read by range"

_T = TypeVar("_T")


class Damaged(Exception):
    """A kept source file is missing or differs from its record, or the record is unusable."""


def package_sources(
    dist: str, version: str, package: str, cache: Path, progress: Progress | None = None
) -> dict[str, bytes]:
    """Every ``.py`` file of ``package`` in ``dist==version``, by member path, in archive
    order: kept ones when complete and intact, else fetched and kept (the archive too,
    except vLLM's: only its sources are kept of a 300 MB wheel). Raises BadInput (OP003)
    when the release cannot be had or a file is unlike the wheel's RECORD."""
    folder = cache / "src" / f"{dist}-{version}"
    refetch = Refetch(dist, version, cache, progress)
    try:
        return kept_files(folder, package)
    except Damaged as damage:
        refetch.damaged(folder, damage)
    # What was just checked and kept, without reading it back (two thousand files of vLLM).
    return refetch.keep(folder, package)


def from_kept(
    folder: Path, package: str, fetch_again: Refetch, read: Callable[[Path, str], _T]
) -> _T:
    """``read`` of the kept sources in ``folder``; kept anew first when they are missing or
    damaged (``read`` raises ``Damaged``)."""
    try:
        return read(folder, package)
    except Damaged as damage:
        fetch_again.damaged(folder, damage)
    fetch_again.keep(folder, package)
    try:
        return read(folder, package)
    except Damaged as damage:  # pragma: no cover - only a concurrent writer gets here
        label = f"{fetch_again.dist}=={fetch_again.version}"
        raise BadInput.at(Code.OP003, label, 0, f"kept sources: {damage}") from None


class Refetch:
    """How the sources of one release are fetched and kept again."""

    def __init__(self, dist: str, version: str, cache: Path, progress: Progress | None) -> None:
        self.dist = dist
        self.version = version
        self.cache = cache
        self.progress = progress

    def damaged(self, folder: Path, damage: Damaged) -> None:
        """Say that kept sources are fetched again (not when there were none)."""
        if self.progress is not None and (folder / RECORD_NAME).is_file():
            label = f"{self.dist}=={self.version}"
            self.progress(f"kept sources of {label} are damaged ({damage}); fetching again")

    def keep(self, folder: Path, package: str) -> dict[str, bytes]:
        """Fetch the package's sources, check them, keep them in ``folder`` (the record
        last), and return them."""
        label = f"{self.dist}=={self.version}"
        sources = archives.python_sources(package)
        want = fetch.Want(
            lambda n: sources(n) or archives.is_record(n), f"the sources of {package}"
        )
        # vLLM's wheel is 300 MB of which 30 MB are sources: the sources are what is kept.
        whole = self.dist != "vllm"
        got = fetch.release_files(self.dist, self.version, want, self.cache, self.progress, whole)
        files = {name: data for name, data in got.files.items() if sources(name)}
        if got.kind == "wheel" and got.checked is fetch.Checked.ARCHIVE:
            _check_record(label, got)
        if not files and self.dist == "vllm":
            raise BadInput.at(Code.OP003, label, 0, f"the wheel holds no {package}/*.py")
        if whole and got.checked is fetch.Checked.ARCHIVE:
            # The whole archive is kept: reading it again costs less than a thousand files.
            return files
        keep(folder, files, got.checked)
        return files


def _check_record(label: str, got: fetch.Files) -> None:
    """Every Python file of a whole wheel checked against the wheel's RECORD."""
    record_text = next((data for name, data in got.files.items() if archives.is_record(name)), None)
    if record_text is None:
        raise BadInput.at(Code.OP003, label, 0, f"{got.archive}: the wheel has no RECORD")
    record = archives.parse_record(record_text.decode("utf-8", "replace"))
    for member, data in got.files.items():
        if archives.is_record(member):
            continue
        reason = archives.unlike_record(member, data, record)
        if reason:
            raise BadInput.at(Code.OP003, label, 0, f"{got.archive}: {reason}")


def keep(folder: Path, files: dict[str, bytes], checked: fetch.Checked) -> None:
    """Keep ``files`` in ``folder``, then their record (the commit point).

    Raises BadInput (OP006) naming the file that could not be written (a full disk),
    after removing the record and every file written: nothing half-written stays.
    """
    unsafe = next((member for member in files if not archives.safe_member(member)), None)
    if unsafe is not None:
        raise BadInput.at(Code.OP003, str(folder), 0, f"unsafe member name {unsafe!r}")
    lines = [archives.record_line(member, data) for member, data in files.items()]
    if checked is fetch.Checked.RECORD:
        lines.append(_BY_RANGE)
    record = folder / RECORD_NAME
    written: list[Path] = []
    try:
        # A record of older files no longer describes the folder once they are replaced.
        with writing(record):
            record.unlink(missing_ok=True)
        _write_files(folder, files, written)
        write_atomic(record, "".join(f"{line}\n" for line in lines).encode())
    except BadInput:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise


def _write_files(folder: Path, files: dict[str, bytes], written: list[Path]) -> None:
    """Write each of ``files`` below ``folder``, adding it to ``written`` before it is
    written (a file a full disk cut short is written too)."""
    made: set[Path] = set()
    for member, data in files.items():
        # No fsync per file (two thousand of them): the record, written atomically last,
        # is the commit point, and every read checks each file against it.
        target = folder / member
        written.append(target)
        with writing(target):
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            target.write_bytes(data)


def kept_files(folder: Path, package: str) -> dict[str, bytes]:
    """Every file the record of ``folder`` lists (all of ``package``), checked."""
    rows = _rows(folder)
    if any(not member.startswith(package + "/") for member, _, _ in rows):
        raise Damaged(f"the record lists files of another package than {package}")
    return {member: _checked(folder, member, digest, size) for member, digest, size in rows}


def kept_file(folder: Path, member: str) -> bytes | None:
    """``member`` of the kept sources in ``folder``, checked; None when the record lacks it."""
    for name, digest, size in _rows(folder):
        if name == member:
            return _checked(folder, name, digest, size)
    return None


def _rows(folder: Path) -> list[tuple[str, str, int]]:
    try:
        lines = (folder / RECORD_NAME).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        raise Damaged("no record") from None
    if lines and lines[-1] == _BY_RANGE:
        if fetch.current().downloads is fetch.Downloads.WHOLE:
            raise Damaged("read by range, and whole archives are asked for")
        lines.pop()
    return [_row(line) for line in lines]


def _row(line: str) -> tuple[str, str, int]:
    parts = line.rsplit(",", 2)
    if len(parts) != 3 or not parts[1].startswith("sha256=") or not parts[2].isdigit():
        raise Damaged(f"unreadable record line {line!r}")
    member = parts[0]
    if not archives.safe_member(member):
        raise Damaged(f"unsafe member name {member!r}")
    return member, parts[1].removeprefix("sha256="), int(parts[2])


def _checked(folder: Path, member: str, digest: str, size: int) -> bytes:
    try:
        data = (folder / member).read_bytes()
    except OSError:
        raise Damaged(f"{member} is missing") from None
    if len(data) != size or archives.record_digest(data) != digest:
        raise Damaged(f"{member} differs from its record")
    return data
