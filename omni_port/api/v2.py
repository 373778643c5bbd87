"""Model Runner V2 through the API: report, generate, verify and check composed V2 trees.

The inputs come from a ``v2.inputs.Sources`` (flags, else ``[tool.omni-port]``) or from
the lock of a V2 tree, which names every input; nothing here writes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from omni_port import TOOL
from omni_port.api.inputs import Settings, read_bytes_or_none, verification_context
from omni_port.api.run import verify_files
from omni_port.catalog import drift
from omni_port.model import Finding, Layout, Status
from omni_port.patches import lockfile
from omni_port.report import shown
from omni_port.sources.config import Config
from omni_port.v2.overrides import MethodRow, OverrideReport, Site, Who
from omni_port.verify import checks

if TYPE_CHECKING:
    from omni_port.v2 import pipeline
    from omni_port.v2.decide import Composed
    from omni_port.v2.inputs import Settings as Sources
    from omni_port.v2.pipeline import Inputs, Result, Reviewed

# The composition (and libcst with it) loads only for V2 work: a warm V1 sync, which
# imports this module, pays no parser start-up.

__all__ = [
    "Composed",
    "Inputs",
    "MethodRow",
    "OverrideReport",
    "Result",
    "Reviewed",
    "Site",
    "Sources",
    "Who",
    "check_tree",
    "command",
    "configured",
    "generate",
    "is_v2",
    "module_line",
    "report",
    "sources_of",
    "sources_of_lock",
    "verify_tree",
]


#: The composition's records, loaded on first use (with the composition).
_LOADED_LATE = {
    "Composed": "omni_port.v2.decide",
    "Inputs": "omni_port.v2.pipeline",
    "Result": "omni_port.v2.pipeline",
    "Reviewed": "omni_port.v2.pipeline",
    "Sources": "omni_port.v2.inputs",
}


def __getattr__(name: str) -> object:
    where = _LOADED_LATE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(where)
    return getattr(module, "Settings" if name == "Sources" else name)


def configured(config: Config) -> bool:
    """Whether ``[tool.omni-port]`` turns V2 on (``v2-source``)."""
    return bool(config.v2_source)


def is_v2(lock: lockfile.Lock) -> bool:
    return lock.layout is Layout.V2


def sources_of(
    config: Config,
    source: str | None = None,
    upstream: str | None = None,
    vllm_base: str | None = None,
    vllm: tuple[str, ...] = (),
    allow: str | None = None,
) -> Sources:
    """The V2 inputs: flags first, then the ``v2-*`` keys, then the V1 ones."""
    from omni_port.v2.inputs import Settings as Sources

    label = ""
    if allow is None and config.v2_allow:
        allow = str(config.path(config.v2_allow))
        label = config.recorded_path(allow)  # as the lock records `--generated`
    return Sources(
        source=source or config.v2_source or config.source,
        upstream=upstream or config.v2_upstream or config.upstream,
        vllm_base=vllm_base or config.v2_vllm_base,
        vllm=vllm or tuple(config.v2_vllm.split()),
        allow=allow or "",
        allow_label=label,
    )


def report(sources: Sources, settings: Settings) -> tuple[pipeline.Inputs, pipeline.Reviewed]:
    """The inputs, loaded, who overrides every method of the composed runners (and of the
    classes rebased onto vllm-ascend's substitutes), how ``v2-sync`` would compose them, and
    the findings reviewed against that. A report never refuses a vLLM mismatch: it notes it."""
    from omni_port.v2 import inputs, pipeline

    loaded = inputs.load(
        replace(sources, force_vllm_mismatch=True), settings.cache, settings.progress
    )
    return loaded, pipeline.review(loaded, TOOL)


def command(loaded: pipeline.Inputs, sources: Sources, out: str) -> str:
    """The `v2-sync` command that regenerates a tree: every input named (``out`` as
    recorded: relative to the repository root)."""
    parts = [
        f"omni-port v2-sync {loaded.omni_label}",
        f"--upstream {loaded.npu.label}",
        f"--vllm-base {loaded.base.label}",
        *(f"--vllm {label}" for label in loaded.candidates),
        *([f"--v2-allow {sources.allow_label or sources.allow}"] if sources.allow else []),
        *(["--force-vllm-mismatch"] if sources.force_vllm_mismatch else []),
        f"--generated {out}",
    ]
    return " ".join(parts)


def generate(
    sources: Sources, settings: Settings, out: Path, recorded: str = ""
) -> tuple[pipeline.Inputs, pipeline.Result]:
    """The composed modules and their lock (``recorded``: the command a lock names)."""
    from omni_port.v2 import inputs, pipeline

    loaded = inputs.load(sources, settings.cache, settings.progress)
    text = recorded or command(loaded, sources, settings.config.recorded_path(out))
    return loaded, pipeline.generate(loaded, TOOL, text)


def sources_of_lock(lock: lockfile.Lock, config: Config) -> Sources:
    """The inputs a V2 lock names (the allow-list as recorded: relative to the root)."""
    from omni_port.v2.inputs import Settings as Sources

    by_role: dict[str, list[str]] = {}
    for source in lock.sources:
        by_role.setdefault(source.role, []).append(source.label)
    allow = by_role.get("allow", [""])[0]
    return Sources(
        source=by_role.get("source", [""])[0],
        upstream=lock.upstream,
        vllm_base=by_role.get("vllm-base", [""])[0],
        vllm=tuple(by_role.get("vllm", ())),
        allow=_recorded_file(allow, config),
        allow_label=allow,
        force_vllm_mismatch="forced" in by_role,
    )


def _recorded_file(label: str, config: Config) -> str:
    """A file a lock names: as given on the command line (relative to where it ran), or
    as the configuration's (relative to the repository root); "" stays ""."""
    if not label or Path(label).exists():
        return label
    return str(config.path(label))


def verify_tree(out: Path, lock: lockfile.Lock, settings: Settings) -> list[Finding]:
    """`verify` of a V2 tree as its lock says it was made, on the files on disk."""
    sources = sources_of_lock(lock, settings.config)
    loaded, result = generate(sources, settings, out, lock.command)
    files = {
        name: read_bytes_or_none(out / name) or b"" for name in lock.outputs if name.endswith(".py")
    }
    placements = [lockfile.placement(row) for row in lock.placements]
    context = _context(settings, result, loaded, sources)
    found = verify_files(files, placements, result.composition.patches, context)
    return [*found, *_v2_checks(files, loaded)]


def _v2_checks(files: dict[str, bytes], loaded: pipeline.Inputs) -> list[Finding]:
    """The V2 checks of the modules as they are on disk (``v2.checks``)."""
    modules = {name: data.decode("utf-8", "replace") for name, data in files.items()}
    from omni_port.v2 import checks as v2_checks
    from omni_port.v2 import pipeline

    return v2_checks.check(modules, pipeline.against(loaded))


def check_tree(settings: Settings) -> list[Finding]:
    """`check` of the configured V2 tree: stale outputs, and verification of what is on disk."""
    config = settings.config
    target = config.path(config.v2_generated)
    sources = sources_of(config)
    loaded, result = generate(sources, settings, target)
    actual = {rel: read_bytes_or_none(target / rel) for rel in result.files}
    findings = drift.stale_findings(result.files, actual, shown(target), "omni-port sync")
    on_disk = {
        rel: data for rel, data in actual.items() if data is not None and rel.endswith(".py")
    }
    context = _context(settings, result, loaded, sources)
    located = {rel: f"{shown(target)}/{rel}" for rel in on_disk}
    patches = result.composition.patches
    verified = verify_files(on_disk, result.placements, patches, context)
    for finding in [*verified, *_v2_checks(on_disk, loaded)]:
        findings.append(replace(finding, path=located.get(finding.path, finding.path)))
    return findings


def _context(
    settings: Settings, result: pipeline.Result, loaded: pipeline.Inputs, sources: Sources
) -> checks.Context:
    # vLLM is the release the NPU runner runs on (the lock's vllm-base), not only the one
    # vllm-ascend's metadata names: a tree composed on a given base is checked against it.
    context = verification_context(
        settings,
        result.composition.patches,
        loaded.npu,
        sources.upstream,
        sources.source,
        loaded.base.label,
    )
    from omni_port.v2 import pipeline

    return replace(context, package=pipeline.PACKAGE)


def module_line(module: str, result: pipeline.Result) -> str:
    """What `v2-sync` says of one module: how the methods both override were composed, and
    its omni hunks placed and in conflict."""
    from omni_port.v2 import pipeline

    mine = [c for c in result.composed if c.module == module]
    rules = Counter(c.rule.value if c.rule is not None else "not composed" for c in mine)
    composed = ", ".join(f"{n} {rule}" for rule, n in sorted(rules.items())) or "none"
    hunks = [
        p
        for p in result.placements
        if p.module == module and p.kind not in (pipeline.COMPOSED, pipeline.REWRITTEN)
    ]
    placed = sum(1 for p in hunks if p.status is Status.PLACED)
    conflicts = sum(1 for p in hunks if p.status is Status.CONFLICT)
    return (
        f"{module}: methods both override: {composed}; {placed} omni hunks placed, "
        f"{conflicts} hunk conflicts"
    )
