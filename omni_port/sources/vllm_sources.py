"""The vLLM release a vllm-ascend release pairs with, and its Python sources kept in the cache.

vllm-ascend runs on one vLLM release. Its metadata (a wheel's ``METADATA``, an sdist's
``PKG-INFO``) says which where it pins ``vllm`` (``Requires-Dist: vllm==X``); the releases
on PyPI do not, and their README (the long description) states the convention instead:
"vLLM (the same version as vllm-ascend)", i.e. the release part of vllm-ascend's own
version (0.19.1rc1 -> 0.19.1).

A vLLM wheel is about 300 MB, of which 27 MB are Python sources. Those are kept, once, in
``<cache>/src/vllm-X/`` (``gpu-delta`` reads vLLM's runners from there too), with a record of
their sha256 copied from the wheel's own RECORD; the wheel is deleted. Every read checks
each file against that record, and a damaged copy is fetched again.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath
from typing import TypeVar

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources.textio import write_atomic
from omni_port.sources.upstream import (
    Progress,
    Spec,
    SpecKind,
    fetch_archive,
    package_texts,
    parse_spec,
    release_metadata,
)

#: The record of the kept sources, written last: without it the folder is incomplete.
RECORD_NAME = "python-sources.record"
#: What the vllm-ascend README says about the vLLM release it runs on.
_SAME_VERSION = re.compile(r"vLLM\s*\(\s*the\s+same\s+version\s+as\s+vllm[-_]ascend\s*\)", re.I)
_RELEASE = re.compile(r"^\d+(\.\d+)*")
_PIN = re.compile(
    r"""^vllm \s* \(? \s* ===? \s* (?P<version>[0-9][0-9A-Za-z.+!-]*) \s* \)? \s* (;.*)?$""",
    re.VERBOSE | re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Pairing:
    """The vLLM release a vllm-ascend release runs on, and how that is known."""

    #: vLLM version, e.g. ``0.23.0``.
    version: str
    #: Where it comes from, for reports: ``Requires-Dist: vllm==0.23.0`` or the README's rule.
    evidence: str


def pairing_from_metadata(metadata: str) -> Pairing | None:
    """The vLLM release a vllm-ascend ``METADATA`` (or ``PKG-INFO``) text pairs with.

    An exact ``Requires-Dist`` pin of vllm wins; otherwise the README's "the same version
    as vllm-ascend" rule applied to the ``Version`` header. None when neither says, or when
    the metadata is another distribution's.
    """
    message = HeaderParser().parsestr(metadata)
    name = re.sub(r"[-_.]+", "-", message.get("Name", "vllm-ascend")).lower()
    if name != "vllm-ascend":
        return None  # e.g. the PKG-INFO of another project found beside a path
    for requirement in message.get_all("Requires-Dist") or []:
        pinned = _PIN.match(requirement.strip())
        if pinned:
            return Pairing(pinned.group("version"), f"Requires-Dist: {requirement.strip()}")
    version = message.get("Version", "")
    release = _RELEASE.match(version)
    body = message.get_payload()
    description = body if isinstance(body, str) else ""
    description += message.get("Description", "")
    if release and _SAME_VERSION.search(description):
        rule = "its README: 'vLLM (the same version as vllm-ascend)'"
        return Pairing(release.group(0), f"vllm-ascend {version} by {rule}")
    return None


def ascend_metadata(spec: Spec, cache: Path, progress: Progress | None = None) -> str | None:
    """The ``METADATA`` text of the vllm-ascend ``spec`` names; None when there is none.

    A release's comes from its archive (the wheel's METADATA, else the sdist's PKG-INFO,
    kept in the cache once read), an installed package's from its distribution, a path's
    from a ``*.dist-info/METADATA`` of vllm-ascend or a ``PKG-INFO`` (an unpacked sdist) in
    the directory. Raises BadInput (OP003) when a release cannot be downloaded.
    """
    if spec.kind is SpecKind.PYPI:
        return release_metadata(spec, cache, progress)
    if spec.kind is SpecKind.INSTALLED:
        from importlib import metadata

        try:
            return metadata.distribution(spec.dist).read_text("METADATA")
        except metadata.PackageNotFoundError:
            return None
    root = Path(spec.path)
    root = root if root.is_dir() else root.parent
    candidates = [root / "PKG-INFO", *sorted(root.glob("vllm_ascend-*.dist-info/METADATA"))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8", errors="replace")
    return None


# --- the kept sources -----------------------------------------------------------------------


class _Damaged(Exception):
    """A kept source file is missing or differs from its record."""


def release_texts(
    version: str, cache: Path, progress: Progress | None = None, package: str = "vllm"
) -> dict[str, str]:
    """Every ``.py`` file of vLLM ``version`` by member path, as text.

    Read from the kept sources when they are complete and intact; otherwise the wheel is
    downloaded (or taken from ``<cache>/archives``), its Python sources are kept, checked
    against the wheel's RECORD, and the wheel is dropped. Raises BadInput (OP003) when
    the release cannot be had.
    """
    return _from_kept(version, cache, progress, package, _read_kept)


def release_member(
    version: str, member: str, cache: Path, progress: Progress | None = None
) -> bytes:
    """One file of vLLM ``version`` (``vllm/v1/worker/gpu_model_runner.py``), from the kept
    sources that ``release_texts`` keeps, checked against their record; the release is
    fetched as there when they are missing or damaged. Raises BadInput (OP003) when the
    release cannot be had or has no such file."""
    data = _from_kept(version, cache, progress, "vllm", lambda f: _kept_member(f, member))
    if data is None:
        raise BadInput.at(Code.OP003, f"vllm=={version}", 0, f"the release has no {member}")
    return data


_T = TypeVar("_T")


def _from_kept(
    version: str,
    cache: Path,
    progress: Progress | None,
    package: str,
    read: Callable[[Path], _T],
) -> _T:
    """``read`` of the kept sources of ``version``; kept anew first when they are missing
    or damaged (``read`` raises ``_Damaged``)."""
    folder = cache / "src" / f"vllm-{version}"
    try:
        return read(folder)
    except _Damaged as damage:
        if progress is not None and (folder / RECORD_NAME).is_file():
            progress(f"kept sources of vllm=={version} are damaged ({damage}); fetching again")
    _keep_sources(version, folder, cache, progress, package)
    try:
        return read(folder)
    except _Damaged as damage:  # pragma: no cover - only a concurrent writer gets here
        raise BadInput.at(Code.OP003, f"vllm=={version}", 0, f"kept sources: {damage}") from None


def _record_lines(folder: Path) -> list[str]:
    try:
        return (folder / RECORD_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        raise _Damaged("no record") from None


def _kept_member(folder: Path, member: str) -> bytes | None:
    """``member`` of the kept sources in ``folder``, checked; None when the record lacks it."""
    for line in _record_lines(folder):
        name, digest, size = _record_row(line)
        if name == member:
            return _checked(folder, name, digest, size)
    return None


def _checked(folder: Path, member: str, digest: str, size: int) -> bytes:
    try:
        data = (folder / member).read_bytes()
    except OSError:
        raise _Damaged(f"{member} is missing") from None
    if len(data) != size or _digest(data) != digest:
        raise _Damaged(f"{member} differs from its record")
    return data


def _read_kept(folder: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for line in _record_lines(folder):
        member, digest, size = _record_row(line)
        texts[member] = _checked(folder, member, digest, size).decode("utf-8", "replace")
    return texts


def _record_row(line: str) -> tuple[str, str, int]:
    parts = line.rsplit(",", 2)
    if len(parts) != 3 or not parts[1].startswith("sha256=") or not parts[2].isdigit():
        raise _Damaged(f"unreadable record line {line!r}")
    member = parts[0]
    if not _safe(member):
        raise _Damaged(f"unsafe member name {member!r}")
    return member, parts[1].removeprefix("sha256="), int(parts[2])


def _digest(data: bytes) -> str:
    """The RECORD form of a sha256: urlsafe base64 without padding (PEP 376)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _safe(member: str) -> bool:
    pure = PurePosixPath(member)
    return not (pure.is_absolute() or ".." in pure.parts or "\\" in member or not member)


