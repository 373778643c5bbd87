"""Sync a whole patch set onto one upstream: every module, checked, plus the lock file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from omni_port.errors import BadInput
from omni_port.model import (
    Chunk,
    Code,
    Copy,
    Finding,
    ModulePatches,
    PatchSet,
    Placement,
    Status,
    Upstream,
)
from omni_port.patches import lockfile
from omni_port.pyast import fields as records
from omni_port.pyast.fields import Fields
from omni_port.pyast.parser import compile_findings
from omni_port.sources.platform import layout_onto
from omni_port.sources.textio import encode, sha256
from omni_port.sync import decisions, offers, splice
from omni_port.sync.facts import Declared, declared
from omni_port.sync.rule import PlacementRule
from omni_port.sync.rules import RULES

GENERATED = "@gen" + "erated"


@dataclass(frozen=True, slots=True)
class SyncResult:
    #: Output files by relative path (the modules and the lock).
    files: dict[str, bytes]
    placements: tuple[Placement, ...]
    findings: tuple[Finding, ...]
    #: Counters for the summary line.
    counts: dict[str, int]


def header(
    tool: str,
    upstream: Upstream,
    patches_sha256: str,
    command: str,
    transplants: Sequence[tuple[str, str]] = (),
    edit: str = "edit the patches and re-run sync",
) -> str:
    """The comment block every generated module opens with.

    ``transplants`` are the (label, sha256) of extra block sources merged into the patches;
    ``edit`` says where a change belongs instead.
    """
    extra = ", ".join(f"{label} (sha256 {digest[:16]})" for label, digest in transplants)
    releases = [release.label for release in upstream.history]
    history = (
        f"# Upstream history: {len(releases)} releases, {releases[0]} to {releases[-1]}.\n"
        if releases
        else ""
    )
    return (
        f"# This file is {GENERATED} by {tool}. Do not edit it: {edit}.\n"
        f"# Inputs: upstream {upstream.label} (sha256 {upstream.sha256[:16]}), "
        f"patches sha256 {patches_sha256[:16]}.\n"
        + (f"# Transplanted blocks: {extra}.\n" if extra else "")
        + history
        + f"# Regenerate: {command}\n"
    )


@dataclass(frozen=True, slots=True)
class Options:
    """How a sync names itself and what constrains it, beside its inputs."""

    #: The generator, named in headers and the lock.
    tool: str
    #: The command that regenerates the outputs, for headers and the lock.
    command: str
    #: (label, sha256) of transplant inputs already merged into the patches.
    transplants: tuple[tuple[str, str], ...] = ()
    #: The catalog's ``Location:`` lines by block id, which constrain places.
    locations: Mapping[str, str] = field(default_factory=dict)
    #: What the header tells a reader to change instead of the output.
    edit: str = "edit the patches and re-run sync"
    #: The placement rules the engine asks (a golden case asks one rule alone).
    rules: tuple[PlacementRule, ...] = RULES
    #: What verify would newly report of a conflict's candidate taken: given, a conflict
    #: offers only the candidates that work (``offers``); None leaves the engine's list as
    #: it ranked it (a golden case of one rule).
    judge: offers.Judge | None = None
    #: The modules to generate, by file name (empty: every one): `resolve` asks for the
    #: block's module alone, decided on the whole patch set as the sync decides it.
    only: frozenset[str] = frozenset()


def sync(
    patches: PatchSet, patch_files: Mapping[str, str], upstream: Upstream, options: Options
) -> SyncResult:
    """Generate every module of ``patches`` against ``upstream``; never writes anything.

    ``patch_files`` are the files of the main patch set (their digest is the one recorded).
    """
    _require_upstream_classes(patches, upstream)
    tool, command, transplants = options.tool, options.command, options.transplants
    digest = lockfile.patches_digest(patch_files)
    top = header(tool, upstream, digest, command, transplants, options.edit)
    files: dict[str, bytes] = {}
    placements: list[Placement] = []
    findings: list[Finding] = []
    owned = declared(patches)
    modules = [m for m in patches.modules if not options.only or m.name in options.only]
    built_all = _with_fields(patches, modules, upstream, options, owned, top)
    for module, built in zip(modules, built_all, strict=True):
        findings.extend(built.findings)
        findings.extend(compile_findings(module.name, built.text))
        files[module.name] = encode(built.text, module.newline, module.bom)
        placements.extend(built.placements)
    # Written only when there are some: make sync's committed lock names no such output.
    notes = lockfile.recorded(findings)
    if notes:
        files[lockfile.NOTES_NAME] = lockfile.render_notes(notes).encode("utf-8")
    outputs = {name: sha256(data) for name, data in files.items()}
    lock = lockfile.Lock(
        tool=tool,
        upstream=upstream.label,
        upstream_sha256=upstream.sha256,
        patches_sha256=digest,
        outputs=outputs,
        command=command,
        placements=lockfile.rows(placements),
        transplants=tuple(transplants),
        history=tuple((r.label, sha256(r.text.encode("utf-8"))) for r in upstream.history),
        base=tuple(dict.fromkeys((m.base, m.base_sha256) for m in patches.modules if m.base)),
        # The runtime switch serves a tree as the package its lock's layout names.
        layout=layout_onto(upstream.module),
    )
    files[lockfile.LOCK_NAME] = lockfile.render(lock).encode("utf-8")
    return SyncResult(files, tuple(placements), tuple(findings), _counts(placements, patches))


def _with_fields(
    patches: PatchSet,
    modules: Sequence[ModulePatches],
    upstream: Upstream,
    options: Options,
    owned: Declared,
    top: str,
) -> list[splice.Built]:
    """``modules`` decided and written out, each knowing the records the output defines
    where it constructs or unpacks one out of their fields' order (``pyast.fields``): the
    order of what both sides appended to those is the fields' (``pyast.merge3``)."""
    built = [_built(m, upstream, options, owned, top) for m in modules]
    # A module left out (`resolve` asks for one) still defines its records, as the whole
    # sync does; its conflicts' offers do not matter here.
    others = [m for m in patches.modules if m not in modules and _copies_module_level(m)]
    alone = replace(options, judge=None)
    texts = [b.text for b in built] + [_built(m, upstream, alone, owned, top).text for m in others]
    fields = records.defined(texts)
    for at, module in enumerate(modules):
        if fields and records.misordered(built[at].text, fields):
            built[at] = _built(module, upstream, options, owned, top, fields)
    return built


