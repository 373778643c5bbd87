"""The package index pip is configured for: which releases exist, and the archive of each.

A release is read from its archive as text, never built, installed or imported: a wheel
when it has one, else its sdist (vllm-ascend publishes some releases as sdists only, and
``pip download`` of an sdist runs its build backend). So the index is asked directly, with
unearth's finder and downloader, configured as pip is (its configuration files and
``PIP_*`` variables, read through ``pip config list``). Downloads are checked against the
index's hashes and retried.
"""

from __future__ import annotations

import ast
import functools
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    import ssl

    import unearth

#: The index pip uses when nothing else is configured.
PYPI = "https://pypi.org/simple/"
#: Seconds a connection or read may take when pip sets no timeout.
DEFAULT_TIMEOUT = 15.0
#: Attempts at one listing or download before giving up.
ATTEMPTS = 3


class Unreachable(Exception):
    """The index could not be reached (offline, a proxy, a refused connection)."""


class DownloadFailed(Exception):
    """An archive could not be downloaded whole: its hash or the transfer failed each time."""


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Where releases are looked up: pip's index settings."""

    #: Index URLs, the main one first (pip's ``index-url``, then ``extra-index-url``).
    index_urls: tuple[str, ...] = (PYPI,)
    #: pip's ``find-links``: URLs or local directories holding archives.
    find_links: tuple[str, ...] = ()
    #: Hosts whose certificates are not checked (pip's ``trusted-host``).
    trusted_hosts: tuple[str, ...] = ()
    #: CA bundle (pip's ``cert``); "" for the default.
    cert: str = ""
    #: Seconds a connection or read may take (pip's ``timeout``).
    timeout: float = DEFAULT_TIMEOUT


#: pip's option names, by the field of IndexConfig they set.
_KEYS = {
    "index-url": "index_urls",
    "extra-index-url": "extra",
    "find-links": "find_links",
    "trusted-host": "trusted_hosts",
    "cert": "cert",
    "timeout": "timeout",
    "default-timeout": "timeout",
    "no-index": "no_index",
}


def parse_pip_config(listing: str) -> IndexConfig:
    """The index settings of ``pip config list`` output.

    ``pip download`` reads a key from the environment first, then its ``download``
    section, then ``global``; the listing has each file's winning value per section.
    """
    values: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        name, equals, raw = line.partition("=")
        section, dot, key = name.rpartition(".")
        if not (equals and dot and key in _KEYS):
            continue
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        values.setdefault(_KEYS[key], {})[section] = str(value)
    return _config_from(values)


def _config_from(values: Mapping[str, Mapping[str, str]]) -> IndexConfig:
    def pick(field: str) -> str | None:
        found = values.get(field, {})
        return next((found[s] for s in (":env:", "download", "global") if s in found), None)

    def words(field: str) -> tuple[str, ...]:
        return tuple((pick(field) or "").split())

    no_index = (pick("no_index") or "").lower() in {"1", "true", "yes", "on"}
    main = () if no_index else (pick("index_urls") or PYPI, *words("extra"))
    timeout = pick("timeout")
    return IndexConfig(
        index_urls=main,
        find_links=tuple(_as_url(link) for link in words("find_links")),
        trusted_hosts=words("trusted_hosts"),
        cert=pick("cert") or "",
        timeout=float(timeout) if timeout and _is_number(timeout) else DEFAULT_TIMEOUT,
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _as_url(location: str) -> str:
    """A find-links entry as a URL (pip takes a plain directory too)."""
    if "://" in location:
        return location
    return Path(location).resolve().as_uri()


def pip_config() -> IndexConfig:
    """The index settings pip would use here, from its configuration files and ``PIP_*``
    variables (asked of pip once per process and set of variables).

    Falls back to PyPI when pip cannot be run: it is pip's own default.
    """
    variables = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_")))
    return _pip_config(variables)


@functools.cache
def _pip_config(variables: tuple[tuple[str, str], ...]) -> IndexConfig:
    command = [sys.executable, "-m", "pip", "config", "list", "--disable-pip-version-check"]
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **dict(variables)},
        )
    except OSError:
        return IndexConfig()
    return parse_pip_config(result.stdout if result.returncode == 0 else "")


@dataclass(frozen=True, slots=True)
class Artifact:
    """One file of one release on the index."""

    #: Distribution name as asked for, e.g. ``vllm-ascend``.
    dist: str
    #: Version, e.g. ``0.30.0rc2``.
    version: str
    #: File name, e.g. ``vllm_ascend-0.30.0rc2.tar.gz``.
    filename: str
    #: Where to download it from.
    url: str
    #: The index's hashes: (algorithm, hex digest) pairs; empty when it gives none.
    hashes: tuple[tuple[str, str], ...] = ()
    #: When the file was uploaded (``YYYY-MM-DD``); "" when the index does not say (an
    #: HTML page, a folder of files).
    uploaded: str = ""

    @property
    def wheel(self) -> bool:
        return self.filename.endswith(".whl")


def artifacts(dist: str, config: IndexConfig) -> list[Artifact]:
    """Every file of every release of ``dist`` on the index, yanked ones left out.

    Raises Unreachable when no attempt could reach the index.
    """
    return _retried(lambda: _listing(dist, config), _transport_errors(), Unreachable)


