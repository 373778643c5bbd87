"""How a vLLM-Omni stage asks for Model Runner V2 on the NPU, and what its worker does then.

vLLM-Omni selects the runner per stage: a deploy config's ``model_runner: v2`` becomes the
stage's ``model_config.use_v2_model_runner``, which its workers, schedulers and models read
(its schedulers ignore vLLM's own ``use_v2_model_runner``). vllm-ascend runs Model Runner V2
only with ``VLLM_USE_V2_MODEL_RUNNER=1`` in the process: its ``use_v2_model_runner`` reads
that variable alone, and its forward context keeps V2's extra attributes elsewhere when it
is set. The two must agree in a worker:

- the stage asks for V2 and the variable is unset: V2, and the variable is set in the
  worker before the runner is built (vLLM caches its variables only after the model loads);
- the stage asks for V2 and the variable says 0, or the stage asks for V1 and the variable
  says 1: refused (``StageConflict``), naming both. A V2 runner behind V1-mode schedulers,
  or a V1 runner under vllm-ascend's V2 forward context, breaks at the first step.

A config without vLLM-Omni's stage field (plain vLLM) selects by ``use_v2_model_runner``.

The worker then says what it runs (``use_v2_model_runner``, which vllm-ascend's worker reads
to pool, to stop pipeline-parallel sends and to zero KV blocks), and a generation worker
runs the model in its warm-up as vLLM-Omni's GPU generation worker does for V2:
``profile_run`` alone (the NPU worker's warm-up runs ``_dummy_run(size)``, whose sampler
step indexes the generation runner's one-element placeholder hidden states), while the
rest of the NPU worker's warm-up runs as it is. Nothing here imports vLLM.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from omni_port.v2 import conditions
from omni_port.v2.conditions import Condition

#: The variable vllm-ascend reads to run Model Runner V2.
ENV = "VLLM_USE_V2_MODEL_RUNNER"
#: Marks a worker method the switch wrapped (so switching again does not wrap it twice).
WRAPPED = "__omni_port_wrapped__"


class StageConflict(RuntimeError):
    """A stage's runner choice and the process's VLLM_USE_V2_MODEL_RUNNER disagree."""


class Unsupported(RuntimeError):
    """A configuration the composed V2 runners cannot run: refused when a worker builds one."""


def refuse_unsupported(vllm_config: object, required: Iterable[Condition] = ()) -> None:
    """Raise Unsupported for a configuration the composed V2 runners get wrong.

    310P (or any hardware whose vllm-ascend profile runs another worker than the A2/A3
    ``NPUWorker``): vllm-ascend builds ``NPUModelRunner310V2`` there, not the runner the
    generated classes derive from.

    Decode context parallelism (DCP > 1): omni's V2 ``execute_model`` is a copy of an older
    vLLM's and never sets ``input_batch.dcp_local_seq_lens``, which vllm-ascend's
    ``prepare_inputs`` leaves to vLLM's ``execute_model``; Ascend's MLA context-parallel path
    then asserts mid-step. And every condition the tree's reviewed decisions require
    (``required``, from its lock) that the stage's configuration breaks. Refusing at
    start-up names the stage and the way out."""
    other = _other_worker()
    if other:
        raise Unsupported(
            f"{_stage(vllm_config)} selects model_runner v2 on hardware where vllm-ascend "
            f"runs {other} (310P: NPUWorker310, which builds NPUModelRunner310V2 with its own "
            "inputs, KV allocation, sampling and model states), while the generated V2 "
            "runners are composed with vllm-ascend's A2/A3 NPUModelRunner: select "
            "model_runner v1 for this stage"
        )
    for condition in sorted(required):
        setting = conditions.broken(condition, vllm_config)
        if setting:
            raise Unsupported(
                f"{_stage(vllm_config)} selects model_runner v2 with {setting} set: the "
                f"generated V2 runners keep omni's code where a reviewed decision requires "
                f"{condition} (see the allow-list entries of the tree's lock): select "
                "model_runner v1 for this stage, or turn that setting off"
            )
    parallel = getattr(vllm_config, "parallel_config", None)
    dcp = getattr(parallel, "decode_context_parallel_size", 1) or 1
    if dcp > 1:
        raise Unsupported(
            f"{_stage(vllm_config)} selects model_runner v2 with "
            f"decode_context_parallel_size={dcp}: the generated V2 runners do not fill "
            "input_batch.dcp_local_seq_lens (omni's execute_model predates it), which "
            "vllm-ascend's context-parallel attention needs: select model_runner v1 for this "
            "stage, or run it without decode context parallelism"
        )


#: vllm-ascend's hardware profile (0.30: the worker class each device family runs), and
#: the worker of the A2/A3 family, whose V2 runner the generated runners are composed with.
HARDWARE_PROFILE = "vllm_ascend.device.hardware_profile"
NPU_WORKER = "vllm_ascend.worker.worker.NPUWorker"


def _other_worker() -> str:
    """The worker class vllm-ascend's hardware profile names when it is not the A2/A3 one
    (310P's), "" when it is or when this vllm-ascend has no such profile (the lock's pins
    then name the vllm-ascend the tree was generated from)."""
    try:
        profiles = importlib.import_module(HARDWARE_PROFILE)
    except ImportError:
        return ""
    profile = profiles.get_current_hardware_profile()
    worker = str(getattr(profile, "default_worker_cls", NPU_WORKER))
    return "" if worker == NPU_WORKER else worker


def process_flag() -> bool | None:
    """``VLLM_USE_V2_MODEL_RUNNER`` as vLLM reads it (None when unset)."""
    value = os.environ.get(ENV)
    if value is None or value.strip() == "":
        return None
    try:
        return bool(int(value))
    except ValueError:
        return value.strip().lower() in ("true", "yes", "on")


def stage_flag(vllm_config: object) -> bool | None:
    """The stage's own choice (``model_config.use_v2_model_runner``), None when the config
    has no such field (not vLLM-Omni's)."""
    model_config = getattr(vllm_config, "model_config", None)
    value = getattr(model_config, "use_v2_model_runner", None)
    return None if value is None else bool(value)


def selects_v2(vllm_config: object) -> bool:
    """Whether a worker of this stage builds the V2 runner; raises StageConflict when the
    stage and VLLM_USE_V2_MODEL_RUNNER disagree."""
    stage = stage_flag(vllm_config)
    if stage is None:
        return bool(getattr(vllm_config, "use_v2_model_runner", False))
    process = process_flag()
    if stage and process is False:
        raise StageConflict(
            f"{_stage(vllm_config)} selects model_runner v2 (its deploy config), but "
            f"{ENV}={os.environ.get(ENV)} keeps vllm-ascend on Model Runner V1: unset {ENV} "
            "(the stage sets it), or select model_runner v1"
        )
    if not stage and process is True:
        raise StageConflict(
            f"{ENV}={os.environ.get(ENV)} puts vllm-ascend on Model Runner V2, but "
            f"{_stage(vllm_config)} selects model_runner v1 (its deploy config), which "
            "vLLM-Omni's schedulers follow: select `model_runner: v2` in the deploy config, "
            f"or unset {ENV}"
        )
    return stage


def agree(v2: bool) -> None:
    """Make vllm-ascend run the runner the stage selected: set the variable when unset."""
    if v2 and process_flag() is None:
        os.environ[ENV] = "1"


def _stage(vllm_config: object) -> str:
    model_config = getattr(vllm_config, "model_config", None)
    stage = getattr(model_config, "stage_id", None)
    return f"stage {stage}" if stage is not None else "this stage"


# --- the worker -----------------------------------------------------------------------------


def wrap_once(
    cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> None:
    """Replace ``cls.name`` by ``make(original)``, unless the switch already did."""
    original = getattr(cls, name, None)
    if original is None or getattr(original, WRAPPED, False):
        return
    wrapped = functools.wraps(original)(make(original))
    setattr(wrapped, WRAPPED, True)
    setattr(cls, name, wrapped)


def with_v2_flag(original: Callable[..., Any]) -> Callable[..., Any]:
    """``init_device`` that leaves the worker's ``use_v2_model_runner`` saying which runner
    it built (vllm-ascend's worker set it from the variable alone, before the stage chose)."""

    def init_device(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        self.use_v2_model_runner = selects_v2(self.vllm_config)
        return result

    return init_device


#: The runner methods ``NPUWorker.compile_or_warm_up_model`` calls that run the model: a
#: generation V2 worker runs ``profile_run`` in their stead (checked against vllm-ascend's
#: worker by verify: ``omni_port.v2.ascend.WarmUp``).
MODEL_STEPS = ("_dummy_run", "capture_model")


def generation_warm_up(original: Callable[..., Any]) -> Callable[..., Any]:
    """``compile_or_warm_up_model`` of a generation worker: with the V2 runner, its
    ``profile_run`` (vLLM-Omni's GPU generation worker warms up with it alone), then the
    worker's own warm-up with the steps that run the model (``MODEL_STEPS``) skipped, so that
    every other step stays (vllm-ascend's Triton kernel and ATB warm-ups, the CPU binding,
    the seed reset); without the V2 runner, the worker's own."""

    def compile_or_warm_up_model(self: Any) -> Any:
        if not getattr(self, "use_v2_model_runner", False):
            return original(self)
        runner = self.model_runner
        runner.profile_run()
        with _skipped(runner, MODEL_STEPS):
            return original(self)

    return compile_or_warm_up_model


@contextlib.contextmanager
def _skipped(runner: object, names: tuple[str, ...]) -> Iterator[None]:
    """The runner's ``names`` do nothing meanwhile (instance attributes over its methods;
    ``capture_model`` then captures no graph memory: 0 bytes)."""
    for name in names:
        setattr(runner, name, _nothing)
    try:
        yield
    finally:
        for name in names:
            vars(runner).pop(name, None)


def _nothing(*args: object, **kwargs: object) -> int:
    return 0
