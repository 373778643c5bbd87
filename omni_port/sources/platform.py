"""The platforms a workspace keeps runners for: what each one's runners copy, and from where.

vLLM-Omni keeps two hand ports of the same kind: its NPU runners copy vllm-ascend's
``NPUModelRunner``, its GPU runners copy vLLM's ``GPUModelRunner``. One engine and one rule
set serve both; what differs is data, and it lives here (``[tool.omni-port] platform``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from omni_port.model import ASCEND_MODULE, Layout
from omni_port.sources.upstream import (
    ASCEND_RUNNER,
    OMNI_GPU_RUNNERS,
    OMNI_RUNNERS,
    OMNI_V2_RUNNERS,
    VLLM_RUNNER,
    VLLM_V2_RUNNER,
)


class PlatformName(enum.Enum):
    """The platforms a workspace may keep runners for."""

    NPU = "npu"
    """vLLM-Omni's NPU runners on vllm-ascend's ``NPUModelRunner``."""
    GPU = "gpu"
    """vLLM-Omni's GPU runners on vLLM's ``GPUModelRunner``."""
    GPU_V2 = "gpu-v2"
    """vLLM-Omni's Model Runner V2 runners on vLLM's V2 ``GPUModelRunner``."""


@dataclass(frozen=True, slots=True)
class Platform:
    """What the runners of one platform copy, where it comes from, and where outputs go."""

    name: PlatformName
    #: The runner modules inside a vllm-omni distribution (or checkout).
    runners: tuple[str, ...]
    #: The runner class each of those modules provides, in the same order (the classes
    #: vLLM-Omni's workers keep in ``model_runner_cls``, which the runtime switch rebinds).
    classes: tuple[str, ...]
    #: What the lock of a generated tree of these runners says it holds.
    layout: Layout
    #: What headings call these runners (the upgrade summary's, the catalog's).
    title: str
    #: Package the generated runners stand for (their imports of each other resolve there).
    package: str
    #: The upstream distribution the runners copy from.
    dist: str
    #: The upstream module they copy, inside that distribution.
    member: str
    #: Its dotted name: copies import its own definitions from it.
    module: str
    #: The upstream class whose methods they copy.
    upstream_class: str
    #: Least share of a member's own statements found in an upstream method for it to be a
    #: copy: vLLM-Omni's GPU AR ``execute_model`` keeps about 42% of vLLM's.
    copy_floor: float
    #: Oldest upstream release base detection ranks (every release since, wheel or sdist).
    floor: str
    #: Defaults of the ``[tool.omni-port]`` keys that name this platform's inputs and
    #: outputs: ``source``, ``upstream``, ``patches``, ``generated``, ``upstream-class``.
    source: str
    upstream: str
    patches: str
    generated: str

    def defaults(self) -> dict[str, str]:
        """The configuration's fields whose default is this platform's, by field name."""
        return {
            "source": self.source,
            "upstream": self.upstream,
            "patches": self.patches,
            "generated": self.generated,
            "upstream_class": self.upstream_class,
        }


NPU = Platform(
    name=PlatformName.NPU,
    runners=OMNI_RUNNERS,
    classes=("OmniNPUModelRunner", "NPUARModelRunner", "NPUGenerationModelRunner"),
    layout=Layout.V1,
    title="NPU",
    package="vllm_omni.platforms.npu.worker",
    dist="vllm-ascend",
    member=ASCEND_RUNNER,
    module=ASCEND_MODULE,
    upstream_class="NPUModelRunner",
    copy_floor=0.5,
    floor="0.13.0",
    source="vllm-omni==0.30.0",
    upstream="vllm-ascend==0.30.0rc2",
    patches="patches",
    generated="generated",
)

GPU = Platform(
    name=PlatformName.GPU,
    runners=OMNI_GPU_RUNNERS,
    classes=("OmniGPUModelRunner", "GPUARModelRunner", "GPUGenerationModelRunner"),
    layout=Layout.GPU,
    title="GPU",
    package="vllm_omni.worker",
    dist="vllm",
    member=VLLM_RUNNER,
    module="vllm.v1.worker.gpu_model_runner",
    upstream_class="GPUModelRunner",
    copy_floor=0.4,
    # vLLM-Omni's oldest release on PyPI (0.14.0) targets vLLM 0.14.
    floor="0.14.0",
    source="vllm-omni==0.32.0rc1",
    # vLLM 0.34.0 ships Model Runner V2 alone: 0.33.0 is the newest with the V1 runner.
    upstream="vllm==0.33.0",
    patches="patches/gpu",
    generated="generated/gpu",
)

GPU_V2 = Platform(
    name=PlatformName.GPU_V2,
    runners=OMNI_V2_RUNNERS,
    classes=("OmniGPUModelRunner", "OmniARModelRunner", "OmniGenerationModelRunner"),
    layout=Layout.GPU_V2,
    title="GPU Model Runner V2",
    package="vllm_omni.worker_v2",
    dist="vllm",
    member=VLLM_V2_RUNNER,
    module="vllm.v1.worker.gpu.model_runner",
    upstream_class="GPUModelRunner",
    copy_floor=0.4,
    floor="0.14.0",
    source="vllm-omni==0.32.0rc1",
    upstream="vllm==0.34.0",
    patches="patches/gpu-v2",
    generated="generated/gpu-v2",
)

#: Every platform by the name the configuration gives it.
PLATFORMS = {platform.name.value: platform for platform in (NPU, GPU, GPU_V2)}


def layout_onto(module: str) -> Layout:
    """The layout of runners generated onto the upstream module ``module`` (``Upstream.module``,
    which the platform's record sets): the GPU runners' on vLLM's runner, the NPU runners'
    on anything else (GPU blocks transplanted onto vllm-ascend are NPU runners all the same)."""
    return next((p.layout for p in PLATFORMS.values() if p.module == module), Layout.V1)


def other_modules(platform: Platform) -> str:
    """What a release of ``platform``'s upstream that lacks its module may still hold for
    another platform ("" when no other platform reads that distribution): vLLM 0.34.0 has
    no V1 runner for the GPU runners, and its V2 runner is the ``gpu-v2`` platform's."""
    others = [p for p in PLATFORMS.values() if p.dist == platform.dist and p is not platform]
    said = ", ".join(f"`--platform {p.name.value}` reads {p.member}" for p in others)
    return (
        f"vLLM-Omni's runners of another platform read another module of {platform.dist}: {said}"
        if others
        else ""
    )