def _keep_sources(
    version: str, folder: Path, cache: Path, progress: Progress | None, package: str
) -> None:
    """Keep the wheel's Python sources in ``folder``, the record last; drop the wheel."""
    import tempfile

    cached = cache / "archives" / f"vllm-{version}"
    if cached.is_dir() and any(cached.glob("*.whl")):
        _extract(fetch_archive("vllm", version, cache, progress), folder, package)
        return
    with tempfile.TemporaryDirectory(prefix="omni-port-vllm-") as tmp:
        wheel = fetch_archive("vllm", version, Path(tmp), progress)
        if progress is not None:
            progress(f"keeping the Python sources of vllm=={version}, dropping the wheel")
        _extract(wheel, folder, package)


def _extract(wheel: Path, folder: Path, package: str) -> None:
    import zipfile

    label = wheel.name
    if not zipfile.is_zipfile(wheel):
        message = "not a wheel: vLLM's sources are read from a wheel, checked against its RECORD"
        raise BadInput.at(Code.OP003, label, 0, message)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record_name = next((n for n in names if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)), "")
        if not record_name:
            raise BadInput.at(Code.OP003, label, 0, "the wheel has no RECORD")
        record = archive.read(record_name).decode("utf-8", "replace")
        kept: list[str] = []
        for line in record.splitlines():
            parts = line.rsplit(",", 2)
            member = parts[0]
            if not (member.startswith(package + "/") and member.endswith(".py")):
                continue
            if len(parts) != 3 or not _safe(member):
                raise BadInput.at(Code.OP003, label, 0, f"unreadable RECORD line {line!r}")
            data = archive.read(member)
            if f"sha256={_digest(data)}" != parts[1] or str(len(data)) != parts[2]:
                raise BadInput.at(Code.OP003, label, 0, f"{member} does not match its RECORD")
            # No fsync per file (two thousand of them): the record, written atomically last,
            # is the commit point, and every read checks each file against it.
            target = folder / member
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            kept.append(line)
    if not kept:
        raise BadInput.at(Code.OP003, label, 0, f"the wheel holds no {package}/*.py")
    write_atomic(folder / RECORD_NAME, "".join(f"{line}\n" for line in kept).encode())


