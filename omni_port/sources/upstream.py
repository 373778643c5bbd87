"""Locate package sources: a path, an installed package, or a pinned release in a cache.

Nothing here imports the packages it reads: an installed package is found with
``importlib.util.find_spec`` on its top-level name (which runs no package code), and a
release's archive (its wheel, else its sdist) is read as text (``sources.archives``).
Archives come from the index pip is configured for (``sources.index``, which checks the
index's hashes) into a cache keyed by distribution name and version.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.util
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from omni_port.errors import BadInput
from omni_port.model import ASCEND_MODULE as _ASCEND_MODULE
from omni_port.model import Code
from omni_port.model import Located as Located  # records the sources stage reads into
from omni_port.model import Release as Release
from omni_port.model import Upstream as Upstream
from omni_port.sources.fetch import DIGEST_SUFFIX, Progress, version_key
from omni_port.sources.textio import (
    decode,
    no_special_file,
    read_source,
    sha256,
    write_atomic,
)

if TYPE_CHECKING:
    from omni_port.sources.fetch import Checked

__all__ = ["DIGEST_SUFFIX", "Progress", "version_key"]

#: Files the NPU runners live in, inside a vllm-omni distribution.
OMNI_RUNNERS = (
    "vllm_omni/platforms/npu/worker/npu_model_runner.py",
    "vllm_omni/platforms/npu/worker/npu_ar_model_runner.py",
    "vllm_omni/platforms/npu/worker/npu_generation_model_runner.py",
)
#: Files the GPU runners live in, inside a vllm-omni distribution.
OMNI_GPU_RUNNERS = (
    "vllm_omni/worker/gpu_model_runner.py",
    "vllm_omni/worker/gpu_ar_model_runner.py",
    "vllm_omni/worker/gpu_generation_model_runner.py",
)
#: The upstream module the NPU runners copy from, inside a vllm-ascend distribution.
ASCEND_RUNNER = "vllm_ascend/worker/model_runner_v1.py"
#: Dotted name of that module: copies import its own definitions from it.
ASCEND_MODULE = _ASCEND_MODULE
#: vLLM's GPU runner, inside a vllm distribution.
VLLM_RUNNER = "vllm/v1/worker/gpu_model_runner.py"
#: vLLM-Omni's Model Runner V2 runners, inside a vllm-omni distribution.
OMNI_V2_RUNNERS = (
    "vllm_omni/worker_v2/omni_model_runner.py",
    "vllm_omni/worker_v2/omni_ar_model_runner.py",
    "vllm_omni/worker_v2/omni_generation_model_runner.py",
)
#: vllm-ascend's Model Runner V2 runner, inside a vllm-ascend distribution.
ASCEND_V2_RUNNER = "vllm_ascend/worker/v2/model_runner.py"
#: vLLM's Model Runner V2, inside a vllm distribution.
VLLM_V2_RUNNER = "vllm/v1/worker/gpu/model_runner.py"


class SpecKind(enum.Enum):
    PATH = "path"
    """A file, or a directory holding the package tree."""
    INSTALLED = "installed"
    """The package installed in this Python environment (found, never imported)."""
    PYPI = "pypi"
    """A pinned release downloaded from PyPI."""
    GIT = "git"
    """A tag or commit of a local git clone (``PATH@REV``), read with ``git show``."""


@dataclass(frozen=True, slots=True)
class Spec:
    """Where a distribution's source comes from, as the user wrote it."""

    kind: SpecKind
    #: Distribution name, e.g. ``vllm-ascend``.
    dist: str
    #: Pinned version (PyPI specs).
    version: str = ""
    #: File or directory (path specs); the clone (git specs).
    path: str = ""
    #: Tag, branch or commit of the clone (git specs).
    rev: str = ""

    @property
    def label(self) -> str:
        """Stable name for reports and headers (no machine-specific paths for releases)."""
        if self.kind is SpecKind.PYPI:
            return f"{self.dist}=={self.version}"
        if self.kind is SpecKind.INSTALLED:
            return f"{self.dist} (installed)"
        if self.kind is SpecKind.GIT:
            return f"{self.path}@{self.rev}"
        return self.path


