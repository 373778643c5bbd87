"""`gpu-delta` through the API: the GPU runners' omni hunks against their vLLM bases.

Reading only (releases are downloaded into the cache): the command writes the patch sets
it is given, and prints the reports made here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omni_port import report
from omni_port.api.inputs import Settings, carry_edits, default_vllm_specs, load_vllm_bases
from omni_port.errors import BadInput
from omni_port.extract.listing import extracted_blocks
from omni_port.gpu import parity, transplant, vllm_delta
from omni_port.gpu.counterparts import Parity
from omni_port.model import Code, Finding, Located, PatchSet, Placement, Report, Tree
from omni_port.pyast.parser import parse
from omni_port.sources.textio import read_source
from omni_port.sources.upstream import OMNI_GPU_RUNNERS, OMNI_RUNNERS, locate_runners

__all__ = ["DeltaRequest", "GpuDelta", "counts", "gpu_delta", "json_report", "text_report"]


@dataclass(frozen=True, slots=True)
class DeltaRequest:
    """What `gpu-delta` compares (None, empty: the configuration's)."""

    #: GPU runner files, a vllm-omni checkout or a release (empty: `source`).
    sources: tuple[str, ...] = ()
    #: vLLM releases to compare with, the first the target (empty: around the source's).
    vllm_specs: tuple[str, ...] = ()
    #: NPU runners to check hunk-level parity against (None: no parity).
    npu_source: str | None = None
    #: Where the transplant goes (None: no transplant; needs ``npu_source``).
    transplant_dir: Path | None = None
    #: Where the hunks go as a patch set; only checked against ``transplant_dir`` here.
    patches_dir: Path | None = None
    #: The allow-list file of reviewed parity gaps.
    allow_path: Path | None = None
    #: Extract despite malformed markers.
    lenient: bool = False


@dataclass(frozen=True, slots=True)
class GpuDelta:
    """What `gpu-delta` found: the hunks, their parity with the NPU runners, the transplant."""

    delta: vllm_delta.Delta
    #: The delta's findings, the vLLM pairing notes, then the parity gaps.
    findings: tuple[Finding, ...]
    rows: tuple[parity.HunkParity, ...] = ()
    plan: transplant.Plan | None = None

    @property
    def patches(self) -> PatchSet:
        """The hunks as a patch set (usable by `sync --upstream-class`)."""
        return self.delta.patches

    def transplant_patches(self, directory: Path) -> PatchSet:
        """The re-homed hunks, with the conflict resolutions recorded in ``directory``
        (`resolve --patches DIR`) kept; BadInput (OP205) when one would be dropped."""
        assert self.plan is not None, "no transplant was planned"
        return carry_edits(self.plan.patches, directory)

    def placements(self) -> tuple[Placement, ...]:
        return tuple(extracted_blocks(self.delta.patches))


def gpu_delta(request: DeltaRequest, settings: Settings) -> GpuDelta:
    """Compare each copied GPU method with the vLLM release its body matches best; with
    ``npu_source``, the hunks the NPU runners lack, and with ``transplant_dir`` those hunks
    re-homed onto the NPU runners. BadInput on bad input (nothing is written here)."""
    _check_transplant_options(request)
    texts = request.sources or (settings.config.source,)
    located = _gpu_runners(texts, settings)
    allowed = _allow_list(request.allow_path) if request.allow_path is not None else ()
    specs = request.vllm_specs or default_vllm_specs(texts)
    bases, notes = load_vllm_bases(specs, settings)
    target = next(iter(bases))
    sources = {Path(r.member).name: r.source for r in located}
    delta = vllm_delta.gpu_delta(sources, bases, target, request.lenient)
    findings: list[Finding] = [*delta.findings, *notes]
    if request.npu_source is None:
        return GpuDelta(delta, tuple(findings))
    npu = _npu_trees(request.npu_source, settings)
    rows = parity.hunk_parity(delta, npu, allowed)
    findings.extend(parity.parity_findings(rows, allowed))
    plan = None
    if request.transplant_dir is not None:
        plan = transplant.plan(delta, npu, rows, settings.config.upstream_class)
    return GpuDelta(delta, tuple(findings), tuple(rows), plan)


def _allow_list(path: Path) -> tuple[parity.AllowEntry, ...]:
    source = read_source(path)
    return parity.parse_allow_list(source.text, source.path)


def _gpu_runners(texts: Sequence[str], settings: Settings) -> list[Located]:
    """The GPU runner files each source argument names."""
    cache, progress = settings.cache, settings.progress
    return [r for t in texts for r in locate_runners(t, cache, progress, OMNI_GPU_RUNNERS)]


def _npu_trees(text: str, settings: Settings) -> dict[str, Tree]:
    located = locate_runners(text, settings.cache, settings.progress, OMNI_RUNNERS)
    return {Path(r.member).name: parse(r.source.text, r.source.path) for r in located}


def _check_transplant_options(request: DeltaRequest) -> None:
    """--transplant needs the parity it selects hunks by, and a directory of its own."""
    directory = request.transplant_dir
    if directory is None:
        return
    if request.npu_source is None:
        message = (
            "--transplant needs --parity NPU_SOURCES: only the hunks the NPU runners lack "
            "are transplanted"
        )
        raise BadInput.at(Code.OP005, str(directory), 0, message)
    patches_dir = request.patches_dir
    if patches_dir is not None and patches_dir.resolve() == directory.resolve():
        raise BadInput.at(
            Code.OP005, str(directory), 0, "--transplant and --patches name the same directory"
        )


# --- the reports -----------------------------------------------------------------------------


def text_report(found: GpuDelta) -> str:
    """The copied methods and their hunks, then what the transplant moved and could not."""
    return _text_report(found.delta) + _transplant_report(found.plan)


def counts(found: GpuDelta, written: int) -> dict[str, int]:
    """The report's counts; ``written``: patch files changed (or that would change)."""
    tally = _counts(found.delta, found.rows, written)
    if found.plan is not None:
        tally.update(transplanted=len(found.plan.moved), not_transplantable=len(found.plan.skipped))
    return tally


def _text_report(delta: vllm_delta.Delta) -> str:
    lines = []
    for method in delta.methods:
        base = method.base
        lines.append(
            f"{base.module}: {base.owner}.{base.member}  base {base.base} "
            f"(contains {base.best.containment:.0%}, covers {base.best.coverage:.0%}), "
            f"{len(method.hunks)} hunks"
        )
        for block in method.hunks:
            where = f"{report.display_path(block.origin.path)}:{block.origin.start}"
            local = block.id.rsplit(".", 1)[-1]
            lines.append(f"  {where}: {local} {block.kind.value}: {block.title}")
    return "".join(line + "\n" for line in lines)


def _transplant_report(plan: transplant.Plan | None) -> str:
    """What --transplant wrote, and the gaps it could not."""
    if plan is None:
        return ""
    lines = [f"transplant: {len(plan.moved)} hunks re-homed onto the NPU runners"]
    for moved in plan.moved:
        block = moved.block
        local = block.id.rsplit(".", 1)[-1]
        note = "" if moved.hosted else f" (the NPU class does not override {block.member})"
        lines.append(
            f"  {moved.module}: {block.owner}.{block.member} {local} <- {moved.source_id} "
            f"({moved.status.value}){note}"
        )
    for skipped in plan.skipped:
        where = f"{report.display_path(skipped.path)}:{skipped.line}"
        lines.append(
            f"  not transplantable: {where}: {skipped.owner}.{skipped.member} "
            f"({skipped.status.value}): {skipped.reason}"
        )
    return "".join(line + "\n" for line in lines)


def _counts(
    delta: vllm_delta.Delta, rows: Sequence[parity.HunkParity], written: int
) -> dict[str, int]:
    statuses = Counter(f"{row.side}_{row.status.value}" for row in rows)
    present_as = Counter(
        f"present_as_{row.present_as}"
        for row in rows
        if row.side == "gpu" and row.status is Parity.PRESENT and row.present_as
    )
    return {
        "modules": len(delta.patches.modules),
        "methods": len(delta.methods),
        "hunks": sum(len(m.hunks) for m in delta.methods),
        "written": written,
        **statuses,
        **present_as,
    }


def json_report(found: GpuDelta, outcome: Report) -> str:
    """The JSON report: the standard one of ``outcome``, with the methods, the parity rows
    and the transplant."""
    counts = dict(outcome.counts)
    document = json.loads(report.json_report(outcome.placements, outcome.findings, counts))
    document["methods"] = [_method_dict(m) for m in found.delta.methods]
    document["parity"] = [_row_dict(row) for row in found.rows]
    plan = found.plan
    if plan is not None:
        document["transplant"] = {
            "blocks": [_moved_dict(m) for m in plan.moved],
            "not_transplantable": [_skipped_dict(s) for s in plan.skipped],
        }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _moved_dict(moved: transplant.Moved) -> dict[str, object]:
    block = moved.block
    return {
        "id": block.id,
        "from": moved.source_id,
        "module": moved.module,
        "class": block.owner,
        "method": block.member,
        "kind": block.kind.value,
        "status": moved.status.value,
        "hosted": moved.hosted,
    }


def _skipped_dict(skipped: transplant.Skipped) -> dict[str, object]:
    return {
        "id": skipped.id,
        "module": skipped.module,
        "class": skipped.owner,
        "method": skipped.member,
        "path": report.display_path(skipped.path),
        "line": skipped.line,
        "status": skipped.status.value,
        "reason": skipped.reason,
    }


def _method_dict(method: vllm_delta.CopiedMethod) -> dict[str, object]:
    base = method.base
    return {
        "module": base.module,
        "class": base.owner,
        "method": base.member,
        "base": base.base,
        "containment": round(base.best.containment, 3),
        "coverage": round(base.best.coverage, 3),
        "scores": [
            {
                "base": s.label,
                "containment": round(s.containment, 3),
                "coverage": round(s.coverage, 3),
            }
            for s in base.scores
        ],
        "hunks": [block.id for block in method.hunks],
    }


def _row_dict(row: parity.HunkParity) -> dict[str, object]:
    return {
        "side": row.side,
        "module": row.module,
        "class": row.owner,
        "method": row.member,
        "id": row.id,
        "kind": row.kind,
        "lines": [row.start, row.end],
        "status": row.status.value,
        "present_as": row.present_as or "",
        "counterpart": row.counterpart,
        "items": len(row.items),
        "missing": [{"line": i.line, "kind": i.kind.value, "text": i.text} for i in row.missing],
        "allowed": row.allow.reason if row.allow is not None else "",
    }
