"""Generate the composed NPU V2 runners: override report, omni's delta, composition, sync.

Pure: parsed inputs in, output files (modules and lock) out. The composition patch set
goes through the ordinary ``sync`` pipeline, so the NPU copies with omni's hunks are
placed by the same engine and conflict rules as the V1 runners; the generated modules are
then checked (``checks``) and every composition and rewrite becomes a lock row with the
rule that made it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from omni_port.gpu import vllm_delta
from omni_port.gpu.parity import AllowEntry
from omni_port.model import (
    Code,
    Finding,
    Layout,
    Placement,
    RegionKind,
    Rule,
    Severity,
    SourceText,
    Status,
    Tree,
    Upstream,
)
from omni_port.patches import lockfile
from omni_port.patches.patchfile import render_patch_set
from omni_port.pyast.parser import parse
from omni_port.sources.textio import sha256
from omni_port.sources.upstream import OMNI_V2_RUNNERS, VLLM_V2_RUNNER
from omni_port.sync import pipeline
from omni_port.v2 import checks, compose, lag, overrides, pins, rebase, rows, substitute, tidy
from omni_port.v2.ascend import AscendPatches
from omni_port.v2.decide import Composed, Npu
from omni_port.v2.pairing import Pairing

#: The package the generated V2 modules are served as (they import each other under it).
PACKAGE = "vllm_omni.worker_v2"
#: Its directory in vLLM-Omni's sources: output paths of other modules are relative to it.
PACKAGE_DIR = OMNI_V2_RUNNERS[0].rpartition("/")[0] + "/"
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
    #: vllm-ascend's substitute modules and vLLM's modules of the classes they substitute,
    #: by member path (what a class rebased onto a substitute is composed from).
    classes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Result:
    report: overrides.OverrideReport
    composition: compose.Composition
    #: Output files by relative path (the modules and the lock).
    files: dict[str, bytes]
    placements: tuple[Placement, ...]
    findings: tuple[Finding, ...]
    counts: dict[str, int]
    #: omni's modules generated with classes rebased onto vllm-ascend's substitutes.
    rebased: tuple[rebase.Rebased, ...] = ()

    @property
    def composed(self) -> tuple[Composed, ...]:
        """Every method both sides override: the runners' and the rebased classes'."""
        return (*self.composition.composed, *(c for r in self.rebased for c in r.composed))


def parse_sides(
    omni: Mapping[str, SourceText],
    npu: Upstream,
    base: Upstream,
    candidates: Mapping[str, Upstream] | None = None,
    allowed: Sequence[AllowEntry] = (),
) -> overrides.Sides:
    """The parties of the override report, the omni modules parsed."""
    trees = {name: parse(source.text, source.path) for name, source in omni.items()}
    return _sides(trees, npu, base, candidates, allowed)


def _sides(
    trees: Mapping[str, Tree],
    npu: Upstream,
    base: Upstream,
    candidates: Mapping[str, Upstream] | None = None,
    allowed: Sequence[AllowEntry] = (),
) -> overrides.Sides:
    npu_class = npu.class_name or overrides.NPU_CLASS
    others = {label: b.tree for label, b in (candidates or {}).items()}
    return overrides.Sides(
        trees,
        npu.tree,
        base.tree,
        base.label,
        npu_class=npu_class,
        candidates=others,
        allowed=tuple(allowed),
    )


def delta(inputs: Inputs) -> vllm_delta.Delta:
    """Omni's delta against vLLM, each copied method against its best candidate."""
    bases = dict(inputs.candidates)
    bases.setdefault(inputs.base.label, inputs.base)
    return vllm_delta.gpu_delta(inputs.omni, bases, next(iter(bases)))


def report(inputs: Inputs) -> overrides.OverrideReport:
    """The override report alone."""
    sides = parse_sides(inputs.omni, inputs.npu, inputs.base, inputs.candidates, inputs.allowed)
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
    texts = inputs.omni_texts or {}
    omni.update(
        {substitute.output_path(path, PACKAGE_DIR): texts[path] for path in rebasable(inputs)}
    )
    base = inputs.base
    return checks.Against(
        npu.text,
        npu.path,
        npu.class_name,
        base.text,
        base.tree.path,
        omni,
        inputs.patches,
        inputs.classes,
        inputs.omni_texts,
        inputs.allowed,
        PACKAGE_DIR,
    )


