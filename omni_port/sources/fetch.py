"""Files of a release on the package index: read by range from a remote wheel, or from the
release's whole archive, kept in the cache.

A release's archive is its wheel when it has one, else its sdist (``index.best``). Of a
wheel on an HTTP index only the files asked for are read (``sources.ranged``), each checked
against the wheel's RECORD, unless the run asks for whole archives; an sdist (a tar.gz),
a wheel on a server that serves no ranged reads and a wheel of a local index come whole,
checked against the index's hash, and are kept in ``<cache>/archives/``.

How a run fetches (members or whole archives, and who watches the transfers) is set once
for the run (``fetching``), not passed through every reader.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources.textio import remove_dead_temps, scratch_beside, write_atomic, writing

if TYPE_CHECKING:
    from omni_port.sources import archives, index

#: Where progress lines go (downloads); a command prints them on stderr.
Progress = Callable[[str], None]
#: Suffix of the file recording the sha256 of a kept member or archive.
DIGEST_SUFFIX = ".sha256"


class Downloads(enum.Enum):
    """What is downloaded of a wheel on an HTTP index."""

    MEMBERS = "members"
    """Only the files read, by ranged requests, each checked against the wheel's RECORD."""
    WHOLE = "whole"
    """The whole archive, checked against the index's sha256 (pip's guarantee)."""


class Checked(enum.Enum):
    """How the files of a release were checked when they were fetched."""

    ARCHIVE = "archive"
    """Read from a whole archive checked against the index's hash (or, when the index gives
    none, read to its end)."""
    RECORD = "record"
    """Read by range, each checked against the sha256 the wheel's RECORD gives it."""


@dataclass(frozen=True, slots=True)
class Fetching:
    """How a run fetches releases."""

    #: Members of remote wheels, or whole archives.
    downloads: Downloads = Downloads.MEMBERS
    #: Told how far each transfer has come (None: nobody watches).
    meter: index.Meter | None = None


_CURRENT: ContextVar[Fetching | None] = ContextVar("omni_port_fetching", default=None)


@contextlib.contextmanager
def fetching(how: Fetching) -> Iterator[None]:
    """Fetch releases as ``how`` says until the block ends (a command's run)."""
    token = _CURRENT.set(how)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Fetching:
    """How releases are fetched now (the defaults outside ``fetching``)."""
    return _CURRENT.get() or _DEFAULT


_DEFAULT = Fetching()


@dataclass(frozen=True, slots=True)
class Want:
    """Which files of a release are wanted."""

    #: Takes a member path (inside the package tree).
    test: archives.Wanted
    #: What they are, for progress lines (``vllm_ascend/worker/model_runner_v1.py``).
    what: str
    #: Only the first file ``test`` takes (one member, the metadata): an sdist is read no
    #: further than it.
    first: bool = False


@dataclass(frozen=True, slots=True)
class Files:
    """Files of a release, and how they were checked."""

    #: Bytes by member path, in archive order.
    files: dict[str, bytes]
    checked: Checked
    #: The archive's file name (its kind shows in messages).
    archive: str

    @property
    def kind(self) -> str:
        """``wheel`` or ``sdist``."""
        return "wheel" if self.archive.endswith(".whl") else "sdist"


def release_files(
    dist: str, version: str, want: Want, cache: Path, progress: Progress | None, keep: bool = True
) -> Files:
    """The files ``want`` takes of ``dist==version``: from its whole archive when the cache
    holds it intact, else from the index (by range, or the whole archive, kept unless
    ``keep`` is false: a 300 MB vLLM wheel of which only the Python sources are kept).

    Raises BadInput (OP003) when the release cannot be had, naming the nearest releases
    when it does not exist, or when what arrives is damaged or unlike its RECORD.
    """
    # Imported here: `check` on cached inputs opens no archive (tarfile is start-up time).
    from omni_port.sources import archives, index

    folder = cache / "archives" / f"{dist}-{version}"
    kept, damaged = _kept_archive(folder)
    if kept is not None:
        return Files(
            archives.members(kept, want.test, None, want.first), Checked.ARCHIVE, kept.name
        )
    sweep(cache / "archives")
    config, chosen = _chosen(dist, version)
    how = current()
    if chosen.wheel and how.downloads is Downloads.MEMBERS and index.serves_ranges(chosen):
        try:
            files = _ranged(chosen, want, config, progress)
            return Files(files, Checked.RECORD, chosen.filename)
        except index.NoRanges:
            if progress is not None:
                progress(f"the index serves no ranged reads of {chosen.filename}: downloading it")
    if progress is not None:
        again = " again (the cached archive is damaged)" if damaged else ""
        progress(f"downloading {chosen.filename} from the package index{again}")
    if keep:
        archive = _download(chosen, folder, config)
        found = archives.members(archive, want.test, chosen.wheel, want.first)
        return Files(found, Checked.ARCHIVE, chosen.filename)
    with scratch_beside(folder / chosen.filename) as scratch:
        _fill(chosen, scratch, folder / chosen.filename, config)
        found = archives.members(scratch, want.test, chosen.wheel, want.first)
    return Files(found, Checked.ARCHIVE, chosen.filename)


