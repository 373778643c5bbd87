"""The package index pip is configured for: which releases exist, and the archive of each.

A release is read from its archive as text, never built, installed or imported: a wheel
when it has one, else its sdist (vllm-ascend publishes some releases as sdists only, and
``pip download`` of an sdist runs its build backend). So the index is asked directly, with
unearth's finder and downloader, configured as pip is (its configuration files and
``PIP_*`` variables, read through ``pip config list``). Downloads are checked against the
index's hashes and retried.

The HTTP side is the client unearth is built on (``httpx2``, configured by unearth as pip
is: certificates, trusted hosts, timeout, proxies from the environment), one per
configuration and process, so its connections are reused: a whole download streams
through it, and so do the ranged reads of a remote wheel (``sources.ranged``).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypeVar, cast

from omni_port.pyast import memo

if TYPE_CHECKING:
    import ssl

    import httpx2
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


class NoRanges(Exception):
    """The server does not serve ranged reads of a file (it answered a ``Range`` request
    with the whole file, or with anything but the part asked for)."""


class _ShortRead(Exception):
    """A ranged answer that is not the bytes asked for (retried as a failed transfer)."""


class _HashMismatch(Exception):
    """A downloaded archive whose hash is not the index's (retried, then DownloadFailed)."""


class Meter(Protocol):
    """Told how far a transfer has come: what (a file name), bytes done, bytes in all (0
    when unknown). Called with ``done == total`` when it ends."""

    def __call__(self, what: str, done: int, total: int) -> None: ...


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
    """Every file of every release of ``dist`` on the index, yanked ones left out; asked
    of the index once per run (a cold upgrade reads some thirty releases of one project).

    Raises Unreachable when no attempt could reach the index.
    """
    return list(_artifacts(dist, config))


@memo.memoized
def _artifacts(dist: str, config: IndexConfig) -> tuple[Artifact, ...]:
    return tuple(_retried(lambda: _listing(dist, config), _transport_errors(), Unreachable))


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


def download(
    artifact: Artifact, into: BinaryIO, config: IndexConfig, meter: Meter | None = None
) -> None:
    """``artifact`` written into ``into`` (a file open for writing, emptied before each
    attempt), checked against the index's hashes. Raises DownloadFailed after ``ATTEMPTS``
    failed transfers or mismatched hashes."""
    from httpx2 import HTTPStatusError

    def attempt() -> None:
        into.seek(0)
        into.truncate()
        _stream(artifact, into, config, meter)

    failures = (*_transport_errors(), HTTPStatusError, _HashMismatch)
    _retried(attempt, failures, DownloadFailed)


#: Bytes read from a response at a time.
_CHUNK = 256 * 1024


def _stream(artifact: Artifact, into: BinaryIO, config: IndexConfig, meter: Meter | None) -> None:
    import hashlib

    hashers = {name: hashlib.new(name) for name, _ in artifact.hashes}
    with session(config).stream("GET", artifact.url, follow_redirects=True) as response:
        response.raise_for_status()
        total = _number(response.headers.get("Content-Length", ""))
        done = 0
        for chunk in response.iter_bytes(_CHUNK):
            into.write(chunk)
            for hasher in hashers.values():
                hasher.update(chunk)
            done += len(chunk)
            if meter is not None:
                meter(artifact.filename, done, total)
    if meter is not None:
        meter(artifact.filename, done, done)
    got = {name: hasher.hexdigest() for name, hasher in hashers.items()}
    if hashers and not any(got[name] == digest for name, digest in artifact.hashes):
        raise _HashMismatch(f"{artifact.filename}: hash mismatch (got {got})")


def _number(text: str) -> int:
    return int(text) if text.isdigit() else 0


# --- ranged reads -----------------------------------------------------------------------------


def serves_ranges(artifact: Artifact) -> bool:
    """Whether ranged reads are worth asking for: an archive on an HTTP server (a local
    file of a ``file://`` index or find-links is read whole, at no cost)."""
    return artifact.url.startswith(("https://", "http://"))


def read_tail(url: str, length: int, config: IndexConfig) -> tuple[bytes, int]:
    """The last ``length`` bytes of the file at ``url`` (all of it when it is shorter) and
    the file's size, by one ranged request. Raises NoRanges when the server does not serve
    ranges, DownloadFailed when every attempt failed."""

    def attempt() -> tuple[bytes, int]:
        with _ranged(url, f"bytes=-{length}", config) as response:
            first, last, size = _content_range(response)
            data = response.read()
        if len(data) != last - first + 1 or last != size - 1:
            raise _ShortRead(f"{url}: got {len(data)} bytes of the last {length}")
        return data, size

    return _retried(attempt, (*_transport_errors(), _ShortRead), DownloadFailed)


def read_range(url: str, start: int, end: int, config: IndexConfig) -> bytes:
    """Bytes ``start`` to ``end`` (excluded) of the file at ``url``, by one ranged request.
    Raises NoRanges when the server answers with anything else than those bytes' range,
    DownloadFailed when every attempt failed."""

    def attempt() -> bytes:
        with _ranged(url, f"bytes={start}-{end - 1}", config) as response:
            first, _, _ = _content_range(response)
            data = response.read()
        if first != start or len(data) != end - start:
            raise _ShortRead(
                f"{url}: got {len(data)} bytes at {first}, not {end - start} at {start}"
            )
        return data

    return _retried(attempt, (*_transport_errors(), _ShortRead), DownloadFailed)


def _ranged(
    url: str, wanted: str, config: IndexConfig
) -> contextlib.AbstractContextManager[httpx2.Response]:
    # identity: a compressed answer has no byte ranges of the file.
    headers = {"Range": wanted, "Accept-Encoding": "identity"}
    return session(config).stream("GET", url, headers=headers, follow_redirects=True)


def _content_range(response: httpx2.Response) -> tuple[int, int, int]:
    """(first, last, size) of a 206 answer's ``Content-Range``; NoRanges for any other
    answer (read no further: a 200 would be the whole file)."""
    found = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if response.status_code != 206 or found is None:
        raise NoRanges(f"HTTP {response.status_code} to a ranged request")
    return int(found["first"]), int(found["last"]), int(found["size"])


_CONTENT_RANGE = re.compile(r"bytes\s+(?P<first>[0-9]+)-(?P<last>[0-9]+)/(?P<size>[0-9]+)")


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
def session(config: IndexConfig) -> httpx2.Client:
    """The HTTP client of ``config`` (one per configuration and process, closed at exit):
    unearth's, which reads ``file://`` URLs too and skips certificate checks for trusted
    hosts only."""
    import atexit

    from unearth.fetchers import PyPIClient

    client = PyPIClient(
        trusted_hosts=config.trusted_hosts, verify=_verify(config), timeout=config.timeout
    )
    atexit.register(client.close)
    return client


@functools.cache
def _finder(config: IndexConfig) -> unearth.PackageFinder:
    """A finder over every release file (one per configuration and process): wheels of
    any platform count, since only their Python sources are read, and sdists too."""
    from unearth import PackageFinder
    from unearth.fetchers import Fetcher

    # unearth logs an index page it cannot read (an extra index without the project) as a
    # warning: pip does not either, and stderr is for our own progress.
    logging.getLogger("unearth").addHandler(logging.NullHandler())
    logging.getLogger("unearth").propagate = False
    return PackageFinder(
        # unearth's Fetcher protocol is narrower than the client it ships (its own typing).
        session=cast("Fetcher", session(config)),
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