def bypasses(inputs: Inputs) -> list[substitute.Bypass]:
    """omni's classes built on a vLLM class vllm-ascend substitutes: in the runner modules
    and, when omni's package is at hand, in every module of its V2 package."""
    texts = dict(inputs.omni_texts or {})
    texts.update({PACKAGE_DIR + name: source.text for name, source in inputs.omni.items()})
    paths = substitute.package_paths(texts, PACKAGE_DIR)
    return substitute.find(texts, paths, inputs.patches)


def substitute_sources(inputs: Inputs) -> substitute.Sources:
    return substitute.Sources(
        inputs.patches,
        inputs.classes,
        inputs.npu.label,
        inputs.base.label,
        inputs.allowed,
        PACKAGE_DIR,
    )


def rebasable(inputs: Inputs) -> dict[str, list[substitute.Bypass]]:
    """The bypassing classes that can be rebased, by omni's module (member path)."""
    sources = substitute_sources(inputs)
    found: dict[str, list[substitute.Bypass]] = {}
    for bypass in bypasses(inputs):
        allowed = substitute.kept(bypass, inputs.allowed, PACKAGE_DIR)
        if allowed is None and not substitute.obstacle(bypass, sources, inputs.omni):
            found.setdefault(bypass.path, []).append(bypass)
    return found


def rebased_modules(inputs: Inputs, tool: str, command: str) -> list[rebase.Rebased]:
    """omni's modules whose classes are rebased onto vllm-ascend's substitutes."""
    sources = substitute_sources(inputs)
    header = rebase.Header(tool, command, _edit(inputs), inputs.omni_label)
    texts = inputs.omni_texts or {}
    return [
        rebase.rebase(path, texts[path], found, sources, header)
        for path, found in sorted(rebasable(inputs).items())
    ]


