"""Load the inputs of a V2 composition: omni's V2 runners, the NPU V2 runner, vLLM's V2 runner.

The thin I/O layer of the V2 stages: every file is read out of a wheel in the cache, a
path or the installed package (never imported); everything else in ``omni_port.v2`` is
pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from omni_port.errors import BadInput
from omni_port.gpu import vllm_delta
from omni_port.gpu.parity import AllowEntry, parse_allow_list
from omni_port.model import Code, SourceText, Upstream
from omni_port.sources import trees, versionfile
from omni_port.sources.textio import read_source
from omni_port.sources.upstream import (
    ASCEND_V2_RUNNER,
    OMNI_V2_RUNNERS,
    VLLM_V2_RUNNER,
    Progress,
    SpecKind,
    locate,
    locate_runners,
    package_texts,
    parse_spec,
)
from omni_port.v2 import ascend, overrides, pairing, substitute
from omni_port.v2.ascend import AscendPatches
from omni_port.v2.pipeline import PACKAGE_DIR, Inputs

#: Dotted module of the NPU V2 runner (copies of its methods import its names from here).
ASCEND_V2_MODULE = ASCEND_V2_RUNNER.removesuffix(".py").replace("/", ".")
#: Dotted module of vLLM's V2 runner.
VLLM_V2_MODULE = VLLM_V2_RUNNER.removesuffix(".py").replace("/", ".")


@dataclass(frozen=True, slots=True)
class Settings:
    """Where each input of a V2 composition comes from, as the user wrote it."""

    #: vLLM-Omni's V2 runners: a release, a checkout, a folder or files.
    source: str
    #: vllm-ascend whose V2 runner the composition extends.
    upstream: str
    #: The vLLM release that vllm-ascend runs on ("" = the one it pairs with).
    vllm_base: str = ""
    #: Candidate vLLM releases of omni's delta ("()" = omni's target and its neighbours).
    vllm: tuple[str, ...] = ()
    #: Reviewed methods whose NPU override omni's is meant to shadow ("" = none).
    allow: str = ""
    npu_class: str = overrides.NPU_CLASS
    #: Compose even when the two sides run on different vLLM releases (the output says so).
    force_vllm_mismatch: bool = False
    #: How outputs name the allow-list ("" = as ``allow``): relative to the repository root,
    #: so that a lock and its headers do not depend on where the checkout lies.
    allow_label: str = ""


def load(settings: Settings, cache: Path, progress: Progress | None = None) -> Inputs:
    """Every input, located and parsed; BadInput (exit 2) when one cannot be had, or when
    the two sides target different vLLM releases and ``force_vllm_mismatch`` is off."""
    found = pairing.check(settings.source, settings.upstream, cache, progress)
    if found.mismatch and not settings.force_vllm_mismatch:
        raise BadInput.at(Code.OP511, settings.source, 0, found.refusal)
    label, omni = load_omni(settings.source, cache, progress)
    npu = load_npu(settings.upstream, cache, progress, settings.npu_class)
    base_spec = settings.vllm_base or found.npu_vllm or paired_vllm(settings.upstream, cache)
    base = load_vllm(base_spec, cache, progress)
    specs = settings.vllm or tuple(candidate_specs(settings.source, cache))
    candidates = load_candidates(specs, cache, progress)
    allowed, allow_input = load_allow(settings.allow, settings.allow_label)
    texts = _package(settings.upstream, "vllm-ascend", "vllm_ascend", cache, progress)
    vllm_runner = ascend.vllm_runner(base.text, VLLM_V2_MODULE)
    patches = ascend.read_patches(texts or {}, vllm_runner, npu.text)
    omni_texts = _package(settings.source, "vllm-omni", "vllm_omni", cache, progress)
    classes = class_texts(
        _Classes(texts or {}, omni_texts or {}, omni, base_spec, patches), cache, progress
    )
    return Inputs(
        omni,
        label,
        npu,
        base,
        candidates,
        allowed,
        allow_input,
        patches=patches,
        omni_texts=omni_texts,
        pairing=found,
        classes=classes,
    )


@dataclass(frozen=True, slots=True)
class _Classes:
    """Where the modules of substituted classes are read from."""

    ascend: Mapping[str, str]
    omni: Mapping[str, str]
    runners: Mapping[str, SourceText]
    #: The vLLM release the NPU runner runs on (``vllm==0.30.0`` or a path).
    vllm: str
    patches: AscendPatches


def class_texts(where: _Classes, cache: Path, progress: Progress | None = None) -> dict[str, str]:
    """The substitute's module (vllm-ascend) and vLLM's module of the class it substitutes,
    by member path, for every omni class built on a substituted class. A vLLM module that
    cannot be had is left out (the class is then not rebased, and says why)."""
    texts = dict(where.omni)
    texts.update({PACKAGE_DIR + name: source.text for name, source in where.runners.items()})
    found: dict[str, str] = {}
    for bypass in substitute.find(
        texts, substitute.package_paths(texts, PACKAGE_DIR), where.patches
    ):
        module = bypass.substitute.module_path
        if module in where.ascend:
            found[module] = where.ascend[module]
        found.update(_vllm_module(where.vllm, bypass.substitute.original[0], cache, progress))
    return found


def _vllm_module(spec: str, dotted: str, cache: Path, progress: Progress | None) -> dict[str, str]:
    base = dotted.replace(".", "/")
    for member in (f"{base}.py", f"{base}/__init__.py"):
        try:
            located = vllm_delta.locate_vllm(parse_spec(spec, "vllm"), cache, progress, member)
        except BadInput:
            continue
        return {member: located.source.text}
    return {}


#: How far above a path its package root may be (``vllm_ascend/worker/v2/model_runner.py``).
_PACKAGE_DEPTH = 4


def _package(
    text: str, dist: str, package: str, cache: Path, progress: Progress | None
) -> dict[str, str] | None:
    """Every ``.py`` file of a package, by member path; None when the input has no package
    (a single file, a folder of runner files)."""
    spec = parse_spec(text, dist)
    if spec.kind is SpecKind.PATH:
        root = Path(spec.path)
        root = root if root.is_dir() else root.parent
        # The tree above a module given by path (``.../vllm_ascend/worker/v2/x.py``), not
        # some unrelated checkout further up.
        for candidate in (root, *root.parents[:_PACKAGE_DEPTH]):
            if (candidate / package).is_dir():
                return package_texts(parse_spec(str(candidate), dist), package, cache, progress)
        return None
    return package_texts(spec, package, cache, progress)


def load_omni(
    text: str, cache: Path, progress: Progress | None = None
) -> tuple[str, dict[str, SourceText]]:
    """The label and the V2 runner modules (by file name) a source argument names."""
    located = locate_runners(text, cache, progress, OMNI_V2_RUNNERS)
    return located[0].label, {Path(r.member).name: r.source for r in located}


def load_npu(
    text: str, cache: Path, progress: Progress | None = None, class_name: str = ""
) -> Upstream:
    """vllm-ascend's V2 runner module, parsed, as the upstream of the composition's copies."""
    spec = parse_spec(text, "vllm-ascend")
    located = locate(spec, ASCEND_V2_RUNNER, cache, progress)
    tree = trees.parsed(located.source, cache)
    name = class_name or overrides.NPU_CLASS
    return Upstream(located.label, located.source.sha256, tree, ASCEND_V2_MODULE, name)


def load_vllm(text: str, cache: Path, progress: Progress | None = None) -> Upstream:
    """vLLM's V2 runner module of one release (or path), parsed."""
    spec = parse_spec(text, "vllm")
    located = vllm_delta.locate_vllm(spec, cache, progress, VLLM_V2_RUNNER)
    tree = trees.parsed(located.source, cache)
    return Upstream(located.label, located.source.sha256, tree, VLLM_V2_MODULE)


