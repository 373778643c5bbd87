"""Locate package sources: a path, an installed package, or a pinned PyPI wheel in a cache.

Nothing here imports the packages it reads: an installed package is found with
``importlib.util.find_spec`` on its top-level name (which runs no package code) and a
wheel is opened with ``zipfile``. Downloads go through ``pip download`` (which checks the
index's hashes) into a cache keyed by distribution name and version.
"""

from __future__ import annotations

import enum
import importlib.util
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from omni_port.errors import BadInput
from omni_port.model import Code
from omni_port.sources.textio import (
    SourceText,
    copy_atomic,
    decode,
    read_source,
    sha256,
    write_atomic,
)

if TYPE_CHECKING:
    from omni_port.pyast.syntax import Tree

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
ASCEND_MODULE = ASCEND_RUNNER.removesuffix(".py").replace("/", ".")
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

Progress = Callable[[str], None]


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


#: ``PATH@REV``: a revision of a git clone (the path holds a ``.git``; the revision has no
#: ``@`` and no path separator other than a branch's ``/``).
_GIT = re.compile(r"^(?P<path>.+)@(?P<rev>[^@\s]+)$")


def parse_spec(text: str, dist: str) -> Spec:
    """``installed``, ``NAME==VERSION``, a bare version of ``dist``, ``PATH@REV`` (a tag or
    commit of a local git clone), or a path."""
    text = text.strip()
    if text == "installed":
        return Spec(SpecKind.INSTALLED, dist)
    git = _GIT.match(text)
    if git and not os.path.exists(text) and (Path(git.group("path")) / ".git").exists():
        return Spec(SpecKind.GIT, dist, path=git.group("path"), rev=git.group("rev"))
    pinned = _PIN.match(text)
    if pinned and not os.path.exists(text):
        return Spec(SpecKind.PYPI, pinned.group("dist"), pinned.group("version"))
    if _VERSION.match(text) and not os.path.exists(text):
        return Spec(SpecKind.PYPI, dist, text)
    return Spec(SpecKind.PATH, dist, path=text)