# --- what verification reads ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """vLLM's Python sources for verification, or why there are none."""

    #: Text by member path (``vllm/config/__init__.py``); None when unavailable.
    texts: dict[str, str] | None
    #: What was read (``vllm==0.23.0``) or wanted, with how the release was chosen.
    label: str
    #: Why ``texts`` is None ("" when it is not).
    problem: str = ""


def verification_sources(
    wanted: str, ascend: Spec, cache: Path, progress: Progress | None = None
) -> Found:
    """vLLM's sources as ``wanted`` says: "" pairs them with the vllm-ascend ``ascend``
    (the installed vLLM when it is that release), ``installed``, ``vllm==X`` or ``X``, or a
    path to a tree holding ``vllm/``. Never raises on a release that cannot be had: the
    problem is returned, naming the release.
    """
    if wanted:
        spec = parse_spec(wanted, "vllm")
        label = spec.label
    else:
        pairing = pairing_from_metadata(ascend_metadata(ascend, cache, progress) or "")
        if pairing is None:
            problem = f"cannot tell which vLLM release {ascend.label} pairs with (pass --vllm)"
            return Found(None, "vllm", problem)
        label = f"vllm=={pairing.version} (paired with {ascend.label}: {pairing.evidence})"
        spec = _installed_if(pairing.version) or Spec(SpecKind.PYPI, "vllm", pairing.version)
    try:
        if spec.kind is SpecKind.PYPI:
            texts: dict[str, str] | None = release_texts(spec.version, cache, progress)
        else:
            texts = package_texts(spec, "vllm", cache, progress)
    except BadInput as error:
        return Found(None, label, f"{label} could not be fetched: {error.findings[0].message}")
    if not texts:
        return Found(None, label, f"{label} holds no vllm package")
    return Found(texts, label)


def _installed_if(version: str) -> Spec | None:
    """The installed vLLM when it is ``version`` (found, never imported)."""
    import importlib.util
    from importlib import metadata

    if importlib.util.find_spec("vllm") is None:
        return None
    try:
        installed = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None
    return Spec(SpecKind.INSTALLED, "vllm") if installed == version else None
