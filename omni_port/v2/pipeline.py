"""Generate the composed NPU V2 runners: override report, omni's delta, composition, sync.

Pure: parsed inputs in, output files (modules and lock) out. The composition patch set
goes through the ordinary ``sync`` pipeline, so the NPU copies with omni's hunks are
placed by the same engine and conflict rules as the V1 runners.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from omni_port.gpu import vllm_delta
from omni_port.gpu.parity import AllowEntry
from omni_port.model import Code, Finding, Layout, Placement, RegionKind, Severity, Status
from omni_port.patches import lockfile
from omni_port.patches.patchfile import render_patch_set
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import Tree
from omni_port.sources.textio import SourceText, sha256
from omni_port.sources.upstream import Upstream
from omni_port.sync import pipeline
from omni_port.v2 import compose, overrides

#: The package the generated V2 modules are served as (they import each other under it).
PACKAGE = "vllm_omni.worker_v2"
#: Placement kind of a method both sides override that only omni's replacement runs.
SHADOWED = RegionKind.OVERRIDE


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything one V2 composition is computed from, parsed."""

    #: vLLM-Omni's V2 runner modules by file name.
    omni: Mapping[str, SourceText]
    #: Label of where they came from (``vllm-omni==0.30.0`` or a path).
    omni_label: str
    #: vllm-ascend's V2 runner module (``class_name`` is its runner class).
    npu: Upstream
    #: The vLLM release the NPU runner extends: the override report's base.
    base: Upstream
    #: Candidate vLLM releases of omni's per-method delta bases; the first is the target.
    candidates: Mapping[str, Upstream]
    #: Reviewed shadowed overrides and the (label, sha256) of their file.
    allowed: tuple[AllowEntry, ...] = ()
    allow_input: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Result:
    report: overrides.OverrideReport
    composition: compose.Composition
    #: Output files by relative path (the modules and the lock).
    files: dict[str, bytes]
    placements: tuple[Placement, ...]
    findings: tuple[Finding, ...]
    counts: dict[str, int]


def parse_sides(
    omni: Mapping[str, SourceText],
    npu: Upstream,
    base: Upstream,
    candidates: Mapping[str, Upstream] | None = None,
) -> overrides.Sides:
    """The parties of the override report, the omni modules parsed."""
    trees = {name: parse(source.text, source.path) for name, source in omni.items()}
    return _sides(trees, npu, base, candidates)


def _sides(
    trees: Mapping[str, Tree],
    npu: Upstream,
    base: Upstream,
    candidates: Mapping[str, Upstream] | None = None,
) -> overrides.Sides:
    npu_class = npu.class_name or overrides.NPU_CLASS
    others = {label: b.tree for label, b in (candidates or {}).items()}
    return overrides.Sides(
        trees, npu.tree, base.tree, base.label, npu_class=npu_class, candidates=others
    )


def delta(inputs: Inputs) -> vllm_delta.Delta:
    """Omni's delta against vLLM, each copied method against its best candidate."""
    bases = dict(inputs.candidates)
    bases.setdefault(inputs.base.label, inputs.base)
    return vllm_delta.gpu_delta(inputs.omni, bases, next(iter(bases)))


def report(inputs: Inputs) -> overrides.OverrideReport:
    """The override report alone."""
    sides = parse_sides(inputs.omni, inputs.npu, inputs.base, inputs.candidates)
    return overrides.override_report(sides)


def generate(inputs: Inputs, tool: str, command: str) -> Result:
    """The composed modules, their lock, and what happened to every method and hunk."""
    found = delta(inputs)
    sides = _sides(found.trees, inputs.npu, inputs.base, inputs.candidates)
    override_report = overrides.override_report(sides)
    composition = compose.compose(found, override_report, overrides.BASE_CLASS, inputs.allowed)
    patch_files = render_patch_set(composition.patches, tool)
    edit = "change its sources or the allow-list and re-run the command below"
    options = pipeline.Options(tool, command, edit=edit)
    synced = pipeline.sync(composition.patches, patch_files, inputs.npu, options)
    modules = {
        name: data.decode("utf-8") for name, data in synced.files.items() if name.endswith(".py")
    }
    rows = [_shadow_row(s, modules) for s in composition.shadowed]
    placements = (*synced.placements, *rows)
    findings = (
        *_extraction_notes(found, composition),
        *synced.findings,
        *(_shadow_finding(s, inputs.npu.label) for s in composition.shadowed if s.allow is None),
        *unused_allow_notes(inputs.allowed, [s.allow for s in composition.shadowed if s.allow]),
    )
    files = dict(synced.files)
    files[lockfile.LOCK_NAME] = _lock(inputs, tool, command, files, placements, patch_files)
    counts = _counts(synced.counts, composition, placements)
    return Result(override_report, composition, files, placements, tuple(findings), counts)


