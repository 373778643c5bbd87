"""The vLLM release a vllm-ascend release pairs with, and its Python sources kept in the cache.

vllm-ascend runs on one vLLM release. Its metadata (a wheel's ``METADATA``, an sdist's
``PKG-INFO``) says which where it pins ``vllm`` (``Requires-Dist: vllm==X``); the releases
on PyPI do not, and their README (the long description) states the convention instead:
"vLLM (the same version as vllm-ascend)", i.e. the release part of vllm-ascend's own
version (0.19.1rc1 -> 0.19.1).

A vLLM wheel is about 300 MB, of which 27 MB are Python sources. Those are read from it
(by range: about 11 MB of requests) and kept, once, in ``<cache>/src/vllm-X/`` (``gpu-delta``
reads vLLM's runners from there too, ``sources.kept``), checked against the wheel's own
RECORD; a whole wheel, when one is downloaded, is deleted. Every read checks each file
against the kept record, and a damaged copy is fetched again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources import kept
from omni_port.sources.kept import RECORD_NAME
from omni_port.sources.upstream import (
    Progress,
    Spec,
    SpecKind,
    package_texts,
    parse_spec,
    release_metadata,
)

__all__ = ["RECORD_NAME"]
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


def release_texts(
    version: str, cache: Path, progress: Progress | None = None, package: str = "vllm"
) -> dict[str, str]:
    """Every ``.py`` file of vLLM ``version`` by member path, as text.

    Read from the kept sources when they are complete and intact; otherwise they are read
    from the wheel (by range, or from the whole wheel, which is then dropped unless the
    cache already held it), checked against the wheel's RECORD, and kept. Raises BadInput
    (OP003) when the release cannot be had.
    """
    files = kept.package_sources("vllm", version, package, cache, progress)
    return {name: data.decode("utf-8", "replace") for name, data in files.items()}


def release_member(
    version: str, member: str, cache: Path, progress: Progress | None = None
) -> bytes:
    """One file of vLLM ``version`` (``vllm/v1/worker/gpu_model_runner.py``), from the kept
    sources that ``release_texts`` keeps, checked against their record; the release is
    fetched as there when they are missing or damaged. Raises BadInput (OP003) when the
    release cannot be had or has no such file."""
    folder = cache / "src" / f"vllm-{version}"
    fetch_again = kept.Refetch("vllm", version, cache, progress)
    data = kept.from_kept(folder, "vllm", fetch_again, lambda f, _: kept.kept_file(f, member))
    if data is None:
        raise BadInput.at(Code.OP003, f"vllm=={version}", 0, f"the release has no {member}")
    return data


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