_PIN = re.compile(r"^(?P<dist>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[0-9][0-9A-Za-z.+!-]*)$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)+([a-z]+[0-9]*|\.post[0-9]+|\.dev[0-9]+)*$")
#: How the label of an installed package ends (``vllm-ascend==0.23.0 (installed)``).
INSTALLED_SUFFIX = " (installed)"
#: A pin gone wrong: a distribution name, then a version operator (PEP 440's ``===``, ``~=``,
#: ``>=`` and the rest, a lone ``=``, or ``==`` with no version after it). Read as a path, it
#: would fail as "no such file", far from the typo.
_NOT_A_PIN = re.compile(
    r"""
    ^[A-Za-z0-9][A-Za-z0-9._-]*     # a distribution name
    (\[[^\]]*\])?                   # its extras, if any
    \s*[=!<>~]                      # a version operator begins
    """,
    re.VERBOSE,
)


#: ``PATH@REV``: a revision of a git clone (the path holds a ``.git``; the revision has no
#: ``@`` and no path separator other than a branch's ``/``).
_GIT = re.compile(r"^(?P<path>.+)@(?P<rev>[^@\s]+)$")


def is_clone(path: Path) -> bool:
    """Whether ``path`` is a git clone: a working tree, or a bare repository (a mirror)."""
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def parse_spec(text: str, dist: str) -> Spec:
    """``installed``, ``NAME==VERSION``, a bare version of ``dist``, ``PATH@REV`` (a tag or
    commit of a local git clone), or a path.

    Raises BadInput: OP003 for a pin of another distribution than ``dist``; OP005 for a
    pin that is none (``vllm-ascend===0.30.0``, ``vllm-ascend>=0.26``, ``vllm-ascend==``)
    and no existing path either.
    """
    text = text.strip()
    if text == "installed":
        return Spec(SpecKind.INSTALLED, dist)
    git = _GIT.match(text)
    if git and not os.path.exists(text) and is_clone(Path(git.group("path"))):
        from omni_port.sources import gitrepo  # git runs only for git specs

        # A branch moves: the spec names the commit it is at now (provenance is a fact).
        rev = gitrepo.pinned(git.group("path"), git.group("rev"))
        return Spec(SpecKind.GIT, dist, path=git.group("path"), rev=rev)
    pinned = _PIN.match(text)
    if pinned and not os.path.exists(text):
        named = pinned.group("dist")
        if dist and _normalized(named) != _normalized(dist):
            # Refused before anything is downloaded: another project has no such module.
            message = f"not a {dist} release: give {dist}==VERSION, a version, a path or installed"
            raise BadInput.at(Code.OP003, text, 0, message)
        return Spec(SpecKind.PYPI, named, pinned.group("version"))
    if _VERSION.match(text) and not os.path.exists(text):
        return Spec(SpecKind.PYPI, dist, text)
    wrong = not_a_pin(text)
    if wrong is not None and not os.path.exists(text):
        raise BadInput.at(Code.OP005, text, 0, wrong)
    return Spec(SpecKind.PATH, dist, path=text)


def not_a_pin(text: str) -> str | None:
    """Why ``text`` is a release pin gone wrong (a name and a version operator, but no
    ``NAME==VERSION``), else None; said the same on the command line and in the
    configuration. Whether a path of that name exists is the caller's to ask."""
    if "/" in text or "\\" in text or _PIN.match(text.removesuffix(INSTALLED_SUFFIX)):
        return None  # a path (no version holds a slash), or a pin
    if not _NOT_A_PIN.match(text):
        return None
    return (
        f"`{text}` is not a release pin: write NAME==VERSION, one exact version "
        "(ranges and other operators are not read)"
    )