def _extraction_notes(found: vllm_delta.Delta, composition: compose.Composition) -> list[Finding]:
    """Extraction findings that still hold: comment notes only for the spliced methods
    (every other method is carried verbatim, comments and all)."""
    spliced = {(owner, name) for _, owner, name in composition.spliced}
    kept = [m.copy.origin for m in found.methods if (m.copy.owner, m.copy.name) in spliced]
    return [
        f
        for f in found.findings
        if f.code is not Code.OP902
        or any(o.path == f.path and o.start <= f.line <= o.end for o in kept)
    ]


def unused_allow_notes(allowed: Sequence[AllowEntry], used: Sequence[AllowEntry]) -> list[Finding]:
    """One note per allow-list entry that matched no shadowed method (it may be stale)."""
    return [_unused_allow(a) for a in allowed if a not in used]


def _unused_allow(entry: AllowEntry) -> Finding:
    message = (
        f"allow-list entry {entry.module}:{entry.owner}.{entry.member} matches no shadowed "
        "V2 method"
    )
    return Finding(Code.OP005, entry.path, entry.line, message, severity=Severity.NOTE)


def _shadow_row(shadowed: compose.Shadowed, modules: Mapping[str, str]) -> Placement:
    row = shadowed.row
    start, end = _lines_of(modules.get(shadowed.module, ""), shadowed.owner, row.name)
    stem = shadowed.module.removesuffix(".py")
    if shadowed.allow is not None:
        status, confidence, reason = Status.CARRIED, 1.0, f"allowed: {shadowed.allow.reason}"
    else:
        status, confidence, reason = Status.CONFLICT, 0.0, _shadow_reason(shadowed)
    return Placement(
        f"{stem}.{shadowed.owner}.{row.name}",
        shadowed.module,
        shadowed.owner,
        row.name,
        SHADOWED,
        False,
        status,
        confidence,
        start,
        end,
        (),
        reason,
    )


def _shadow_reason(shadowed: compose.Shadowed) -> str:
    npu = shadowed.row.npu
    where = f" ({npu.path}:{npu.line})" if npu is not None else ""
    return (
        f"omni's {shadowed.row.name} replaces the method without super(), so the NPU "
        f"override{where} never runs; port its NPU steps by hand, or allow-list the method "
        "when dropping them is intended"
    )


def _shadow_finding(shadowed: compose.Shadowed, upstream: str) -> Finding:
    row = shadowed.row
    line = row.omni.line if row.omni is not None else 0
    path = row.omni.path if row.omni is not None else upstream
    message = f"{shadowed.module}: {shadowed.owner}.{row.name}: {_shadow_reason(shadowed)}"
    return Finding(Code.OP301, path, line, message)


def _lines_of(text: str, owner: str, name: str) -> tuple[int, int]:
    """Output lines of ``owner.name`` in a generated module (0, 0 when it is not there)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return 0, 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    member.name == name
                ):
                    first = min([member.lineno, *(d.lineno for d in member.decorator_list)])
                    return first, member.end_lineno or first
    return 0, 0


def sources(inputs: Inputs) -> list[lockfile.Source]:
    """The inputs besides upstream and composition, for the lock."""
    omni = sha256("\0".join(f"{n}\0{s.sha256}" for n, s in sorted(inputs.omni.items())).encode())
    found = [lockfile.Source("source", inputs.omni_label, omni)]
    found.append(lockfile.Source("vllm-base", inputs.base.label, inputs.base.sha256))
    found.extend(lockfile.Source("vllm", b.label, b.sha256) for b in inputs.candidates.values())
    if inputs.allow_input is not None:
        found.append(lockfile.Source("allow", *inputs.allow_input))
    return found


def _lock(
    inputs: Inputs,
    tool: str,
    command: str,
    files: Mapping[str, bytes],
    placements: Sequence[Placement],
    patch_files: Mapping[str, str],
) -> bytes:
    outputs = {name: sha256(data) for name, data in files.items() if name != lockfile.LOCK_NAME}
    lock = lockfile.make(
        tool,
        inputs.npu.label,
        inputs.npu.sha256,
        lockfile.patches_digest(patch_files),
        outputs,
        command,
        placements,
        layout=Layout.V2,
        sources=sources(inputs),
    )
    return lockfile.render(lock).encode("utf-8")


def _counts(
    synced: Mapping[str, int], composition: compose.Composition, placements: Sequence[Placement]
) -> dict[str, int]:
    shadowed = [p for p in placements if p.kind == SHADOWED]
    return {
        **synced,
        "spliced_methods": len(composition.spliced),
        "shadowed": sum(1 for p in shadowed if p.status is Status.CONFLICT),
        "shadowed_allowed": sum(1 for p in shadowed if p.status is Status.CARRIED),
    }