def fetch_archive(dist: str, version: str, cache: Path, progress: Progress | None = None) -> Path:
    """The cached whole archive of ``dist==version``: its wheel when it has one, else its
    sdist, downloaded on first use from the index pip is configured for.

    The archive is kept with the sha256 it had when it was checked against the index's
    hash; a kept archive that no longer matches it (a truncated copy) is fetched again.
    Concurrent runs on a cold cache each download into a temporary file of their own.
    Raises BadInput (OP003) when the release cannot be had.
    """

    folder = cache / "archives" / f"{dist}-{version}"
    kept, damaged = _kept_archive(folder)
    if kept is not None:
        return kept
    config, chosen = _chosen(dist, version)
    if progress is not None:
        again = " again (the cached archive is damaged)" if damaged else ""
        progress(f"downloading {chosen.filename} from the package index{again}")
    return _download(chosen, folder, config)


def _kept_archive(folder: Path) -> tuple[Path | None, bool]:
    """The intact archive kept in ``folder`` (None when there is none), and whether one is
    there that is not intact."""
    # Temporary files of a killed run start with a dot; digests are no archives.
    candidates = sorted(p for p in folder.glob("[!.]*") if not p.name.endswith(DIGEST_SUFFIX))
    kept = next((p for p in candidates if _intact(p)), None)
    return kept, kept is None and bool(candidates)


def _chosen(dist: str, version: str) -> tuple[index.IndexConfig, index.Artifact]:
    """pip's index settings, and the archive to read ``dist==version`` from."""
    from omni_port.sources import index

    label = f"{dist}=={version}"
    config = index.pip_config()
    try:
        found = index.artifacts(dist, config)
    except index.Unreachable as failure:
        raise BadInput.at(Code.OP003, label, 0, unreachable(label, str(failure))) from None
    chosen = index.best(found, version)
    if chosen is None:
        raise BadInput.at(Code.OP003, label, 0, missing(dist, version, found))
    return config, chosen


def _ranged(
    chosen: index.Artifact, want: Want, config: index.IndexConfig, progress: Progress | None
) -> dict[str, bytes]:
    """The files ``want`` takes of the remote wheel ``chosen``, by ranged reads.

    Raises NoRanges when the server serves none (before anything else was read), BadInput
    (OP003) when a read fails, the wheel is damaged or a file is unlike its RECORD.
    """
    from omni_port.sources import index, ranged

    label = f"{chosen.dist}=={chosen.version}"
    meter = current().meter
    if progress is not None:
        progress(f"reading {want.what} from {chosen.filename} (ranged requests)")

    def fetch(start: int, end: int) -> bytes:
        return index.read_range(chosen.url, start, end, config)

    def counter(done: int, total: int) -> None:
        if meter is not None:
            meter(f"{chosen.filename} ({want.what})", done, total)

    try:
        tail, size = index.read_tail(chosen.url, ranged.TAIL, config)
        return ranged.read(ranged.Remote(fetch, size, tail), want.test, counter)
    except index.DownloadFailed as failure:
        message = f"{chosen.filename} could not be read after {index.ATTEMPTS} attempts"
        raise BadInput.at(Code.OP003, label, 0, f"{message}: {failure}") from None
    except ranged.Damaged as damage:
        message = f"{chosen.filename} from the package index is damaged: {damage}"
        raise BadInput.at(Code.OP003, label, 0, message) from None
    except ranged.Unlike as unlike:
        message = (
            f"{chosen.filename} from the package index: {unlike}; nothing of it was kept "
            '(downloads = "whole" checks the whole archive against the index\'s sha256)'
        )
        raise BadInput.at(Code.OP003, label, 0, message) from None