def paired_vllm(upstream: str, cache: Path) -> str:
    """The vLLM release a vllm-ascend release runs on, by vllm-ascend's version convention.

    vllm-ascend's README (in its wheel's metadata) states the pairing: "vLLM (the same
    version as vllm-ascend)"; a release candidate pairs with the final vLLM release of its
    number (0.26.0rc1 with vllm 0.26.0). A path pairs through ``vllm_ascend/_version.py``.
    Raises BadInput (OP005) when the version cannot be told.
    """
    spec = parse_spec(upstream, "vllm-ascend")
    version = spec.version
    if spec.kind is SpecKind.PATH:
        version = _tree_version(Path(spec.path))
    elif spec.kind is SpecKind.INSTALLED:
        version = _installed_version(spec.dist)
    found = re.match(r"^(\d+\.\d+\.\d+)", version)
    if found is None:
        raise BadInput.at(
            Code.OP005,
            upstream,
            0,
            "cannot tell which vLLM release this vllm-ascend runs on; pass --vllm-base vllm==X",
        )
    return f"vllm=={found.group(1)}"


def _tree_version(path: Path) -> str:
    """The version of the vllm-ascend tree ``path`` is in (or is): the nearest folder at or
    above it with ``vllm_ascend/_version.py``; "" when none has one."""
    for root in (path, *path.parents):
        if versionfile.version_file(root, "vllm_ascend").is_file():
            return versionfile.tree_version(root, "vllm_ascend")
    return ""


def _installed_version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def candidate_specs(source: str, cache: Path) -> list[str]:
    """The vLLM release omni's source targets (same major.minor) and the minors around it."""
    spec = parse_spec(source, "vllm-omni")
    version = spec.version if spec.kind is SpecKind.PYPI else ""
    if spec.kind is SpecKind.PATH:
        version = vllm_delta.omni_version_of(Path(spec.path))
    if not version:
        raise BadInput.at(
            Code.OP005,
            source,
            0,
            "cannot tell which vLLM release the V2 runners target; pass --vllm vllm==X",
        )
    del cache
    target = vllm_delta.target_vllm(version)
    return [target, *(v for v in vllm_delta.neighbours(target) if v != target)]


def load_candidates(
    specs: Sequence[str], cache: Path, progress: Progress | None = None
) -> dict[str, Upstream]:
    """Every candidate that can be had; the first must be (it is the target)."""
    bases: dict[str, Upstream] = {}
    for number, text in enumerate(specs):
        try:
            base = load_vllm(text, cache, progress)
        except BadInput as error:
            if number == 0:
                raise
            if progress is not None:
                progress(f"vLLM candidate skipped: {error.findings[0].message}")
            continue
        bases[base.label] = base
    return bases


def load_allow(path: str, label: str = "") -> tuple[tuple[AllowEntry, ...], tuple[str, str] | None]:
    """The reviewed shadowed methods and the file's (label, sha256), the entries and the
    label naming it as ``label`` does (``path`` when ""); none for ""."""
    if not path:
        return (), None
    source = read_source(path)
    label = label or path
    return parse_allow_list(source.text, label), (label, source.sha256)