def _built(
    module: ModulePatches,
    upstream: Upstream,
    options: Options,
    owned: Declared,
    top: str,
    fields: Fields = (),
) -> splice.Built:
    """``module`` decided and written out (``fields``: the records the output defines)."""
    decided = decisions.decide(module, upstream, options.locations, options.rules, owned, fields)
    if options.judge is not None:
        decided = offers.offered(decided, top, options.judge)
    return splice.assemble(decided, top)


def _copies_module_level(module: ModulePatches) -> bool:
    """Whether ``module`` copies a module-level definition (a record it may define)."""
    return any(isinstance(p, Copy) and not p.upstream_owner for p in module.pieces)


def _counts(placements: list[Placement], patches: PatchSet) -> dict[str, int]:
    owned = sum(1 for m in patches.modules for p in m.pieces if isinstance(p, Chunk) and p.name)
    return {
        "placed": sum(1 for p in placements if p.status is Status.PLACED and p.marked),
        "conflict": sum(1 for p in placements if p.status is Status.CONFLICT and p.marked),
        "implicit_placed": sum(1 for p in placements if p.status is Status.PLACED and not p.marked),
        "implicit_conflict": sum(
            1 for p in placements if p.status is Status.CONFLICT and not p.marked
        ),
        "followed": sum(1 for p in placements if p.status is Status.FOLLOWED),
        "carried": sum(1 for p in placements if p.status is Status.CARRIED),
        "dropped": sum(1 for p in placements if p.status is Status.DROPPED),
        "owned": owned,
        "modules": len(patches.modules),
    }


def _require_upstream_classes(patches: PatchSet, upstream: Upstream) -> None:
    """BadInput (OP004) when the upstream lacks a class the copies come from.

    A missing method is an upgrade's business (a conflict); a missing class means the
    upstream file is not the runner module at all, and nothing sensible can be written.
    """
    wanted = sorted(
        {
            upstream.class_name or piece.upstream_owner
            for module in patches.modules
            for piece in module.pieces
            if isinstance(piece, Copy) and piece.upstream_owner
        }
    )
    present = {s.name for s in upstream.tree.body.stmts if s.kind == "ClassDef"}
    missing = [name for name in wanted if name not in present]
    if missing:
        raise BadInput.at(
            Code.OP004,
            upstream.tree.path,
            0,
            f"the upstream defines no class {', '.join(missing)}: it is not the runner module "
            "the patches were extracted against (or pass --upstream-class)",
        )