def _listing(dist: str, config: IndexConfig) -> list[Artifact]:
    if not (config.index_urls or config.find_links):
        # unearth would fall back to PyPI; pip with --no-index and no find-links finds nothing.
        raise Unreachable("pip is configured with no index (no-index) and no find-links")
    found = []
    for package in _finder(config).find_all_packages(dist):
        if package.link is None or package.version is None:
            continue
        hashes = tuple(
            (name, digest)
            for name, digests in sorted((package.link.hash_option or {}).items())
            for digest in digests
        )
        url = package.link.url_without_fragment
        when = package.link.upload_time
        uploaded = when.date().isoformat() if when is not None else ""
        found.append(Artifact(dist, package.version, package.link.filename, url, hashes, uploaded))
    return found


def releases(found: Sequence[Artifact]) -> list[str]:
    """The versions among ``found``, each once, oldest first (PEP 440 order)."""
    from packaging.version import InvalidVersion, Version

    valid = []
    for version in {a.version for a in found}:
        try:
            valid.append((Version(version), version))
        except InvalidVersion:
            continue  # never a release a spec could name
    return [text for _, text in sorted(valid)]


def release_dates(found: Sequence[Artifact]) -> dict[str, str]:
    """When each release among ``found`` came out: its first file's upload date ("" when
    the index gives no dates)."""
    dates: dict[str, str] = {}
    for artifact in found:
        known = dates.get(artifact.version, "")
        if artifact.uploaded and (not known or artifact.uploaded < known):
            dates[artifact.version] = artifact.uploaded
        dates.setdefault(artifact.version, known)
    return dates


def best(found: Sequence[Artifact], version: str) -> Artifact | None:
    """The archive to read ``version`` from: a wheel this machine would install first,
    then any wheel, then the sdist (the Python sources of all of them are alike); None
    when the release has no file."""
    same = [a for a in found if _same(a.version, version)]
    if not same:
        return None
    supported = _supported_tags()
    return min(same, key=lambda a: (not a.wheel, not _installable(a, supported), a.filename))


def _same(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


@functools.cache
def _supported_tags() -> frozenset[object]:
    from packaging.tags import sys_tags

    return frozenset(sys_tags())


def _installable(artifact: Artifact, supported: frozenset[object]) -> bool:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    if not artifact.wheel:
        return False
    try:
        tags = parse_wheel_filename(artifact.filename)[3]
    except InvalidWheelFilename:
        return False
    return any(tag in supported for tag in tags)


def download(artifact: Artifact, folder: Path, config: IndexConfig) -> Path:
    """``artifact`` downloaded into ``folder`` (a local file is copied), checked against
    the index's hashes. Raises DownloadFailed after ``ATTEMPTS`` failed transfers or
    mismatched hashes, Unreachable when the index could not be reached at all."""
    from unearth import HashMismatchError, Link, UnpackError

    link = Link(artifact.url)
    hashes: dict[str, list[str]] = {}
    for name, digest in artifact.hashes:
        hashes.setdefault(name, []).append(digest)

    def attempt() -> Path:
        got = _finder(config).download(link, folder, hashes=hashes)
        if got.parent != folder:  # a local file is handed back where it lies
            import shutil

            got = Path(shutil.copyfile(got, folder / artifact.filename))
        return got

    failures = (*_transport_errors(), HashMismatchError, UnpackError, OSError)
    return _retried(attempt, failures, DownloadFailed)


_T = TypeVar("_T")


def _retried(
    work: Callable[[], _T], failures: tuple[type[BaseException], ...], error: type[Exception]
) -> _T:
    """``work()``, tried ``ATTEMPTS`` times with a growing pause; ``error`` with the last
    failure's reason when every attempt fails."""
    reason = ""
    for number in range(ATTEMPTS):
        try:
            return work()
        except failures as exc:
            reason = _reason(exc)
        if number + 1 < ATTEMPTS:
            time.sleep(2 * (number + 1))
    raise error(reason)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _transport_errors() -> tuple[type[BaseException], ...]:
    import httpx2

    return (httpx2.TransportError,)


@functools.cache
def _finder(config: IndexConfig) -> unearth.PackageFinder:
    """A finder over every release file (one per configuration and process): wheels of
    any platform count, since only their Python sources are read, and sdists too."""
    import atexit

    from unearth import PackageFinder
    from unearth.fetchers import Fetcher, PyPIClient

    # unearth logs an index page it cannot read (an extra index without the project) as a
    # warning: pip does not either, and stderr is for our own progress.
    logging.getLogger("unearth").addHandler(logging.NullHandler())
    logging.getLogger("unearth").propagate = False
    session = PyPIClient(
        trusted_hosts=config.trusted_hosts, verify=_verify(config), timeout=config.timeout
    )
    atexit.register(session.close)
    return PackageFinder(
        # unearth's Fetcher protocol is narrower than the client it ships (its own typing).
        session=cast("Fetcher", session),
        index_urls=config.index_urls,
        find_links=config.find_links,
        trusted_hosts=config.trusted_hosts,
        ignore_compatibility=True,
    )


def _verify(config: IndexConfig) -> ssl.SSLContext | bool:
    """What the HTTP client checks certificates with: pip's ``cert`` when it is set."""
    if not config.cert:
        return True
    import ssl

    return ssl.create_default_context(cafile=config.cert)
