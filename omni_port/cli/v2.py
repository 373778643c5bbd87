"""The `v2-report` and `v2-sync` commands, and V2 trees in `sync`, `verify` and `check`."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import click

from omni_port import report as reporting
from omni_port.cli import (
    TOOL,
    F,
    Options,
    emit_findings,
    errors,
    finding_counts,
    handle_errors,
    json_option,
    shown,
    summary,
    write_json,
    write_options,
)
from omni_port.cli.inputs import (
    previous_outputs,
    read_bytes_or_none,
    verification_context,
    verify_outputs,
    write_files,
)
from omni_port.model import Finding, Layout, Status
from omni_port.patches import lockfile
from omni_port.patches.store import Changes
from omni_port.v2 import inputs as v2_inputs
from omni_port.v2 import overrides, pipeline
from omni_port.verify import checks


def _settings(
    options: Options,
    source: str | None,
    upstream: str | None,
    vllm_base: str | None,
    vllm: Sequence[str] = (),
    allow: Path | None = None,
) -> v2_inputs.Settings:
    """Flags first, then ``[tool.omni-port]`` (``v2-*`` keys, then the V1 ones)."""
    config = options.config
    allow_text = str(allow) if allow is not None else ""
    if allow is None and config.v2_allow:
        allow_text = str(config.path(config.v2_allow))
    return v2_inputs.Settings(
        source=source or config.v2_source or config.source,
        upstream=upstream or config.v2_upstream or config.upstream,
        vllm_base=vllm_base or config.v2_vllm_base,
        vllm=tuple(vllm) or tuple(config.v2_vllm.split()),
        allow=allow_text,
    )


def _source_options(command: F) -> F:
    for option in reversed(
        [
            click.argument("source", required=False),
            click.option(
                "--upstream",
                help="vllm-ascend whose V2 NPUModelRunner to compose with: vllm-ascend==X, a "
                "path, or 'installed' (default: `v2-upstream`, else `upstream`).",
            ),
            click.option(
                "--vllm-base",
                help="vLLM release the NPU runner runs on (vllm==X, a path or 'installed'; "
                "default: `v2-vllm-base`, else the release vllm-ascend pairs with).",
            ),
        ]
    ):
        command = option(command)
    return command


# --- v2-report ------------------------------------------------------------------------------


_VLLM_OPTION = click.option(
    "--vllm",
    "vllm",
    multiple=True,
    help="Candidate vLLM release of omni's per-method delta (repeat; the first is the target; "
    "default: `v2-vllm`, else the source release's major.minor and the minors around it).",
)


@click.command("v2-report")
@_source_options
@_VLLM_OPTION
@json_option
@click.pass_obj
@handle_errors
def v2_report_command(
    options: Options,
    source: str | None,
    upstream: str | None,
    vllm_base: str | None,
    vllm: tuple[str, ...],
    json_path: Path | None,
) -> None:
    """Who overrides each method when vLLM-Omni's V2 runners meet the NPU V2 runner.

    SOURCE is vLLM-Omni's worker_v2 runners: a release (vllm-omni==0.30.0), a checkout, a
    folder or a file (default: `v2-source`, else `source`). For every method of every omni
    V2 runner class, of NPUModelRunner and of vLLM's GPUModelRunner: omni, npu, both or
    neither, and for both, which side calls the other through super(). Exit 0 when clean,
    1 with collisions (OP320) or calls the composed runner cannot take (OP322); bypassed
    NPU overrides (OP321) are notes. 2 on bad input. With --json -, stdout carries the
    JSON document only.
    """
    settings = _settings(options, source, upstream, vllm_base, vllm)
    loaded = v2_inputs.load(settings, options.cache, options.progress())
    result = pipeline.report(loaded)
    findings = list(result.findings)
    counts = _report_counts(result)
    if json_path is None or str(json_path) != "-":
        click.echo(_text_report(result, loaded.omni_label, loaded.npu.label), nl=False)
        emit_findings(findings)
    write_json(json_path, _json_report(result, findings, counts))
    summary(options, _report_summary(counts))
    if errors(findings):
        sys.exit(1)


def _text_report(result: overrides.OverrideReport, label: str, npu_label: str) -> str:
    lines = []
    for runner in result.runners:
        chain = " < ".join(runner.chain)
        lines.append(
            f"{runner.module}: {chain} with {result.npu_class} ({npu_label}) on "
            f"{overrides.BASE_CLASS} ({result.base_label}); omni from {label}"
        )
        for row in runner.rows:
            lines.append("  " + _row_text(row))
    return "".join(line + "\n" for line in lines)


def _row_text(row: overrides.MethodRow) -> str:
    parts = [f"{row.who.value:<8}{row.name:<36}"]
    if row.omni is not None:
        arrow = " -> super()" if row.omni.delegates else ""
        parts.append(f"omni {row.omni.owner}:{row.omni.line}{arrow}")
    if row.npu is not None:
        arrow = " -> super()" if row.npu.delegates else ""
        parts.append(f"npu {row.npu.owner}:{row.npu.line}{arrow}")
    if row.base_line:
        parts.append(f"vllm :{row.base_line}")
    if row.collision:
        parts.append("COLLISION")
    return "  ".join(parts).rstrip()


def _report_counts(result: overrides.OverrideReport) -> dict[str, int]:
    counts: Counter[str] = Counter(row.who.value for r in result.runners for row in r.rows)
    tally = finding_counts(result.findings)
    return {
        "runners": len(result.runners),
        **dict(sorted(counts.items())),
        "collisions": tally.get("collision", 0),
        "bypassed": tally.get("bypass", 0),
        "calls": tally.get("call", 0),
    }


def _report_summary(counts: dict[str, int]) -> str:
    kinds = ", ".join(f"{counts.get(w.value, 0)} {w.value}" for w in overrides.Who)
    return (
        f"v2-report: {counts['runners']} runner classes; methods: {kinds}; "
        f"{counts['collisions']} collisions, {counts['bypassed']} bypassed NPU overrides, "
        f"{counts['calls']} calls the composed runner cannot take"
    )


def _site(site: overrides.Site | None) -> dict[str, object] | None:
    if site is None:
        return None
    return {
        "class": site.owner,
        "path": reporting.display_path(site.path),
        "line": site.line,
        "delegates": site.delegates,
    }


def _json_report(
    result: overrides.OverrideReport, findings: Sequence[Finding], counts: dict[str, int]
) -> str:
    document = json.loads(reporting.json_report([], findings, counts))
    document.pop("blocks")
    document["runners"] = [
        {
            "module": runner.module,
            "class": runner.runner,
            "chain": list(runner.chain),
            "npu_class": result.npu_class,
            "base": result.base_label,
            "methods": [
                {
                    "name": row.name,
                    "who": row.who.value,
                    "base_line": row.base_line,
                    "omni": _site(row.omni),
                    "npu": _site(row.npu),
                    "collision": row.collision,
                }
                for row in runner.rows
            ],
        }
        for runner in result.runners
    ]
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


# --- v2-sync --------------------------------------------------------------------------------


@click.command("v2-sync")
@_source_options
@_VLLM_OPTION
@click.option(
    "--allow",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Reviewed methods whose NPU override omni's replacement shadows: "
    "'module.py:Class.method  reason' (default: `v2-allow`).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default: `v2-generated`, generated/v2).",
)
@json_option
@write_options("the output")
@click.pass_obj
@handle_errors
def v2_sync_command(
    options: Options,
    source: str | None,
    upstream: str | None,
    vllm_base: str | None,
    vllm: tuple[str, ...],
    allow: Path | None,
    out: Path | None,
    json_path: Path | None,
    check: bool,
    diff: bool,
) -> None:
    """Generate NPU V2 runners: vLLM-Omni's worker_v2 runners composed with NPUModelRunner.

    One module per omni V2 runner module, under its own name. Methods only omni overrides
    are omni's; methods only the NPU runner overrides are inherited; a method both
    override is omni's when it calls super(), else the NPU override with omni's hunks
    against vLLM placed by the sync engine (conflicts as in `sync`). A replacement that
    shadows the NPU override is a conflict until --allow lists it. Exit 0 clean, 1 with
    conflicts (or output that would change under --check), 2 on bad input.
    """
    settings = _settings(options, source, upstream, vllm_base, vllm, allow)
    target = out or options.config.path(options.config.v2_generated)
    failed = sync_v2(options, settings, target, check, diff, json_path)
    if failed:
        sys.exit(1)


def sync_v2(
    options: Options,
    settings: v2_inputs.Settings,
    target: Path,
    check: bool,
    diff: bool,
    json_path: Path | None = None,
) -> bool:
    """Generate (or, with ``check``, compare) one V2 tree; True when that is a finding."""
    loaded = v2_inputs.load(settings, options.cache, options.progress())
    result = pipeline.generate(loaded, TOOL, _command(loaded, settings, target))
    for module in sorted(loaded.omni):
        summary(options, _module_line(module, result))
    changes = write_files(options, target, result.files, previous_outputs(target), check, diff)
    emit_findings(result.findings)
    counts = {
        **result.counts,
        "written": len(changes.changed),
        "unchanged": len(changes.unchanged),
    }
    write_json(json_path, reporting.json_report(result.placements, result.findings, counts))
    summary(options, _sync_summary(counts, changes, check, target))
    return bool(errors(result.findings)) or (check and not changes.clean)


def _command(loaded: pipeline.Inputs, settings: v2_inputs.Settings, target: Path) -> str:
    parts = [
        f"omni-port v2-sync {loaded.omni_label}",
        f"--upstream {loaded.npu.label}",
        f"--vllm-base {loaded.base.label}",
        *(f"--vllm {label}" for label in loaded.candidates),
        *([f"--allow {settings.allow}"] if settings.allow else []),
        f"--out {shown(target)}",
    ]
    return " ".join(parts)


def _module_line(module: str, result: pipeline.Result) -> str:
    mine = [p for p in result.placements if p.module == module]
    placed = sum(1 for p in mine if p.status is Status.PLACED)
    conflicts = sum(1 for p in mine if p.status is Status.CONFLICT)
    spliced = sum(1 for m, _, _ in result.composition.spliced if m == module)
    return (
        f"{module}: {spliced} methods from the NPU override, {placed} hunks placed, "
        f"{conflicts} conflicts"
    )


def _sync_summary(counts: dict[str, int], changes: Changes, check: bool, target: Path) -> str:
    if changes.clean:
        files = f"{shown(target)}/ unchanged"
    else:
        verb = "would write" if check else "wrote"
        files = f"{verb} {len(changes.changed)} files to {shown(target)}/"
    hunks = counts["placed"] + counts["implicit_placed"]
    conflicts = counts["conflict"] + counts["implicit_conflict"]
    return (
        f"v2-sync: {counts['modules']} modules; {counts['spliced_methods']} methods generated "
        f"from the NPU override ({hunks} omni hunks placed, {conflicts} conflicts); "
        f"{counts['shadowed']} shadowed NPU overrides, {counts['shadowed_allowed']} allowed; "
        f"{files}"
    )


# --- the V2 tree in sync, verify and check -------------------------------------------------


def configured(options: Options) -> bool:
    """Whether ``[tool.omni-port]`` turns V2 on (``v2-source``)."""
    return bool(options.config.v2_source)


def sync_configured(options: Options, check: bool, diff: bool) -> bool:
    """`sync` of the configured V2 tree; True when that is a finding."""
    target = options.config.path(options.config.v2_generated)
    return sync_v2(options, _settings(options, None, None, None), target, check, diff)


def verify_tree(options: Options, out: Path, lock: lockfile.Lock) -> list[Finding]:
    """`verify` of a V2 tree as its lock says it was made, on the files on disk."""
    settings = settings_of(lock)
    loaded = v2_inputs.load(settings, options.cache, options.progress())
    result = pipeline.generate(loaded, TOOL, lock.command)
    files = {
        name: read_bytes_or_none(out / name) or b"" for name in lock.outputs if name.endswith(".py")
    }
    placements = [lockfile.placement(row) for row in lock.placements]
    context = _context(options, result, loaded, settings)
    return verify_outputs(files, placements, result.composition.patches, context)


def check_tree(options: Options) -> list[Finding]:
    """`check` of the configured V2 tree: stale outputs and verification of what is on disk."""
    from omni_port.catalog import drift

    target = options.config.path(options.config.v2_generated)
    settings = _settings(options, None, None, None)
    loaded = v2_inputs.load(settings, options.cache, options.progress())
    result = pipeline.generate(loaded, TOOL, _command(loaded, settings, target))
    actual = {rel: read_bytes_or_none(target / rel) for rel in result.files}
    findings = drift.stale_findings(result.files, actual, shown(target), "omni-port sync")
    on_disk = {
        rel: data for rel, data in actual.items() if data is not None and rel.endswith(".py")
    }
    context = _context(options, result, loaded, settings)
    located = {rel: f"{shown(target)}/{rel}" for rel in on_disk}
    patches = result.composition.patches
    for finding in verify_outputs(on_disk, result.placements, patches, context):
        findings.append(replace(finding, path=located.get(finding.path, finding.path)))
    return findings


def settings_of(lock: lockfile.Lock) -> v2_inputs.Settings:
    """The inputs a V2 lock names."""
    by_role: dict[str, list[str]] = {}
    for source in lock.sources:
        by_role.setdefault(source.role, []).append(source.label)
    return v2_inputs.Settings(
        source=by_role.get("source", [""])[0],
        upstream=lock.upstream,
        vllm_base=by_role.get("vllm-base", [""])[0],
        vllm=tuple(by_role.get("vllm", ())),
        allow=by_role.get("allow", [""])[0],
    )


def _context(
    options: Options,
    result: pipeline.Result,
    loaded: pipeline.Inputs,
    settings: v2_inputs.Settings,
) -> checks.Context:
    context = verification_context(
        options, result.composition.patches, loaded.npu, settings.upstream, settings.source
    )
    return replace(context, package=pipeline.PACKAGE)


def is_v2(lock: lockfile.Lock) -> bool:
    return lock.layout is Layout.V2
