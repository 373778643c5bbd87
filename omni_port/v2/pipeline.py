"""Generate the composed NPU V2 runners: override report, omni's delta, composition, sync.

Pure: parsed inputs in, output files (modules and lock) out. The composition patch set
goes through the ordinary ``sync`` pipeline, so the NPU copies with omni's hunks are
placed by the same engine and conflict rules as the V1 runners; the generated modules are
then checked (``checks``) and every composition and rewrite becomes a lock row with the
rule that made it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from omni_port.gpu import vllm_delta
from omni_port.gpu.parity import AllowEntry
from omni_port.model import Code, Finding, Layout, Placement, Rule, Severity
from omni_port.patches import lockfile
from omni_port.patches.patchfile import render_patch_set
from omni_port.pyast.parser import parse
from omni_port.pyast.syntax import Tree
from omni_port.sources.textio import SourceText, sha256
from omni_port.sources.upstream import Upstream
from omni_port.sync import pipeline
from omni_port.v2 import checks, compose, overrides, rows
from omni_port.v2.ascend import AscendPatches
from omni_port.v2.decide import Composed, Npu
from omni_port.v2.pairing import Pairing

#: The package the generated V2 modules are served as (they import each other under it).
PACKAGE = "vllm_omni.worker_v2"
#: Placement kinds of the composition's own lock rows (``rows``).
COMPOSED = rows.COMPOSED
REWRITTEN = rows.REWRITTEN


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
    #: Reviewed methods omni's override is meant to shadow, and (label, sha256) of their file.
    allowed: tuple[AllowEntry, ...] = ()
    allow_input: tuple[str, str] | None = None
    #: What vllm-ascend's patch_v2 modules install, and its torch.cuda redirect.
    patches: AscendPatches = field(default_factory=AscendPatches)
    #: vLLM-Omni's package sources by member path (None: not at hand, nothing is carried).
    omni_texts: Mapping[str, str] | None = None
    #: Which vLLM each side targets (None: not compared).
    pairing: Pairing | None = None


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


def npu_of(inputs: Inputs) -> Npu:
    """The NPU runner module as the composition reads it."""
    npu = inputs.npu
    return Npu(npu.text, npu.class_name or overrides.NPU_CLASS, npu.label, npu.tree.path)


def context(inputs: Inputs) -> compose.Context:
    return compose.Context(
        npu_of(inputs), inputs.patches, inputs.omni_texts, inputs.allowed, overrides.BASE_CLASS
    )


def against(inputs: Inputs) -> checks.Against:
    """What the generated modules are checked against."""
    npu = npu_of(inputs)
    omni = {name: source.text for name, source in inputs.omni.items()}
    base = inputs.base
    return checks.Against(
        npu.text, npu.path, npu.class_name, base.text, base.tree.path, omni, inputs.patches
    )


def plan(inputs: Inputs) -> compose.Composition:
    """The composition alone (what ``v2-report`` says v2-sync would do)."""
    found = delta(inputs)
    sides = _sides(found.trees, inputs.npu, inputs.base, inputs.candidates)
    return compose.compose(found, overrides.override_report(sides), context(inputs))


def generate(inputs: Inputs, tool: str, command: str) -> Result:
    """The composed modules, their lock, and what happened to every method and rewrite."""
    found = delta(inputs)
    sides = _sides(found.trees, inputs.npu, inputs.base, inputs.candidates)
    override_report = overrides.override_report(sides)
    composition = compose.compose(found, override_report, context(inputs))
    patch_files = render_patch_set(composition.patches, tool)
    options = pipeline.Options(tool, command, edit=_edit(inputs))
    synced = pipeline.sync(composition.patches, patch_files, inputs.npu, options)
    modules = {
        name: data.decode("utf-8") for name, data in synced.files.items() if name.endswith(".py")
    }
    composed = [rows.composed_row(c, modules) for c in composition.composed]
    placements = (*synced.placements, *composed, *rows.rewrite_rows(modules))
    findings = (
        *(inputs.pairing.findings() if inputs.pairing is not None else ()),
        *_extraction_notes(found, composition),
        *synced.findings,
        *(
            f
            for c, row in zip(composition.composed, composed, strict=True)
            for f in _conflict_finding(c, row)
        ),
        *unused_allow_notes(inputs.allowed, [c.allow for c in composition.composed if c.allow]),
        *checks.check(modules, against(inputs)),
    )
    files = dict(synced.files)
    files[lockfile.LOCK_NAME] = _lock(inputs, tool, command, files, placements, patch_files)
    counts = _counts(synced.counts, composition, placements)
    return Result(override_report, composition, files, placements, tuple(findings), counts)


def _edit(inputs: Inputs) -> str:
    """What the header tells a reader to change instead, and that the output was forced."""
    edit = "change its sources or the allow-list and re-run the command below"
    forced = inputs.pairing.header if inputs.pairing is not None else ""
    return f"{edit}.\n# {forced}" if forced else edit


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
    """One note per allow-list entry that matched no method both sides override (stale?)."""
    return [_unused_allow(a) for a in allowed if a not in used]


def _unused_allow(entry: AllowEntry) -> Finding:
    message = (
        f"allow-list entry {entry.module}:{entry.owner}.{entry.member} matches no method "
        "both runner families override"
    )
    return Finding(Code.OP005, entry.path, entry.line, message, severity=Severity.NOTE)


def _conflict_finding(composed: Composed, row: Placement) -> Iterator[Finding]:
    if composed.rule is not None:
        return
    message = f"{row.block_id}: not composed: {composed.reason}"
    yield Finding(Code.OP324, composed.module, max(row.start, 1), message)


def sources(inputs: Inputs) -> list[lockfile.Source]:
    """The inputs besides upstream and composition, for the lock."""
    omni = sha256("\0".join(f"{n}\0{s.sha256}" for n, s in sorted(inputs.omni.items())).encode())
    found = [lockfile.Source("source", inputs.omni_label, omni)]
    found.append(lockfile.Source("vllm-base", inputs.base.label, inputs.base.sha256))
    found.extend(lockfile.Source("vllm", b.label, b.sha256) for b in inputs.candidates.values())
    if inputs.allow_input is not None:
        found.append(lockfile.Source("allow", *inputs.allow_input))
    if inputs.pairing is not None and inputs.pairing.mismatch:
        found.append(lockfile.Source("forced", inputs.pairing.statement, ""))
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
    rules = [c.rule for c in composition.composed]
    return {
        **synced,
        "spliced_methods": len(composition.spliced),
        "wrapped": rules.count(Rule.NPU_WRAPPER),
        "omni_super": rules.count(Rule.OMNI_SUPER),
        "allowed": rules.count(Rule.ALLOWED),
        "not_composed": rules.count(None),
        "carried_functions": len(composition.carried),
        "rewrites": sum(1 for p in placements if p.kind == REWRITTEN),
    }
