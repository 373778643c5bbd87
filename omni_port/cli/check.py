"""The `check` command: the CI gate for drift between catalog, code and outputs.

Its inputs are hashed first (read as bytes, nothing parsed); when the same inputs were
checked before, the cached findings answer at once, as black's cache does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from omni_port import TOOL, report
from omni_port.cli import (
    Options,
    finding_counts,
    handle_errors,
    in_workspace,
    json_option,
    patches_option,
    summary,
    tally,
)
from omni_port.cli.output import emit
from omni_port.errors import BadInput
from omni_port.model import Finding, Report
from omni_port.patches import lockfile
from omni_port.sources.textio import sha256, write_atomic
from omni_port.sources.upstream import (
    ASCEND_RUNNER,
    OMNI_GPU_RUNNERS,
    SpecKind,
    locate,
    locate_runners,
    parse_spec,
)
from omni_port.sources.workspace import CheckInputs


@dataclass(frozen=True, slots=True)
class CheckFlags:
    """The flags of `check`, as given (None: take the configuration's value)."""

    sources: tuple[str, ...]
    catalog_path: Path | None
    base: str | None
    patches_dir: Path | None
    generated: Path | None
    upstream: str | None
    gpu: str | None
    vllm: tuple[str, ...]
    allow: Path | None
    fmt: str
    json_path: Path | None
    no_cache: bool


def _check_inputs(options: Options, flags: CheckFlags) -> CheckInputs:
    """The flags resolved against the configuration; runner files located, nothing parsed."""
    config = options.config
    progress = options.progress()
    located = tuple(
        r
        for text in (flags.sources or (config.source,))
        for r in locate_runners(text, options.cache, progress)
    )
    gpu, vllm = flags.gpu, flags.vllm
    gpu_located = (
        tuple(locate_runners(gpu, options.cache, progress, OMNI_GPU_RUNNERS)) if gpu else ()
    )
    if gpu and not vllm:
        from omni_port.api.inputs import default_vllm_specs

        vllm = tuple(default_vllm_specs([gpu]))
    catalog_path = flags.catalog_path
    if catalog_path is None and config.catalog:
        catalog_path = config.path(config.catalog)
    return CheckInputs(
        sources=located,
        catalog_path=catalog_path,
        base=flags.base if flags.base is not None else config.base,
        patches=flags.patches_dir or config.path(config.patches),
        generated=flags.generated or config.path(config.generated),
        upstream=flags.upstream or "",
        gpu=gpu_located,
        vllm=vllm if gpu else (),
        allow_path=flags.allow,
    )


@click.command("check")
@click.argument("sources", nargs=-1)
@click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Markdown catalog to compare with the code (default: `catalog`).",
)
@click.option("--base", help="Upstream the sources were ported from; lists implicit edits (notes).")
@patches_option("Patches directory to keep current (default: `patches`).")
@click.option(
    "--generated",
    type=click.Path(file_okay=False, path_type=Path),
    help="Generated directory to keep current (default: `generated`).",
)
@click.option("--upstream", help="Upstream of the generated runners (default: from the lock file).")
@click.option(
    "--gpu",
    help="GPU runners (a release, a checkout or a folder): check hunk-level parity with them.",
)
@click.option(
    "--vllm",
    "vllm",
    multiple=True,
    help="vLLM release the GPU runners copy from (repeat for candidates, the first is the "
    "target; default: the GPU release's major.minor and the minors around it).",
)
@click.option(
    "--parity-allow",
    "allow",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Reviewed parity gaps: 'module.py:Class.method[:hunk or statement prefix]  reason'.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="Finding format on stdout.",
)
@json_option
@click.option(
    "--no-cache",
    is_flag=True,
    help="Check everything even when no input changed since the last check.",
)
@click.pass_obj
@handle_errors
@in_workspace(writes=False)
def check_command(options: Options, /, **given: Any) -> Report:
    """The CI and pre-commit gate: catalog, markers, stale outputs, conflicts, parity.

    \b
    Problems (exit 1): nothing extracted or nothing generated (nothing-to-check: the gate
    cannot pass what it cannot check; `make sync` makes both); malformed markers the
    `marker-allow` list does not name, and its entries for a file read that match none
    (fixed or moved: the entry would accept the next defect on its line); catalog
    drift (uncatalogued, missing-from-code, content-drift, location-drift); patches or
    generated files that are stale; conflicts left in the generated runners or listed in
    the lock (unresolved-conflict); what verify finds in them; parity gaps. Notes (never
    exit 1): implicit edits the patches carry (with --base), imports that could not be
    verified, the malformed markers the `marker-allow` list names, its entries for files
    not read. Exit 0 when clean, 2 on bad input.
    """
    flags = CheckFlags(**given)
    inputs = _check_inputs(options, flags)
    key = _check_key(inputs, options)
    findings = None if flags.no_cache else _cached_findings(options.cache, key)
    if findings is None:
        # The stages that parse load only now: a cached answer never pays for them.
        from omni_port import api

        findings = api.check(inputs, options.settings)
        _store_findings(options.cache, key, findings)
    else:
        summary(options, "inputs unchanged since the last check: cached result, nothing parsed")
    counts = finding_counts(findings)
    outcome = Report(findings=tuple(findings), counts=counts)
    emit(outcome, flags.json_path, flags.fmt)
    summary(options, f"check: {tally(findings)}")
    return outcome


