"""Loading the inputs of commands: sources, bases, upstreams, patches, package sources."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from omni_port.cli import (
    TOOL,
    Options,
    fail,
    summary,
)
from omni_port.errors import BadInput
from omni_port.extract import extractor
from omni_port.gpu import vllm_delta
from omni_port.model import Code, Finding, ModulePatches, PatchSet, Placement, Severity
from omni_port.patches import lockfile
from omni_port.patches.patchfile import render_patch_set
from omni_port.patches.store import Changes, apply, existing, plan, read_patch_set, unified_diff
from omni_port.pyast.syntax import parse
from omni_port.sources.textio import decode, encode
from omni_port.sources.upstream import (
    ASCEND_RUNNER,
    VLLM_RUNNER,
    Located,
    Spec,
    SpecKind,
    cached_wheel,
    locate,
    package_texts,
    parse_spec,
)
from omni_port.sync import splice
from omni_port.verify import checks

#: Packages whose imports must resolve against their pinned sources.
CHECKED_PACKAGES = frozenset({"vllm_ascend", "vllm_omni", "vllm"})
#: Package the generated runners replace, so that they resolve each other's imports.
RUNNER_PACKAGE = "vllm_omni.platforms.npu.worker"


def load_base(text: str, options: Options) -> extractor.Base:
    """Parse the upstream base named by ``text`` (a version, a path or ``installed``)."""
    located = locate(
        parse_spec(text, "vllm-ascend"), ASCEND_RUNNER, options.cache, options.progress()
    )
    source = located.source
    return extractor.Base(located.label, source.sha256, parse(source.text, source.path))


def default_vllm_specs(texts: Sequence[str]) -> list[str]:
    """The target vLLM of the source release (or checkout), and the minors around it."""
    version = ""
    for text in texts:
        spec = parse_spec(text, "vllm-omni")
        if spec.kind is SpecKind.PYPI:
            version = spec.version
        elif spec.kind is SpecKind.PATH:
            version = vllm_delta.omni_version_of(Path(spec.path))
        if version:
            break
    if not version:
        raise BadInput.at(
            Code.OP005, texts[0], 0,
            "cannot tell which vLLM release the sources target; pass --vllm vllm==X",
        )  # fmt: skip
    target = vllm_delta.target_vllm(version)
    return [target, *(v for v in vllm_delta.neighbours(target) if v != target)]


def load_vllm_bases(
    specs: Sequence[str], options: Options, member: str = VLLM_RUNNER
) -> tuple[dict[str, extractor.Base], list[Finding]]:
    """Every candidate that can be had; a candidate other than the first may be missing.

    ``member`` is the vLLM file compared (the V1 runner by default, the V2 one for V2).
    """
    bases: dict[str, extractor.Base] = {}
    notes: list[Finding] = []
    for number, text in enumerate(specs):
        try:
            located = vllm_delta.locate_vllm(
                parse_spec(text, "vllm"), options.cache, options.progress(), member
            )
        except BadInput as error:
            if number == 0:
                raise
            first = error.findings[0]
            notes.append(
                Finding("note", Code.OP003, first.path, 0, f"candidate skipped: {first.message}",
                        severity=Severity.NOTE)
            )  # fmt: skip
            continue
        source = located.source
        bases[located.label] = extractor.Base(
            located.label, source.sha256, parse(source.text, source.path)
        )
    return bases, notes


def extract_all(
    sources: Sequence[Located], base: extractor.Base | None, ext_options: extractor.ExtractOptions
) -> tuple[PatchSet, list[Finding]]:
    """Extract every source; all bad inputs are reported together (BadInput) and none is kept."""
    modules: list[ModulePatches] = []
    findings: list[Finding] = []
    failures: list[Finding] = []
    for located in sources:
        name = Path(located.member).name
        try:
            extraction = extractor.extract_module(located.source, name, base, ext_options)
        except BadInput as error:
            failures.extend(error.findings)
            continue
        module = extraction.module
        if located.label != located.source.path:
            module = replace(module, source=located.source.path)
        modules.append(module)
        findings.extend(extraction.findings)
    if failures:
        fail(failures)
    return PatchSet(tuple(modules)), findings


def carry_edits(new: PatchSet, directory: Path) -> PatchSet:
    """Keep titles and conflict resolutions a maintainer wrote into the previous patches."""
    try:
        old = read_patch_set(directory)
    except BadInput:
        return new
    previous = {piece.id: piece for module in old.modules for piece in module.pieces}
    modules = []
    for module in new.modules:
        pieces = tuple(_carry(piece, previous.get(piece.id)) for piece in module.pieces)
        modules.append(replace(module, pieces=pieces))
    return PatchSet(tuple(modules))


def _carry(piece: Any, old: Any) -> Any:
    if old is None or type(old) is not type(piece) or not hasattr(piece, "title"):
        return piece
    piece = replace(piece, title=old.title) if old.title else piece
    anchor = getattr(piece, "anchor", None)
    old_anchor = getattr(old, "anchor", None)
    if anchor is None or old_anchor is None or old_anchor.resolution is None:
        return piece
    if replace(old_anchor, resolution=None) == anchor:
        piece = replace(piece, anchor=old_anchor)
    return piece


def write_files(
    options: Options,
    root: Path,
    files: dict[str, bytes],
    stale: Iterable[str],
    check: bool,
    diff: bool,
) -> Changes:
    """Write (or, with --check, only compare) a tree of outputs; print a diff on request."""
    changes = plan(root, files, stale)
    if diff:
        click.echo(unified_diff(root, files, changes), nl=False)
    if check:
        for rel in (*changes.changed, *changes.removed):
            summary(
                options, f"would {'remove' if rel in changes.removed else 'rewrite'} {root / rel}"
            )
    elif not changes.clean:
        apply(root, files, changes)
    return changes


def load_upstream(text: str, options: Options, class_name: str = "") -> splice.Upstream:
    """Parse the upstream module named by ``text`` (a version, a path or ``installed``)."""
    located = locate(
        parse_spec(text, "vllm-ascend"), ASCEND_RUNNER, options.cache, options.progress()
    )
    source = located.source
    module = ASCEND_RUNNER.removesuffix(".py").replace("/", ".")
    tree = parse(source.text, source.path)
    return splice.Upstream(located.label, source.sha256, tree, module, class_name)


def read_patches(directory: Path) -> tuple[PatchSet, dict[str, str]]:
    """A patch set and the text of its files (for the digest in headers and the lock)."""
    patch_set = read_patch_set(directory)
    return patch_set, render_patch_set(patch_set, TOOL)


def previous_outputs(out: Path) -> list[str]:
    """Files the previous sync wrote (from its lock), so stale ones can be removed."""
    lock_path = out / lockfile.LOCK_NAME
    if not lock_path.is_file():
        return []
    try:
        return list(lockfile.parse(lock_path.read_text(encoding="utf-8"), str(lock_path)).outputs)
    except BadInput:
        return []


def verification_context(
    options: Options,
    patch_set: PatchSet,
    upstream: splice.Upstream,
    upstream_text: str,
    source_text: str,
) -> checks.Context:
    """Package sources for import resolution: vllm-ascend, vllm-omni, and vllm when at hand."""
    texts: dict[str, str] = {}
    packages: set[str] = set()
    wanted = [
        (parse_spec(upstream_text, "vllm-ascend"), "vllm_ascend"),
        (parse_spec(source_text, "vllm-omni"), "vllm_omni"),
    ]
    vllm = _vllm_spec(options)
    if vllm is not None:
        wanted.append((vllm, "vllm"))
    for spec, package in wanted:
        found = package_texts(spec, package, options.cache, options.progress())
        if found:
            texts.update(found)
            packages.add(package)
    sources = checks.PackageSources(checks.module_names(texts), frozenset(packages))
    text = "".join(line + "\n" for line in upstream.tree.lines)
    return checks.Context(
        package=RUNNER_PACKAGE,
        sources=sources,
        upstream=checks.UpstreamInfo(upstream.module, text),
        checked_packages=CHECKED_PACKAGES,
        unused_in_source=checks.unused_in_source_of(patch_set),
    )


def _vllm_spec(options: Options) -> Spec | None:
    """vLLM's source when it is installed or already cached; it is never downloaded for this."""
    if importlib.util.find_spec("vllm") is not None:
        return Spec(SpecKind.INSTALLED, "vllm")
    return cached_wheel("vllm", options.cache)


def verify_outputs(
    files: Mapping[str, bytes], placements: Sequence[Placement], patch_set: PatchSet,
    context: checks.Context,
) -> list[Finding]:  # fmt: skip
    modules = {
        name: decode(data, name).text for name, data in files.items() if name.endswith(".py")
    }
    return checks.verify(modules, placements, checks.overrides_of(patch_set), context)


def read_lock(out: Path) -> lockfile.Lock:
    path = out / lockfile.LOCK_NAME
    if not path.is_file():
        raise BadInput.at(Code.OP204, str(path), 0, "no lock file here; run `omni-port sync` first")
    return lockfile.parse(path.read_text(encoding="utf-8"), str(path))


def read_bytes_or_none(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def save_patches(options: Options, directory: Path, patch_set: PatchSet) -> None:
    """Write a patch set back: changed files atomically, files of pieces that are gone removed."""
    files = {rel: encode(text) for rel, text in render_patch_set(patch_set, TOOL).items()}
    write_files(
        options, directory, files, existing(directory, "*/*.patch"), check=False, diff=False
    )
