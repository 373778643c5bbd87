"""`check` through the API: the flags resolved, the inputs hashed, and the findings kept
for the same inputs answered at once, as black's cache does.

Light on purpose: the inputs are located and hashed (read as bytes, nothing parsed), and
the stages that parse load only when the cache has no answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omni_port import TOOL, report
from omni_port.api.locked import locked_transplants, locked_upstream
from omni_port.api.settings import Settings
from omni_port.errors import BadInput
from omni_port.model import Finding
from omni_port.sources.textio import sha256, write_atomic
from omni_port.sources.upstream import (
    OMNI_GPU_RUNNERS,
    SpecKind,
    locate,
    locate_runners,
    parse_spec,
)
from omni_port.sources.workspace import CheckInputs

__all__ = ["CheckRequest", "Checked", "check_workspace"]


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """The flags of `check`, as given (None, empty: take the configuration's value)."""

    sources: tuple[str, ...] = ()
    catalog_path: Path | None = None
    base: str | None = None
    patches_dir: Path | None = None
    generated: Path | None = None
    upstream: str | None = None
    gpu: str | None = None
    vllm: tuple[str, ...] = ()
    allow: Path | None = None
    #: Check everything even when no input changed since the last check.
    no_cache: bool = False


@dataclass(frozen=True, slots=True)
class Checked:
    """The gate's findings, and whether the cache answered them (nothing parsed)."""

    findings: list[Finding]
    cached: bool


def check_workspace(request: CheckRequest, settings: Settings) -> Checked:
    """Check the workspace ``request`` names (``api.check``), or answer from the cache
    when every input is as it was; the answer is kept in the cache for the next check."""
    inputs = _check_inputs(request, settings)
    key = _check_key(inputs, settings)
    findings = None if request.no_cache else _cached_findings(settings.cache, key)
    if findings is not None:
        return Checked(findings, cached=True)
    # The stages that parse load only now: a cached answer never pays for them.
    from omni_port.api.gate import check

    findings = check(inputs, settings)
    _store_findings(settings.cache, key, findings)
    return Checked(findings, cached=False)


def _check_inputs(request: CheckRequest, settings: Settings) -> CheckInputs:
    """The flags resolved against the configuration; runner files located, nothing parsed."""
    config, cache, progress = settings.config, settings.cache, settings.progress
    members = config.platform_info.runners
    located = tuple(
        r
        for text in (request.sources or (config.source,))
        for r in locate_runners(text, cache, progress, members)
    )
    gpu, vllm = request.gpu, request.vllm
    gpu_located = tuple(locate_runners(gpu, cache, progress, OMNI_GPU_RUNNERS)) if gpu else ()
    if gpu and not vllm:
        from omni_port.api.inputs import default_vllm_specs

        vllm = tuple(default_vllm_specs([gpu]))
    catalog_path = request.catalog_path
    if catalog_path is None and config.catalog:
        catalog_path = config.path(config.catalog)
    return CheckInputs(
        sources=located,
        catalog_path=catalog_path,
        base=request.base if request.base is not None else config.base,
        patches=request.patches_dir or config.path(config.patches),
        generated=request.generated or config.path(config.generated),
        upstream=request.upstream or "",
        gpu=gpu_located,
        vllm=vllm if gpu else (),
        allow_path=request.allow,
        v2=bool(config.v2_source) and not request.sources and request.generated is None,
    )


def _check_key(inputs: CheckInputs, settings: Settings) -> str:
    """sha256 over every input of a check, read as bytes (nothing parsed)."""
    config = settings.config
    digest = hashlib.sha256(f"{TOOL}\0{_code_stamp()}\0{config}\0{inputs}\0".encode())
    texts = [s.source.sha256 for s in (*inputs.sources, *inputs.gpu)]
    # The GPU runner beside each source gives its blocks their second anchor.
    texts += [s.counterpart.sha256 if s.counterpart else "-" for s in inputs.sources]
    for spec_text in (inputs.base, inputs.upstream, locked_upstream(config, inputs.generated)):
        if spec_text:
            texts.append(_spec_sha(spec_text, settings))
    texts.extend(_vllm_sha(spec_text, settings) for spec_text in inputs.vllm)
    # The reviewed lists decide what passes: an edited one is another check.
    marker_allow = config.path(config.marker_allow) if config.marker_allow else None
    for path in (inputs.catalog_path, inputs.allow_path, marker_allow):
        texts.append(sha256(path.read_bytes()) if path is not None and path.is_file() else "-")
    transplants = locked_transplants(config, inputs.generated)
    for folder in (inputs.patches, inputs.generated, *transplants):
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        texts.extend(f"{p.relative_to(folder).as_posix()}:{sha256(p.read_bytes())}" for p in files)
    texts.extend(_v2_key(settings) if inputs.v2 else [])
    digest.update("\n".join(texts).encode())
    return digest.hexdigest()


def _v2_key(settings: Settings) -> list[str]:
    """The configured V2 tree and the V2 inputs given as paths (releases are pinned by name)."""
    config = settings.config
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


def _spec_sha(text: str, settings: Settings) -> str:
    platform = settings.config.platform_info
    return locate(parse_spec(text, platform.dist), platform.member, settings.cache).source.sha256


def _vllm_sha(text: str, settings: Settings) -> str:
    from omni_port.gpu.vllm_delta import locate_vllm

    try:
        return locate_vllm(parse_spec(text, "vllm"), settings.cache).source.sha256
    except BadInput:
        return "-"  # a candidate that cannot be had is skipped by the check itself


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