def default_cache() -> Path:
    """``$OMNI_PORT_CACHE``, else ``$XDG_CACHE_HOME/omni-port``, else ``~/.cache/omni-port``."""
    explicit = os.environ.get("OMNI_PORT_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "omni-port"


@dataclass(frozen=True, slots=True)
class Located:
    """One source file read from wherever its spec points."""

    #: Stable label of the distribution (``vllm-ascend==0.23.0`` or the given path).
    label: str
    #: Member path inside the package tree, e.g. ``vllm_ascend/worker/model_runner_v1.py``.
    member: str
    source: SourceText
    #: For an NPU runner of a release or checkout: omni's GPU runner beside it (None when
    #: there is none), whose blocks are a second record of where omni's code goes.
    counterpart: SourceText | None = None


@dataclass(frozen=True, slots=True)
class Release:
    """One upstream release (or commit of a clone) of the upstream module, as text."""

    #: ``vllm-ascend==0.21.0rc1``, or ``PATH@REV`` for a commit of a clone.
    label: str
    #: The module's source.
    text: str
    #: Where parsed trees of its members may be kept (None: parsed each time).
    cache: Path | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Upstream:
    """A parsed upstream module: what extract compares the runners with (their base), what
    sync ports them onto (the target), and what verify checks overrides against."""

    #: ``vllm-ascend==0.23.0`` or a path.
    label: str
    #: sha256 of the module's bytes.
    sha256: str
    tree: Tree
    #: Dotted module name the copies come from, for imports of its own definitions.
    module: str = ASCEND_MODULE
    #: Class whose methods the runner classes copy; "" keeps the class each copy names.
    #: Naming it ports copies of another class, e.g. GPU-runner blocks onto NPU upstream.
    class_name: str = ""
    #: Upstream releases (or commits) around an upgrade, oldest first: the evidence of the
    #: upstream-history rule (sync reads it when the patches' base is among them).
    history: tuple[Release, ...] = ()

    @property
    def text(self) -> str:
        """The module's source text (line endings normalized to "\\n")."""
        return self.tree.text(1, len(self.tree.lines))


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
    """A wheel member, kept beside the wheel once read (reopening a wheel costs ~20 ms).

    The kept copy is checked against the sha256 recorded when it was kept: a truncated or
    edited copy is read again from the wheel, never blamed on upstream nor used silently.
    """
    if not _safe_member(member):
        raise BadInput.at(Code.OP003, spec.label, 0, f"refusing unsafe member name {member!r}")
    kept = cache / "src" / f"{spec.dist}-{spec.version}" / member
    data = kept_member(kept)
    if data is not None:
        return data
    if kept.is_file() and progress is not None:
        recorded = kept.with_name(kept.name + DIGEST_SUFFIX).is_file()
        why = "does not match its recorded sha256" if recorded else "has no recorded sha256"
        progress(f"the cached copy of {spec.label}/{member} {why}: reading it from the wheel")
    data = read_member(fetch_wheel(spec.dist, spec.version, cache, progress), member)
    keep_member(kept, data)
    return data


#: Suffix of the file recording the sha256 of a kept wheel member.
DIGEST_SUFFIX = ".sha256"


def kept_member(kept: Path) -> bytes | None:
    """The bytes of a member kept in the cache, or None when it is missing or does not
    match the sha256 recorded beside it (truncated, edited, or kept before digests were)."""
    try:
        data = kept.read_bytes()
        recorded = kept.with_name(kept.name + DIGEST_SUFFIX).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return data if sha256(data) == recorded else None


def keep_member(kept: Path, data: bytes) -> None:
    """Keep a member in the cache with its sha256 (the digest goes last: a run killed in
    between leaves a member without a matching digest, which is read again)."""
    write_atomic(kept, data)
    write_atomic(kept.with_name(kept.name + DIGEST_SUFFIX), (sha256(data) + "\n").encode())


def _from_path(spec: Spec, member: str) -> Located:
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
    label = f"{spec.dist}=={version} (installed)"
    return Located(label, member, read_source(path))


# --- wheels ---------------------------------------------------------------------------------
# These helpers import zipfile, subprocess, shutil and tempfile where they run: `check` on
# cached inputs never opens a wheel, and those modules are a tenth of its start-up time.


def fetch_wheel(dist: str, version: str, cache: Path, progress: Progress | None = None) -> Path:
    """The cached wheel of ``dist==version``, downloaded with pip on first use.

    A cached wheel that is not a whole zip archive (a truncated copy) is downloaded again.
    Concurrent runs on a cold cache each copy through a temporary file of their own.
    """
    import zipfile

    target = cache / "wheels" / f"{dist}-{version}"
    cached = sorted(target.glob("*.whl")) if target.is_dir() else []
    if cached and zipfile.is_zipfile(cached[0]):
        return cached[0]
    import tempfile

    if progress is not None:
        again = " again (the cached wheel is damaged)" if cached else ""
        progress(f"downloading {dist}=={version} from PyPI{again}")
    with tempfile.TemporaryDirectory(prefix="omni-port-") as tmp:
        _pip_download(f"{dist}=={version}", Path(tmp), dist, version)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise BadInput.at(Code.OP003, f"{dist}=={version}", 0, "pip downloaded no wheel")
        final = target / wheels[0].name
        copy_atomic(wheels[0], final)
    return final


#: What pip prints when it cannot reach an index (its retries and urllib3's errors).
_UNREACHABLE = re.compile(
    r"""
    Retrying\ \(Retry\(                       # pip's retry warnings
    | NewConnectionError | ConnectTimeoutError   # urllib3's connection failures
    | Failed\ to\ establish\ a\ new\ connection
    | Temporary\ failure\ in\ name\ resolution | Name\ or\ service\ not\ known
    | Network\ is\ unreachable | Max\ retries\ exceeded | ProxyError
    | Could\ not\ fetch\ URL
    """,
    re.VERBOSE,
)


def _pip_command(dest: str, requirement: str, *extra: str) -> list[str]:
    """``pip download`` of one wheel, no dependencies, never an sdist (nothing is built)."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        *extra,
        "--disable-pip-version-check",
        "--dest",
        dest,
        requirement,
    ]


def _pip_download(requirement: str, dest: Path, dist: str, version: str) -> None:
    import subprocess

    command = _pip_command(str(dest), requirement)
    output = ""
    for attempt in range(3):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return
        output = result.stdout + result.stderr
        if "No matching distribution" in output:
            listed = _listed_versions(output)
            released = _index_versions(dist) if listed else None
            message = _no_wheel_message(dist, version, output, released)
            raise BadInput.at(Code.OP003, requirement, 0, message)
        time.sleep(2 * (attempt + 1))
    last = output.strip().splitlines()[-1] if output.strip() else "no output"
    raise BadInput.at(Code.OP003, requirement, 0, f"pip download failed after 3 attempts: {last}")


def _listed_versions(output: str) -> list[str]:
    """The versions pip says it found (with a wheel); pip writes "none" for no version."""
    listed = re.search(r"from versions: ([^)]*)\)", output)
    found = [v.strip() for v in listed.group(1).split(",")] if listed else []
    return [v for v in found if v and v != "none"]


def _index_versions(dist: str) -> list[str] | None:
    """Every release of ``dist`` on the index, sdists included (``pip index versions``);
    None when pip cannot say."""
    import subprocess

    command = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        "--pre",
        "--disable-pip-version-check",
        dist,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"^Available versions: (.*)$", result.stdout, re.MULTILINE)
    if result.returncode != 0 or not found:
        return None
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


def _no_wheel_message(
    dist: str, version: str, output: str, released: Sequence[str] | None = None
) -> str:
    """Why pip found no wheel of ``dist==version``: the index could not be reached, the
    release does not exist, or it is sdist-only. ``released`` lists every release on the
    index, sdists included (None when unknown)."""
    listed = _listed_versions(output)
    if not listed:
        if _UNREACHABLE.search(output):
            return (
                f"the package index could not be reached to fetch {dist}=={version} "
                "(offline, or a proxy or index setting of pip); check the network, or pass "
                "a source path instead"
            )
        return (
            f"the package index lists no wheel of {dist} at all: it could not be reached "
            "(offline?), or it has no such project; check the network and the name, or "
            "pass a source path instead"
        )
    if released is not None and not any(_same_version(version, v) for v in released):
        message = f"{dist}=={version} does not exist on the package index"
    elif released is None:
        message = (
            f"{dist}=={version} has no wheel on the package index (no such release, or an "
            "sdist-only one, which cannot be fetched without building it)"
        )
    else:
        message = (
            f"{dist}=={version} has no wheel on the package index (an sdist-only release "
            "cannot be fetched without building it)"
        )
    nearest = _nearest(version, listed)
    if nearest:
        message += f"; nearest release with a wheel: {dist}=={nearest}"
    return message + "; or pass a source path instead"


def _same_version(a: str, b: str) -> bool:
    return a == b or (version_key(a) == version_key(b) and version_key(a) != ((), 0, 0, 0))


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


def _nearest(version: str, versions: list[str]) -> str:
    """The highest listed version not above ``version``, else the lowest above it."""
    key = version_key(version)
    below = [v for v in versions if version_key(v) <= key]
    if below:
        return max(below, key=version_key)
    return min(versions, key=version_key) if versions else ""


def _safe_member(name: str) -> bool:
    pure = PurePosixPath(name)
    return not (pure.is_absolute() or ".." in pure.parts or "\\" in name or name.startswith("/"))


def read_member(wheel: Path, member: str) -> bytes:
    """One file of a wheel; refuses absolute and ``..`` names (OP003)."""
    if not _safe_member(member):
        raise BadInput.at(Code.OP003, str(wheel), 0, f"refusing unsafe member name {member!r}")
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(member)
    except KeyError:
        raise BadInput.at(Code.OP003, str(wheel), 0, f"wheel has no {member}") from None
    except zipfile.BadZipFile as exc:
        raise BadInput.at(Code.OP003, str(wheel), 0, f"not a wheel: {exc}") from None


def python_members(wheel: Path, package: str) -> dict[str, bytes]:
    """Every ``.py`` file of ``package`` in a wheel, by member path; unsafe names refused."""
    import zipfile

    found: dict[str, bytes] = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not _safe_member(name):
                raise BadInput.at(
                    Code.OP003, str(wheel), 0, f"refusing unsafe member name {name!r}"
                )
            if name.startswith(package + "/") and name.endswith(".py"):
                found[name] = archive.read(name)
    return found


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

    A release comes from its cached wheel, an installed package from its directory (found,
    never imported), a path from the tree below it. A path to a single file has no package.
    """
    if spec.kind is SpecKind.PYPI:
        wheel = fetch_wheel(spec.dist, spec.version, cache, progress)
        members = python_members(wheel, package)
        return {name: data.decode("utf-8", "replace") for name, data in members.items()}
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


def wheel_versions(dist: str) -> list[str]:
    """Every version of ``dist`` with a wheel on the index, oldest first (asks pip).

    Raises BadInput (OP003) when pip lists none: the index could not be reached, or it has
    no such project.
    """
    import subprocess
    import tempfile

    command = _pip_command(tempfile.gettempdir(), f"{dist}==0.0.0.dev0", "--pre")
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    versions = _listed_versions(output)
    if not versions:
        raise BadInput.at(Code.OP003, dist, 0, _no_wheel_message(dist, "0.0.0.dev0", output))
    return sorted(versions, key=version_key)