def _unrebased_rows(inputs: Inputs) -> list[Placement]:
    """A conflict row per class left on a substituted vLLM class without review."""
    sources = substitute_sources(inputs)
    found = []
    for bypass in bypasses(inputs):
        why = substitute.obstacle(bypass, sources, inputs.omni)
        if not why or substitute.kept(bypass, inputs.allowed, PACKAGE_DIR) is not None:
            continue
        module = substitute.output_path(bypass.path, PACKAGE_DIR) or bypass.path
        found.append(
            Placement(
                f"{module.removesuffix('.py')}.{bypass.owner}.{bypass.original[1]}",
                module,
                bypass.owner,
                "",
                RegionKind.REWRITE,
                False,
                Status.CONFLICT,
                0.0,
                0,
                0,
                (),
                f"not rebased onto {bypass.substitute.substitute[1]}: {why}",
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What ``v2-report`` says: who overrides what, how ``v2-sync`` composes it, and every
    finding reviewed against that (a composed or allow-listed loss is a note)."""

    #: The runners' report, then one per class rebased onto a substitute.
    reports: tuple[overrides.OverrideReport, ...]
    composed: tuple[Composed, ...]
    findings: tuple[Finding, ...]


def review(inputs: Inputs, tool: str) -> Reviewed:
    """The override reports of the runners and of each rebasable class, with collisions
    (OP320, OP323) a note where ``v2-sync`` composes them, and every class built on a
    substituted vLLM class (OP330) a note where it rebases or a reviewed entry keeps it."""
    runners = report(inputs)
    rebased = rebased_modules(inputs, tool, "omni-port v2-report")
    copies = delta(inputs)
    composed = (*plan(inputs, copies).composed, *(c for r in rebased for c in r.composed))
    reports = (runners, *(found for r in rebased for found in r.reports))
    findings = [f for r in reports for f in _reviewed_collisions(r, composed)]
    findings += [_reviewed_substitute(inputs, bypass) for bypass in bypasses(inputs)]
    findings += lag.findings(lag.lags(copies, inputs.base, inputs.candidates))
    return Reviewed(reports, composed, tuple(findings))


def _reviewed_collisions(
    found: overrides.OverrideReport, composed: Sequence[Composed]
) -> Iterator[Finding]:
    decided = {(c.owner, c.name): c for c in composed}
    sites = {
        (row.omni.last[1], row.omni.last[2]): decided.get((row.omni.last[0], row.name))
        for runner in found.runners
        for row in runner.rows
        if row.omni is not None and (row.collision or row.wrapper_collision)
    }
    for finding in found.findings:
        done = sites.get((finding.path, finding.line))
        if finding.code not in (Code.OP320, Code.OP323) or done is None or done.rule is None:
            yield finding
            continue
        message = f"{finding.message}; v2-sync composes it: {done.rule.value} ({done.reason})"
        yield Finding(finding.code, finding.path, finding.line, message, finding.col, Severity.NOTE)


def _reviewed_substitute(inputs: Inputs, bypass: substitute.Bypass) -> Finding:
    allow = substitute.kept(bypass, inputs.allowed, PACKAGE_DIR)
    why = substitute.obstacle(bypass, substitute_sources(inputs), inputs.omni)
    found = substitute.bypass_finding(bypass, why, allow)
    if allow is None and not why:
        rebased = bypass.substitute.substitute[1]
        message = f"{found.message}; v2-sync rebases it onto {rebased}"
        return Finding(found.code, found.path, found.line, message, severity=Severity.NOTE)
    return found


def plan(inputs: Inputs, found: vllm_delta.Delta) -> compose.Composition:
    """The composition alone of omni's ``delta`` (what ``v2-report`` says v2-sync would do)."""
    sides = _sides(found.trees, inputs.npu, inputs.base, inputs.candidates, inputs.allowed)
    return compose.compose(found, overrides.override_report(sides), context(inputs))


def generate(inputs: Inputs, tool: str, command: str) -> Result:
    """The composed modules, their lock, and what happened to every method and rewrite."""
    found = delta(inputs)
    sides = _sides(found.trees, inputs.npu, inputs.base, inputs.candidates, inputs.allowed)
    override_report = overrides.override_report(sides)
    composition = compose.compose(found, override_report, context(inputs))
    patch_files = render_patch_set(composition.patches, tool)
    options = pipeline.Options(tool, command, edit=_edit(inputs))
    synced = pipeline.sync(composition.patches, patch_files, inputs.npu, options)
    tidied = {
        name: tidy.tidy(data.decode("utf-8"))
        for name, data in synced.files.items()
        if name.endswith(".py")
    }
    modules = {name: found.text for name, found in tidied.items()}
    rebased = [
        replace(r, text=tidy.tidy(r.text).text) for r in rebased_modules(inputs, tool, command)
    ]
    modules.update({r.module: r.text for r in rebased})
    every = (*composition.composed, *(c for r in rebased for c in r.composed))
    composed = [rows.composed_row(c, modules) for c in every]
    placements = (
        *(_moved(p, tidied.get(p.module)) for p in synced.placements),
        *composed,
        *rows.rewrite_rows(modules),
        *_unrebased_rows(inputs),
    )
    checked = checks.check(modules, against(inputs))
    findings = (
        *(inputs.pairing.findings() if inputs.pairing is not None else ()),
        *_extraction_notes(found, composition),
        *(_found_at(f, tidied.get(f.path)) for f in synced.findings),
        *(f for c, row in zip(every, composed, strict=True) for f in _conflict_finding(c, row)),
        *unused_allow_notes(
            inputs.allowed, [*(c.allow for c in every if c.allow), *_cited(inputs.allowed, checked)]
        ),
        *checked,
    )
    files = dict(synced.files)
    files.update({name: text.encode("utf-8") for name, text in modules.items()})
    files[lockfile.LOCK_NAME] = _lock(inputs, tool, command, files, placements, patch_files)
    counts = _counts(synced.counts, composition, placements, rebased)
    result = Result(override_report, composition, files, placements, tuple(findings), counts)
    return replace(result, rebased=tuple(rebased))


def _moved(row: Placement, tidied: tidy.Tidied | None) -> Placement:
    """A row of a spliced module with its lines where ``tidy`` moved them."""
    if tidied is None or not row.start:
        return row
    return replace(row, start=tidied.line(row.start), end=tidied.line(row.end))


def _found_at(finding: Finding, tidied: tidy.Tidied | None) -> Finding:
    """A finding of a spliced module at its line after ``tidy``."""
    if tidied is None or not finding.line:
        return finding
    return replace(finding, line=tidied.line(finding.line))


def _cited(allowed: Sequence[AllowEntry], findings: Sequence[Finding]) -> list[AllowEntry]:
    """The entries a finding says it was reviewed by (a bypass, a class kept, a guard)."""
    return [a for a in allowed if any(f"({a.path}:{a.line})" in f.message for f in findings)]


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
    selector = f":{entry.selector}" if entry.selector else ""
    message = (
        f"allow-list entry {entry.module}:{entry.owner}.{entry.member}{selector} matches "
        "nothing the composition decides (a method both sides override, an NPU override "
        "omni's method skips, a step of a copied NPU wrapper, a class on a substituted vLLM "
        "class)"
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
    lock = lockfile.Lock(
        tool=tool,
        upstream=inputs.npu.label,
        upstream_sha256=inputs.npu.sha256,
        patches_sha256=lockfile.patches_digest(patch_files),
        outputs=outputs,
        command=command,
        placements=lockfile.rows(placements),
        layout=Layout.V2,
        sources=(*sources(inputs), *pinned_sources(inputs, files)),
    )
    return lockfile.render(lock).encode("utf-8")


def pinned_sources(inputs: Inputs, files: Mapping[str, bytes]) -> list[lockfile.Source]:
    """A ``pinned`` row per file the tree relies on (``pins``): vllm-ascend's patch modules,
    torch.cuda redirect and substitutes; omni's V2 runner modules, the modules its classes
    are rebased from and the ones the generated modules import; vLLM's runner and the
    modules of the classes it substitutes."""
    texts = inputs.omni_texts or {}
    runners = {
        PACKAGE_DIR + name: texts.get(PACKAGE_DIR + name, s.text) for name, s in inputs.omni.items()
    }
    rebased = {path: texts[path] for path in rebasable(inputs)}
    modules = {n: d.decode("utf-8", "replace") for n, d in files.items() if n.endswith(".py")}
    imported = pins.imported_omni(modules, texts, rebased)
    vllm = {VLLM_V2_RUNNER: inputs.base.text}
    vllm.update({m: t for m, t in inputs.classes.items() if pins.distribution(m) == "vllm"})
    found = [pins.Pin(member, sha) for member, sha in inputs.patches.read]
    found += pins.pins({**runners, **rebased, **imported, **vllm})
    return [lockfile.Source(pins.ROLE, pin.label, pin.sha256) for pin in found]


def _counts(
    synced: Mapping[str, int],
    composition: compose.Composition,
    placements: Sequence[Placement],
    rebased: Sequence[rebase.Rebased],
) -> dict[str, int]:
    rules = [c.rule for c in (*composition.composed, *(c for r in rebased for c in r.composed))]
    return {
        **synced,
        "modules": synced.get("modules", 0) + len(rebased),
        "spliced_methods": len(composition.spliced),
        "wrapped": rules.count(Rule.NPU_WRAPPER),
        "omni_super": rules.count(Rule.OMNI_SUPER),
        "allowed": rules.count(Rule.ALLOWED),
        "not_composed": rules.count(None),
        "carried_functions": len(composition.carried),
        "rebased": sum(len(r.bypasses) for r in rebased),
        "not_rebased": sum(
            1 for p in placements if p.kind == REWRITTEN and p.status is Status.CONFLICT
        ),
        "rewrites": sum(
            1 for p in placements if p.kind == REWRITTEN and p.status is not Status.CONFLICT
        ),
    }