def _download(chosen: index.Artifact, folder: Path, config: index.IndexConfig) -> Path:
    """``chosen`` downloaded, checked, and kept in ``folder`` with its sha256 (last).

    Raises BadInput (OP006) naming the archive when the cache cannot take it (a full disk),
    leaving nothing of it: an archive whose sha256 could not be written goes too.
    """
    final = folder / chosen.filename
    with scratch_beside(final) as scratch:
        _fill(chosen, scratch, final, config)
        with writing(final):
            os.replace(scratch, final)
    digest = file_sha256(final)
    try:
        write_atomic(final.with_name(final.name + DIGEST_SUFFIX), (digest + "\n").encode())
    except BadInput:
        with contextlib.suppress(OSError):
            final.unlink()
        raise
    return final


def _fill(chosen: index.Artifact, scratch: Path, target: Path, config: index.IndexConfig) -> None:
    """Download ``chosen`` into the temporary file ``scratch`` and check it; an OSError
    writing it (a full disk) is BadInput (OP006) naming ``target``, the file it is for.

    A run killed meanwhile leaves the file, named as every temporary file, which the next
    download into any release's folder removes (``sweep``).
    """
    from omni_port.sources import index

    label = f"{chosen.dist}=={chosen.version}"
    sweep(scratch.parent.parent)
    try:
        # index turns failed transfers into its own errors: an OSError is the file's (a
        # local index's file that fails to read is too rare to tell apart).
        with writing(target), scratch.open("r+b") as handle:
            index.download(chosen, handle, config, current().meter)
            handle.flush()
            os.fsync(handle.fileno())
    except (index.DownloadFailed, index.Unreachable) as failure:
        message = f"{chosen.filename} could not be downloaded after {index.ATTEMPTS} attempts"
        raise BadInput.at(Code.OP003, label, 0, f"{message}: {failure}") from None
    # Without the index's hash, reading the archive to its end is the check.
    if not chosen.hashes and not _whole(scratch, chosen.wheel):
        message = f"{chosen.filename} from the package index is damaged (truncated?)"
        raise BadInput.at(Code.OP003, label, 0, message)


def _whole(archive: Path, wheel: bool) -> bool:
    from omni_port.sources import archives

    try:
        archives.members(archive, lambda name: False, wheel)
    except BadInput:
        return False
    return True


def sweep(folders: Path) -> None:
    """Remove what killed runs left in the folders below ``folders`` (their temporary
    files: a download cut short by SIGKILL, a copy never renamed)."""
    with contextlib.suppress(OSError):
        for folder in folders.iterdir():
            if folder.is_dir():
                remove_dead_temps(folder)


def _intact(archive: Path) -> bool:
    """Whether a kept archive still has the sha256 recorded when it was kept."""
    try:
        recorded = archive.with_name(archive.name + DIGEST_SUFFIX).read_text(encoding="ascii")
        return archive.is_file() and file_sha256(archive) == recorded.strip()
    except (OSError, UnicodeDecodeError):
        return False


def file_sha256(path: Path) -> str:
    import hashlib

    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def unreachable(label: str, reason: str) -> str:
    return (
        f"the package index could not be reached to fetch {label} (offline, or a proxy or "
        f"index setting of pip: {reason}); check the network, or pass a source path instead"
    )


def missing(dist: str, version: str, found: Sequence[index.Artifact]) -> str:
    """Why no archive of ``dist==version`` was found, with the nearest releases."""
    from omni_port.sources import index

    released = index.releases(found)
    if not released:
        return (
            f"the package index lists no release of {dist} at all: it has no such project "
            "(check the name), or its index pages could not be read; or pass a source path"
        )
    wheels = {a.version for a in found if a.wheel}
    kinds = {v: "wheel" if v in wheels else "sdist" for v in released}
    nearest = ", ".join(f"{dist}=={v} ({kinds[v]})" for v in _nearest(version, released))
    return f"{dist}=={version} does not exist on the package index; nearest releases: {nearest}"


def _nearest(version: str, versions: Sequence[str]) -> list[str]:
    """The highest release below ``version`` and the lowest above it (those that exist)."""
    key = version_key(version)
    below = [v for v in versions if version_key(v) < key]
    above = [v for v in versions if version_key(v) > key]
    return [
        *([max(below, key=version_key)] if below else []),
        *([min(above, key=version_key)] if above else []),
    ]


def version_key(text: str) -> tuple[tuple[int, ...], int, int, int]:
    """A sort key: release numbers, then a < b < rc < final (each by its number), then post."""
    match = re.match(r"^([0-9]+(?:\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?(?:\.post([0-9]+))?", text)
    if not match:
        return ((), 0, 0, 0)
    release = tuple(int(p) for p in match.group(1).split("."))
    pre = {"a": -3, "b": -2, "rc": -1}.get(match.group(2) or "", 0)
    number = int(match.group(3) or 0)
    post = int(match.group(4) or 0)
    return (release, pre, number, post)
