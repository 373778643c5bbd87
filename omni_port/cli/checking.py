"""The checks behind `check`: everything that parses, run only when an input changed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from omni_port.catalog import drift, markdown
from omni_port.cli import TOOL, Options, shown, v2
from omni_port.cli.check import CheckInputs
from omni_port.cli.inputs import (
    carry_edits,
    extract_all,
    load_base,
    load_upstream,
    load_vllm_bases,
    read_bytes_or_none,
    read_patches,
    verification_context,
    verify_outputs,
)
from omni_port.cli.sync import sync_with_transplants
from omni_port.errors import BadInput
from omni_port.extract import extractor
from omni_port.extract.markers import scan
from omni_port.gpu import parity
from omni_port.model import Code, Finding, PatchSet
from omni_port.patches import lockfile
from omni_port.patches.patchfile import INDEX_NAME, render_patch_set
from omni_port.patches.store import existing, read_patch_set
from omni_port.pyast.syntax import Tree, parse
from omni_port.sources.textio import SourceText, encode, read_source


def run_checks(inputs: CheckInputs, options: Options) -> list[Finding]:
    """Every drift check the inputs allow, in a stable order."""
    runners = [drift.Runner(Path(s.member).name, _parse_lenient(s.source)) for s in inputs.sources]
    findings: list[Finding] = []
    for runner in runners:
        findings.extend(scan(runner.tree).findings)
    base_tree = load_base(inputs.base, options) if inputs.base else None
    ext_options = extractor.ExtractOptions(
        upstream_class=options.config.upstream_class, lenient=True
    )
    patch_set, _ = extract_all(inputs.sources, base_tree, ext_options)
    if inputs.catalog_path is not None:
        source = read_source(inputs.catalog_path)
        parsed = markdown.parse(source.text, source.path)
        findings.extend(drift.catalog_findings(parsed, source.path, runners))
    if base_tree is not None:
        findings.extend(drift.divergence_findings(patch_set.modules))
    findings.extend(_stale_patches(inputs, options, patch_set, base_tree))
    findings.extend(_stale_generated(inputs, options))
    if inputs.gpu:
        findings.extend(_parity(inputs, options, runners))
    if v2.configured(options):
        findings.extend(v2.check_tree(options))
    return findings


def _parse_lenient(source: SourceText) -> Tree:
    return parse(source.text, source.path)


def _stale_patches(
    inputs: CheckInputs, options: Options, patch_set: PatchSet, base: extractor.Base | None
) -> list[Finding]:
    """Patch files that differ from what extract would write now, with their recorded base."""
    directory = inputs.patches
    if not (directory / INDEX_NAME).is_file():
        return []
    recorded = _recorded_base(directory)
    if recorded != (base.label if base is not None else ""):
        # The patches were made against another base (or none): compare like with like.
        new_base = load_base(recorded, options) if recorded else None
        ext_options = extractor.ExtractOptions(
            upstream_class=options.config.upstream_class, lenient=True
        )
        patch_set, _ = extract_all(inputs.sources, new_base, ext_options)
    files = {
        rel: encode(text)
        for rel, text in render_patch_set(carry_edits(patch_set, directory), TOOL).items()
    }
    actual = {rel: read_bytes_or_none(directory / rel) for rel in files}
    stale = existing(directory, "*/*.patch")
    findings = drift.stale_findings(files, actual, shown(directory), "omni-port extract")
    for rel in sorted(set(stale) - set(files)):
        message = f"{rel} is no longer extracted from the sources; run `omni-port extract`"
        findings.append(
            Finding("stale-generated", Code.OP406, f"{shown(directory)}/{rel}", 1, message)
        )
    return findings


def _recorded_base(directory: Path) -> str:
    """The base the existing patches were extracted against ("" when none or unreadable)."""
    try:
        return next((m.base for m in read_patch_set(directory).modules if m.base), "")
    except BadInput:
        return ""


def _stale_generated(inputs: CheckInputs, options: Options) -> list[Finding]:
    lock_path = inputs.generated / lockfile.LOCK_NAME
    if not lock_path.is_file() or not (inputs.patches / INDEX_NAME).is_file():
        return []
    lock = lockfile.parse(lock_path.read_text(encoding="utf-8"), str(lock_path))
    patch_set, patch_files = read_patches(inputs.patches)
    loaded = load_upstream(inputs.upstream or lock.upstream, options, options.config.upstream_class)
    transplants = [Path(label) for label, _ in lock.transplants]
    result, _ = sync_with_transplants(patch_set, patch_files, loaded, lock.command, transplants)
    actual = {rel: read_bytes_or_none(inputs.generated / rel) for rel in result.files}
    command = lock.command or "omni-port sync"
    findings = drift.stale_findings(result.files, actual, shown(inputs.generated), command)
    # Verify what is on disk, placed as the lock says: that is what a deployment imports.
    on_disk = {
        rel: data for rel, data in actual.items() if data is not None and rel.endswith(".py")
    }
    placements = [lockfile.placement(row) for row in lock.placements]
    source_text = inputs.sources[0].label if inputs.sources else options.config.source
    context = verification_context(options, patch_set, loaded, lock.upstream, source_text)
    located = {rel: f"{shown(inputs.generated)}/{rel}" for rel in on_disk}
    for finding in verify_outputs(on_disk, placements, patch_set, context):
        findings.append(replace(finding, path=located.get(finding.path, finding.path)))
    return findings


def _parity(
    inputs: CheckInputs, options: Options, runners: Sequence[drift.Runner]
) -> list[Finding]:
    """Hunk-level parity of the GPU runners (against their vLLM bases) with the NPU runners."""
    gpu_sources = {Path(s.member).name: s.source for s in inputs.gpu}
    npu = {runner.name: runner.tree for runner in runners}
    allowed: tuple[parity.AllowEntry, ...] = ()
    if inputs.allow_path is not None:
        source = read_source(inputs.allow_path)
        allowed = parity.parse_allow_list(source.text, source.path)
    bases, notes = load_vllm_bases(inputs.vllm, options)
    target = next(iter(bases))
    return [*notes, *parity.check_parity(gpu_sources, npu, bases, target, allowed)]