def _check_key(inputs: CheckInputs, options: Options) -> str:
    """sha256 over every input of a check, read as bytes (nothing parsed)."""
    digest = hashlib.sha256(f"{TOOL}\0{_code_stamp()}\0{options.config}\0{inputs}\0".encode())
    texts = [s.source.sha256 for s in (*inputs.sources, *inputs.gpu)]
    # The GPU runner beside each source gives its blocks their second anchor.
    texts += [s.counterpart.sha256 if s.counterpart else "-" for s in inputs.sources]
    for spec_text in (inputs.base, inputs.upstream, _locked_upstream(inputs.generated, options)):
        if spec_text:
            texts.append(_spec_sha(spec_text, options))
    texts.extend(_vllm_sha(spec_text, options) for spec_text in inputs.vllm)
    config = options.config
    # The reviewed lists decide what passes: an edited one is another check.
    marker_allow = config.path(config.marker_allow) if config.marker_allow else None
    for path in (inputs.catalog_path, inputs.allow_path, marker_allow):
        texts.append(sha256(path.read_bytes()) if path is not None and path.is_file() else "-")
    transplants = _locked_transplants(inputs.generated, options)
    for folder in (inputs.patches, inputs.generated, *transplants):
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        texts.extend(f"{p.relative_to(folder).as_posix()}:{sha256(p.read_bytes())}" for p in files)
    texts.extend(_v2_key(options))
    digest.update("\n".join(texts).encode())
    return digest.hexdigest()


def _v2_key(options: Options) -> list[str]:
    """The configured V2 tree and the V2 inputs given as paths (releases are pinned by name)."""
    config = options.config
    if not config.v2_source:
        return []
    folder = config.path(config.v2_generated)
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
    if config.v2_allow:
        files.append(config.path(config.v2_allow))
    for text in (
        config.v2_source,
        config.v2_upstream,
        config.v2_vllm_base,
        *config.v2_vllm.split(),
    ):
        path = Path(text)
        if text and parse_spec(text, "").kind is SpecKind.PATH:
            files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [f"{p}:{sha256(p.read_bytes())}" for p in files if p.is_file()]


def _code_stamp() -> str:
    """Size and mtime of omni-port's own modules: a changed checker invalidates the cache."""
    package = Path(__file__).resolve().parent.parent
    stats = sorted((p.relative_to(package).as_posix(), p.stat()) for p in package.rglob("*.py"))
    return ";".join(f"{name}:{stat.st_size}:{stat.st_mtime_ns}" for name, stat in stats)


def _spec_sha(text: str, options: Options) -> str:
    return locate(parse_spec(text, "vllm-ascend"), ASCEND_RUNNER, options.cache).source.sha256


def _vllm_sha(text: str, options: Options) -> str:
    from omni_port.gpu.vllm_delta import locate_vllm

    try:
        return locate_vllm(parse_spec(text, "vllm"), options.cache).source.sha256
    except BadInput:
        return "-"  # a candidate that cannot be had is skipped by the check itself


def _locked_upstream(generated: Path, options: Options) -> str:
    """The upstream a check regenerates onto (see ``api.check``), as read from here."""
    lock = lockfile.read_or_none(generated)
    if lock is None:
        return ""
    config = options.config
    configured = config.recorded_spec(config.upstream)
    return config.given_spec(lockfile.default_upstream(lock, configured))


def _locked_transplants(generated: Path, options: Options) -> list[Path]:
    """Transplant inputs the lock names: an edited one must not be answered from the cache."""
    lock = lockfile.read_or_none(generated)
    labels = [label for label, _ in lock.transplants] if lock is not None else []
    return [options.config.path(label) for label in labels]


def _cached_findings(cache: Path, key: str) -> list[Finding] | None:
    """The findings kept for ``key``; None when there are none or the entry is damaged
    (not UTF-8, not JSON, nested too deeply for the JSON reader, rows of another shape):
    the check then runs, as on a cold cache."""
    path = cache / "check" / f"{key}.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [report.finding_from_dict(row) for row in rows]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def _store_findings(cache: Path, key: str, findings: Sequence[Finding]) -> None:
    rows = [report.finding_dict(f) for f in findings]
    # The entry only spares the next check the same work: a cache that cannot take it (a
    # full disk, a read-only folder: OP006 from write_atomic, which leaves no partial
    # file) costs that run its speed, never this gate its answer, so it is no failure.
    with contextlib.suppress(BadInput):
        write_atomic(cache / "check" / f"{key}.json", json.dumps(rows, sort_keys=True).encode())
