"""Do vLLM-Omni's V2 runners and vllm-ascend's V2 runner target the same vLLM release?

A composition of the two calls vLLM's V2 runner through both; when they target different
vLLM releases (vllm-omni 0.32.0rc1 is written for vLLM 0.32, vllm-ascend 0.30.0rc2 runs on
vLLM 0.30) the generated runner calls APIs of both, and nothing static can make that
right. ``v2-sync`` therefore compares the two first and refuses a mismatch (exit 2) unless
forced; forced output says so in every header. vLLM-Omni targets the vLLM release of its
own major.minor (its policy); vllm-ascend's pairing comes from its metadata (an exact
``Requires-Dist: vllm==X`` pin, else its README's "the same version" rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from omni_port.gpu import vllm_delta
from omni_port.model import Code, Finding, Severity
from omni_port.sources.upstream import Progress, SpecKind, parse_spec
from omni_port.sources.vllm_sources import ascend_metadata, pairing_from_metadata

_RELEASE = re.compile(r"^(\d+)\.(\d+)(\.\d+)?")


@dataclass(frozen=True, slots=True)
class Pairing:
    """The vLLM release each side targets ("" when it cannot be told)."""

    omni_label: str
    #: vllm-omni's version and the vLLM major.minor it targets.
    omni_version: str
    omni_vllm: str
    npu_label: str
    #: The vLLM release vllm-ascend runs on, and how that is known.
    npu_vllm_version: str
    evidence: str

    @property
    def mismatch(self) -> bool:
        return bool(self.omni_vllm and self.npu_vllm_version) and self.omni_vllm != _minor(
            self.npu_vllm_version
        )

    @property
    def npu_vllm(self) -> str:
        """The vLLM spec the NPU runner runs on (``vllm==0.30.0``), or ""."""
        return f"vllm=={self.npu_vllm_version}" if self.npu_vllm_version else ""

    @property
    def statement(self) -> str:
        """Both versions, plainly."""
        omni = self.omni_version or "?"
        return (
            f"vllm-omni {omni} ({self.omni_label}) targets vLLM {self.omni_vllm or '?'}, "
            f"while {self.npu_label} runs on vLLM {self.npu_vllm_version or '?'}"
            + (f" ({self.evidence})" if self.evidence else "")
        )

    @property
    def refusal(self) -> str:
        return (
            f"{self.statement}: a composition would call the V2 runner APIs of both vLLM "
            "releases; pick releases of one vLLM (or pass --force-vllm-mismatch, and the "
            "output says it was forced)"
        )

    @property
    def header(self) -> str:
        """The line forced output carries in its header ("" when the sides agree)."""
        if not self.mismatch:
            return ""
        return f"FORCED despite a vLLM mismatch (--force-vllm-mismatch): {self.statement}"

    def findings(self) -> list[Finding]:
        """A note when forced past a mismatch, or when a side's vLLM cannot be told."""
        if self.mismatch:
            message = f"{self.statement}: composed anyway (--force-vllm-mismatch)"
            return [Finding(Code.OP511, self.omni_label, 0, message, severity=Severity.NOTE)]
        unknown = [
            *([f"which vLLM {self.omni_label} targets"] if not self.omni_vllm else []),
            *([f"which vLLM {self.npu_label} runs on"] if not self.npu_vllm_version else []),
        ]
        if not unknown:
            return []
        message = (
            f"vLLM pairing not checked: cannot tell {' nor '.join(unknown)} (a release, or a "
            "tree with vllm_omni/_version.py and vllm-ascend's PKG-INFO, can be told)"
        )
        return [Finding(Code.OP511, self.omni_label, 0, message, severity=Severity.NOTE)]


def check(source: str, upstream: str, cache: Path, progress: Progress | None = None) -> Pairing:
    """Which vLLM each side targets. Raises BadInput (OP003) when a release cannot be had."""
    omni = parse_spec(source, "vllm-omni")
    version = omni.version if omni.kind is SpecKind.PYPI else ""
    if omni.kind is SpecKind.PATH:
        version = _tree_omni_version(Path(omni.path))
    elif omni.kind is SpecKind.INSTALLED:
        version = _installed(omni.dist)
    target = _minor(vllm_delta.target_vllm(version)) if _RELEASE.match(version) else ""
    ascend = parse_spec(upstream, "vllm-ascend")
    found = pairing_from_metadata(ascend_metadata(ascend, cache, progress) or "")
    npu_version, evidence = (found.version, found.evidence) if found else ("", "")
    return Pairing(omni.label, version, target, ascend.label, npu_version, evidence)


def _tree_omni_version(path: Path) -> str:
    root = path if path.is_dir() else path.parent
    for candidate in (root, *root.parents):
        version = vllm_delta.omni_version_of(candidate)
        if version or (candidate / "vllm_omni").is_dir():
            return version
    return ""


def _installed(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def _minor(version: str) -> str:
    found = _RELEASE.match(version)
    return f"{found.group(1)}.{found.group(2)}" if found else ""