def _normalized(dist: str) -> str:
    """A distribution name as the index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def default_cache() -> Path:
    """``$OMNI_PORT_CACHE``, else ``$XDG_CACHE_HOME/omni-port``, else ``~/.cache/omni-port``."""
    explicit = os.environ.get("OMNI_PORT_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "omni-port"


def locate(spec: Spec, member: str, cache: Path, progress: Progress | None = None) -> Located:
    """Read ``member`` of the distribution ``spec`` points at.

    Raises BadInput (OP003) when it cannot be found or downloaded, (OP001) when unreadable.
    """
    if spec.kind is SpecKind.PATH:
        return _from_path(spec, member)
    if spec.kind is SpecKind.INSTALLED:
        return _from_installed(spec, member)
    if spec.kind is SpecKind.GIT:
        from omni_port.sources import gitrepo  # git runs only for git specs

        data = gitrepo.show(spec.path, spec.rev, member)
        return Located(spec.label, member, decode(data, f"{spec.label}/{member}"))
    data = _cached_member(spec, member, cache, progress)
    # Diagnostics name the release, not this machine's cache path: stable everywhere.
    return Located(spec.label, member, decode(data, f"{spec.label}/{member}"))


def _cached_member(spec: Spec, member: str, cache: Path, progress: Progress | None) -> bytes:
    """A member of a release, kept in the cache once read (reopening a wheel costs ~20 ms,
    an sdist, read from its start, up to half a second; a remote wheel, a request)."""
    from omni_port.sources import fetch
    from omni_port.sources.archives import safe_member

    if not safe_member(member):
        raise BadInput.at(Code.OP003, spec.label, 0, f"refusing unsafe member name {member!r}")
    absent = cache / "src" / f"{spec.dist}-{spec.version}" / (member + ABSENT_SUFFIX)
    kind = _kept_absence(absent)
    if kind:
        raise BadInput.at(Code.OP003, spec.label, 0, f"the {kind} has no {member}")

    def read() -> tuple[bytes, fetch.Checked]:
        want = fetch.Want(lambda name: name == member, member, first=True)
        got = fetch.release_files(spec.dist, spec.version, want, cache, progress)
        if member not in got.files:
            with contextlib.suppress(BadInput):  # a read-only cache asks again next time
                write_atomic(absent, f"{got.kind}\n".encode())
            raise BadInput.at(Code.OP003, spec.label, 0, f"the {got.kind} has no {member}")
        return got.files[member], got.checked

    return _kept(spec, member, cache, progress, read)


#: Suffix of the file recording that a release's archive has no such member (its kind,
#: ``wheel`` or ``sdist``, inside): a release never changes, and base detection asks every
#: release since the floor for its module (vLLM 0.34.0 has none), each a request otherwise.
ABSENT_SUFFIX = ".absent"


def _kept_absence(absent: Path) -> str:
    """The kind of archive ``absent`` records lacking the member; "" when there is no
    record or it is damaged (then the archive is asked again)."""
    try:
        kind = absent.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    return kind.strip() if kind in ("wheel\n", "sdist\n") else ""


def release_metadata(spec: Spec, cache: Path, progress: Progress | None = None) -> str | None:
    """A release's metadata (a wheel's ``METADATA``, an sdist's ``PKG-INFO``), kept in the
    cache once read like a member; None when its archive has none."""
    from omni_port.sources import archives, fetch

    def read() -> tuple[bytes, fetch.Checked]:
        want = fetch.Want(archives.any_metadata, "the metadata", first=True)
        got = fetch.release_files(spec.dist, spec.version, want, cache, progress)
        return next(iter(got.files.values()), b""), got.checked

    data = _kept(spec, METADATA_NAME, cache, progress, read)
    return data.decode("utf-8", "replace") or None


#: Where a release's metadata is kept beside its members (no package has this file).
METADATA_NAME = ".metadata"


def _kept(
    spec: Spec,
    name: str,
    cache: Path,
    progress: Progress | None,
    read: Callable[[], tuple[bytes, Checked]],
) -> bytes:
    """``read()`` of the release, kept in the cache under ``name``.

    The kept copy is checked against the sha256 recorded when it was kept: a truncated or
    edited copy is read again from the archive, never blamed on upstream nor used silently.
    One read by range is read again when the run wants whole archives.
    """
    folder = cache / "src" / f"{spec.dist}-{spec.version}"
    kept = folder / name
    data = kept_member(kept)
    if data is None:
        data = _in_kept_sources(folder, name)
    if data is not None:
        return data
    if kept.is_file() and progress is not None:
        progress(f"the cached copy of {spec.label}/{name} {_why_again(kept)}: reading it again")
    data, checked = read()
    keep_member(kept, data, checked)
    return data


def _in_kept_sources(folder: Path, member: str) -> bytes | None:
    """``member`` of a release's whole package sources kept in ``folder`` (``sources.kept``:
    verify keeps vLLM's), checked against their record; None when they lack it or are
    damaged. A member read once for verify is not read again by range for the upstream."""
    from omni_port.sources import kept

    try:
        return kept.kept_file(folder, member)
    except kept.Damaged:
        return None


def _why_again(kept: Path) -> str:
    digest = kept.with_name(kept.name + DIGEST_SUFFIX)
    if not digest.is_file():
        return "has no recorded sha256"
    if _recorded(digest) is None:
        return "was read by range, and whole archives are asked for"
    return "does not match its recorded sha256"


_RELEASE_PATH = re.compile(
    r"^(?P<dist>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^/]+)/(?P<member>.+)$"
)


def cached_member(path: str, cache: Path) -> str:
    """A finding's path as a file a person can open: ``DIST==VERSION/member`` (a release's
    file, as findings and patches name it on every machine) becomes its copy in the
    cache when one is kept there; any other path is returned as it is."""
    found = _RELEASE_PATH.match(path)
    if found is None:
        return path
    kept = cache / "src" / f"{found['dist']}-{found['version']}" / found["member"]
    return str(kept) if kept.is_file() else path


#: What a member's digest file adds when the member was read by range (checked against
#: the wheel's RECORD, not against the index's hash of the whole archive).
_BY_RANGE = "record"


def kept_member(kept: Path) -> bytes | None:
    """The bytes of a member kept in the cache, or None when it is missing, does not match
    the sha256 recorded beside it (truncated, edited, or kept before digests were), or was
    read by range while the run wants whole archives."""
    try:
        data = kept.read_bytes()
    except OSError:
        return None
    recorded = _recorded(kept.with_name(kept.name + DIGEST_SUFFIX))
    return data if recorded is not None and sha256(data) == recorded else None


def _recorded(digest: Path) -> str | None:
    """The sha256 a digest file records, or None when there is none this run may trust."""
    from omni_port.sources import fetch

    try:
        words = digest.read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    if not words or words[1:] not in ([], [_BY_RANGE]):
        return None
    if words[1:] and fetch.current().downloads is fetch.Downloads.WHOLE:
        return None
    return words[0]


def keep_member(kept: Path, data: bytes, checked: Checked | None = None) -> None:
    """Keep a member in the cache with its sha256 (the digest goes last: a run killed in
    between leaves a member without a matching digest, which is read again), and how it
    was checked when it was read."""
    from omni_port.sources import fetch

    by_range = f" {_BY_RANGE}" if checked is fetch.Checked.RECORD else ""
    write_atomic(kept, data)
    try:
        digest = f"{sha256(data)}{by_range}\n".encode()
        write_atomic(kept.with_name(kept.name + DIGEST_SUFFIX), digest)
    except BadInput:  # a member without its digest is never read: it goes too
        with contextlib.suppress(OSError):
            kept.unlink()
        raise


def _from_path(spec: Spec, member: str) -> Located:
    no_special_file(spec.path)
    root = Path(spec.path)
    path = root if root.is_file() else root / member
    if not path.is_file():
        raise BadInput.at(
            Code.OP003,
            spec.path,
            0,
            f"no {member} here (give the file or the directory above the package)",
        )
    return Located(spec.label, member, read_source(path))


def _from_installed(spec: Spec, member: str) -> Located:
    top = PurePosixPath(member).parts[0]
    found = importlib.util.find_spec(top)
    locations = list(found.submodule_search_locations or []) if found else []
    if not locations:
        raise BadInput.at(
            Code.OP003, spec.dist, 0, f"package {top!r} is not installed in {sys.executable}"
        )
    path = Path(locations[0]).parent / member
    if not path.is_file():
        raise BadInput.at(Code.OP003, str(path), 0, f"installed {spec.dist} has no {member}")
    from importlib import metadata  # only here: it is slow to import and rarely needed

    try:
        version = metadata.version(spec.dist)
    except metadata.PackageNotFoundError:
        version = "unknown"
    label = f"{spec.dist}=={version}{INSTALLED_SUFFIX}"
    return Located(label, member, read_source(path))


# --- release archives -----------------------------------------------------------------------
# These helpers import the fetching modules where they run: `check` on cached inputs never
# opens an archive, and the HTTP client is a tenth of its start-up time.


def fetch_archive(dist: str, version: str, cache: Path, progress: Progress | None = None) -> Path:
    """The cached whole archive of ``dist==version`` (``sources.fetch.fetch_archive``)."""
    from omni_port.sources import fetch

    return fetch.fetch_archive(dist, version, cache, progress)


def release_versions(dist: str) -> list[str]:
    """Every release of ``dist`` on the index, wheel or sdist, oldest first.

    Raises BadInput (OP003) when the index cannot be reached or lists none.
    """
    return list(dated_releases(dist))


def dated_releases(dist: str) -> dict[str, str]:
    """Every release of ``dist`` on the index, wheel or sdist, oldest first, with the date
    it came out (``YYYY-MM-DD``; "" when the index does not say).

    Raises BadInput (OP003) when the index cannot be reached or lists none.
    """
    from omni_port.sources import fetch, index

    try:
        found = index.artifacts(dist, index.pip_config())
    except index.Unreachable as failure:
        raise BadInput.at(Code.OP003, dist, 0, fetch.unreachable(dist, str(failure))) from None
    versions = index.releases(found)
    if not versions:
        raise BadInput.at(Code.OP003, dist, 0, fetch.missing(dist, "0", found))
    dates = index.release_dates(found)
    return {version: dates.get(version, "") for version in versions}


def read_member(archive: Path, member: str) -> bytes:
    """One file of a release archive (wheel or sdist); refuses unsafe names (OP003)."""
    from omni_port.sources import archives

    return archives.read_member(archive, member)


def python_members(archive: Path, package: str) -> dict[str, bytes]:
    """Every ``.py`` file of ``package`` in a release archive, by member path."""
    from omni_port.sources import archives

    return archives.python_members(archive, package)


def locate_runners(
    text: str,
    cache: Path,
    progress: Progress | None = None,
    members: tuple[str, ...] = OMNI_RUNNERS,
) -> list[Located]:
    """The runner files a source argument names: a release, a checkout, a folder or a file."""
    spec = parse_spec(text, "vllm-omni")
    if spec.kind is not SpecKind.PATH:
        found = [locate(spec, member, cache, progress) for member in members]
        return [_with_counterpart(r, spec, cache, progress) for r in found]
    no_special_file(spec.path)
    root = Path(spec.path)
    if root.is_file():
        return [Located(spec.path, root.name, read_source(root))]
    if not root.is_dir():
        raise BadInput.at(Code.OP003, spec.path, 0, "no such file or directory")
    in_tree = [m for m in members if (root / m).is_file()]
    if in_tree:
        found = [Located(spec.path, m, read_source(root / m)) for m in in_tree]
        return [_with_counterpart(r, spec, cache, progress) for r in found]
    flat = [PurePosixPath(m).name for m in members if (root / PurePosixPath(m).name).is_file()]
    if not flat:
        names = ", ".join(PurePosixPath(m).name for m in members)
        raise BadInput.at(Code.OP003, spec.path, 0, f"no runner files ({names}) here")
    return [Located(spec.path, name, read_source(root / name)) for name in flat]


#: The GPU runner beside each NPU runner, by member path.
_COUNTERPARTS = dict(zip(OMNI_RUNNERS, OMNI_GPU_RUNNERS, strict=True))


def _with_counterpart(
    located: Located, spec: Spec, cache: Path, progress: Progress | None
) -> Located:
    """``located`` with omni's GPU runner beside it, when the distribution has one."""
    member = _COUNTERPARTS.get(located.member)
    if member is None:
        return located
    try:
        if spec.kind is SpecKind.PATH:
            path = Path(spec.path) / member
            return replace(located, counterpart=read_source(path)) if path.is_file() else located
        return replace(located, counterpart=locate(spec, member, cache, progress).source)
    except BadInput:
        return located  # a release without it: the blocks have no second anchor


def package_texts(
    spec: Spec, package: str, cache: Path, progress: Progress | None = None
) -> dict[str, str] | None:
    """Every ``.py`` file of ``package`` by member path, as text; None when unavailable.

    A release's are kept in the cache once read from its archive (``sources.kept``), an
    installed package's read from its directory (found, never imported), a path's from the
    tree below it. A path to a single file has no package.
    """
    if spec.kind is SpecKind.PYPI:
        from omni_port.sources import kept

        files = kept.package_sources(spec.dist, spec.version, package, cache, progress)
        return {name: data.decode("utf-8", "replace") for name, data in files.items()}
    if spec.kind is SpecKind.INSTALLED:
        found = importlib.util.find_spec(package)
        locations = list(found.submodule_search_locations or []) if found else []
        return _tree_texts(Path(locations[0]).parent, package) if locations else None
    if spec.kind is SpecKind.GIT:
        from omni_port.sources import gitrepo

        return gitrepo.python_files(spec.path, spec.rev, package) or None
    root = Path(spec.path)
    return _tree_texts(root, package) if (root / package).is_dir() else None


def _tree_texts(root: Path, package: str) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted((root / package).rglob("*.py"))
    }
