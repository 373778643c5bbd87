"""The checks behind `check`: catalog, markers, implicit edits, stale outputs, parity.

Everything here parses; the command answers from its cache first when no input changed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from omni_port import TOOL
from omni_port.api import v2
from omni_port.api.inputs import (
    Settings,
    carry_edits,
    catalog_locations,
    extract_all,
    extract_options,
    load_upstream,
    load_vllm_bases,
    lost_decisions,
    read_bytes_or_none,
    read_patches,
    recorded_sources,
    reviewed_markers,
    verification_context,
    with_history,
)
from omni_port.api.run import Given, read_transplants, sync_patches, verify_files
from omni_port.catalog import drift, markdown
from omni_port.errors import BadInput
from omni_port.extract.markers import scan
from omni_port.gpu import parity
from omni_port.model import Code, Finding, PatchSet, Upstream
from omni_port.patches import lockfile
from omni_port.patches.patchfile import INDEX_NAME, render_patch_set
from omni_port.patches.store import edit_finding, existing, hand_edits, read_patch_set
from omni_port.pyast.parser import parse
from omni_port.report import shown
from omni_port.sources.config import Config, key_line
from omni_port.sources.textio import encode, read_source
from omni_port.sources.workspace import CheckInputs


def check(inputs: CheckInputs, settings: Settings) -> list[Finding]:
    """Every drift check the inputs allow, in a stable order."""
    runners = [
        drift.Runner(Path(s.member).name, parse(s.source.text, s.source.path))
        for s in inputs.sources
    ]
    # The gate lists every malformed marker: a reviewed one as a note, any other and an
    # entry left on a file it read (a fixed or moved marker) as a problem.
    scanned = [f for runner in runners for f in scan(runner.tree).findings]
    markers = reviewed_markers(scanned, inputs.sources, settings.config)
    findings: list[Finding] = [*markers.findings, *markers.stale_findings(strict=True)]
    base_tree = load_upstream(inputs.base, settings) if inputs.base else None
    ext_options = extract_options(settings.config, lenient=True)
    patch_set, _ = extract_all(inputs.sources, base_tree, ext_options)
    if inputs.catalog_path is not None:
        source = read_source(inputs.catalog_path)
        parsed = markdown.parse(source.text, source.path)
        findings.extend(drift.catalog_findings(parsed, source.path, runners))
    if base_tree is not None:
        # An edit a maintainer adopted is a marked block now, not an implicit edit.
        carried = carry_edits(patch_set, inputs.patches, discard=True)
        findings.extend(drift.divergence_findings(carried.modules))
    findings.extend(_stale_patches(inputs, settings, patch_set, base_tree))
    findings.extend(_stale_generated(inputs, settings))
    if inputs.gpu:
        findings.extend(_parity(inputs, settings, runners))
    if inputs.v2:
        findings.extend(v2.check_tree(settings))
    return findings


def _stale_patches(
    inputs: CheckInputs, settings: Settings, patch_set: PatchSet, base: Upstream | None
) -> list[Finding]:
    """Patch files that differ from what extract would write now, with their recorded base."""
    directory = inputs.patches
    if not (directory / INDEX_NAME).is_file():
        return [_nothing(settings.config, directory, "patches", INDEX_NAME)]
    config = settings.config
    recorded = _recorded_base(directory)
    if recorded != (config.recorded_spec(base.label) if base is not None else ""):
        # The patches were made against another base (or none): compare like with like.
        base = load_upstream(config.given_spec(recorded), settings) if recorded else None
        ext_options = extract_options(config, lenient=True)
        patch_set, _ = extract_all(inputs.sources, base, ext_options)
    patch_set = recorded_sources(patch_set, inputs.sources, base, config)
    files = {
        rel: encode(text)
        for rel, text in render_patch_set(
            carry_edits(patch_set, directory, discard=True), TOOL
        ).items()
    }
    actual = {rel: read_bytes_or_none(directory / rel) for rel in files}
    stale = existing(directory, "*/*.patch")
    # A decision the sources no longer have an edit for: extract would refuse to drop it.
    findings = lost_decisions(patch_set, directory)
    if findings:
        return findings
    findings = drift.stale_findings(files, actual, shown(directory), "omni-port extract")
    for rel in sorted(set(stale) - set(files)):
        message = f"{rel} is no longer extracted from the sources; run `omni-port extract`"
        findings.append(Finding(Code.OP406, f"{shown(directory)}/{rel}", 1, message))
    return findings


def _recorded_base(directory: Path) -> str:
    """The base the existing patches were extracted against ("" when none or unreadable)."""
    try:
        return next((m.base for m in read_patch_set(directory).modules if m.base), "")
    except BadInput:
        return ""


#: What makes the inputs of the gate, in this repository and in a host's (the Makefile's
#: `sync` target runs extract, sync and verify).
MAKE_SYNC = "run `make sync` (omni-port extract, sync and verify)"


def _nothing(config: Config, folder: Path, key: str, missing: str) -> Finding:
    """The gate cannot check: ``folder`` (the configuration's ``key``: ``patches`` or
    ``generated``) holds no ``missing`` file. Said at the configuration's line that names the
    folder, a file one can open (the missing file is not one); a folder given as a flag is
    named as it was given."""
    what = "extracted" if key == "patches" else "generated"
    shown_folder = shown(folder).rstrip("/") + "/"
    message = (
        f"nothing {what} in {shown_folder} (no {missing}), so the runners cannot be "
        f"checked; {MAKE_SYNC}"
    )
    configured = config.path(str(getattr(config, key)))
    if config.file and os.path.abspath(configured) == os.path.abspath(folder):
        return Finding(Code.OP311, shown(Path(config.file)), key_line(config, key), message)
    return Finding(Code.OP311, shown_folder, 0, message)


def _locked_conflicts(lock: lockfile.Lock, lock_path: Path) -> list[Finding]:
    """OP310 for every conflict a lock lists, at the line of its id in the lock: without
    patches nothing can be regenerated, but what the lock says stays a failure."""
    lines = read_source(lock_path).text.split("\n")
    findings = []
    for row in lock.conflicts:
        ident = str(row.get("id", ""))
        line = next((n for n, text in enumerate(lines, 1) if f'"id": "{ident}"' in text), 1)
        message = f"the lock lists block {ident} as a conflict: not deployable until resolved"
        findings.append(Finding(Code.OP310, shown(lock_path), line, message))
    return findings


def _stale_generated(inputs: CheckInputs, settings: Settings) -> list[Finding]:
    lock_path = inputs.generated / lockfile.LOCK_NAME
    if not lock_path.is_file():
        return [_nothing(settings.config, inputs.generated, "generated", lockfile.LOCK_NAME)]
    lock = lockfile.read(inputs.generated)
    if not (inputs.patches / INDEX_NAME).is_file():
        return _locked_conflicts(lock, lock_path)
    patch_set, patch_files = read_patches(inputs.patches)
    config = settings.config
    # What a plain `sync` would take now: the lock's upstream while the configuration still
    # names what it named then (paths in the lock are relative to the repository root).
    configured = config.recorded_spec(config.upstream)
    upstream_text = inputs.upstream or config.given_spec(
        lockfile.default_upstream(lock, configured)
    )
    loaded = load_upstream(upstream_text, settings, config.upstream_class)
    loaded = replace(loaded, label=config.recorded_spec(loaded.label))
    # The history the lock names: the same evidence gives the same outputs.
    history = [config.given_spec(label) for label, _ in lock.history]
    loaded, _ = with_history(loaded, settings, names=history)
    labels = [label for label, _ in lock.transplants]
    extras = read_transplants([config.path(label) for label in labels], labels)
    locations = catalog_locations(patch_set, inputs.catalog_path)
    given = Given(patch_files, extras, locations)
    result = sync_patches(patch_set, loaded, lock.command, given).result
    files = lockfile.configured_files(result.files, configured)
    actual = {rel: read_bytes_or_none(inputs.generated / rel) for rel in files}
    command = lock.command or "omni-port sync"
    # A file edited since sync wrote it is a hand edit, which `continue` takes; one that
    # holds what sync wrote but not what it would write now is stale: sync rewrites it.
    edits = hand_edits(inputs.generated, lock, files)
    edited = {edit.rel for edit in edits}
    findings = [edit_finding(f"{shown(inputs.generated)}/{e.rel}", e, False) for e in edits]
    stale = {rel: data for rel, data in files.items() if rel not in edited}
    findings += drift.stale_findings(stale, actual, shown(inputs.generated), command)
    # What sync found about the history, the GPU runners and the catalog stays visible:
    # upstream changes the runners never had (OP306), blocks omni's GPU runner puts
    # elsewhere across code that reads them (OP308), upstream edits of code omni's code
    # won over, for review (OP309), upstream exits that skip omni's code at the other exits
    # (OP314), placements that break a Location line (OP409).
    # Findings about an output file name it inside the generated directory.
    located = {rel: f"{shown(inputs.generated)}/{rel}" for rel in files}
    noted = (Code.OP306, Code.OP308, Code.OP309, Code.OP314, Code.OP409)
    for finding in result.findings:
        if finding.code in noted:
            findings.append(replace(finding, path=located.get(finding.path, finding.path)))
    # Verify what is on disk, placed as the lock says: that is what a deployment imports.
    on_disk = {
        rel: data for rel, data in actual.items() if data is not None and rel.endswith(".py")
    }
    placements = [lockfile.placement(row) for row in lock.placements]
    source_text = inputs.sources[0].label if inputs.sources else settings.config.source
    context = verification_context(settings, patch_set, loaded, upstream_text, source_text)
    for finding in verify_files(on_disk, placements, patch_set, context):
        findings.append(replace(finding, path=located.get(finding.path, finding.path)))
    return findings


def _parity(
    inputs: CheckInputs, settings: Settings, runners: Sequence[drift.Runner]
) -> list[Finding]:
    """Hunk-level parity of the GPU runners (against their vLLM bases) with the NPU runners."""
    gpu_sources = {Path(s.member).name: s.source for s in inputs.gpu}
    npu = {runner.name: runner.tree for runner in runners}
    allowed: tuple[parity.AllowEntry, ...] = ()
    if inputs.allow_path is not None:
        source = read_source(inputs.allow_path)
        allowed = parity.parse_allow_list(source.text, source.path)
    bases, notes = load_vllm_bases(inputs.vllm, settings)
    target = next(iter(bases))
    return [*notes, *parity.check_parity(gpu_sources, npu, bases, target, allowed)]
