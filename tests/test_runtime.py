"""The runtime switch, on a small package tree written here (no vLLM anywhere)."""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent

import pytest

from omni_port import runtime

PACKAGE = "fakeomni.platforms.npu.worker"
ROOT = Path(__file__).resolve().parent.parent


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A hand-maintained runner package and a generated directory for it."""
    worker = tmp_path / "site" / "fakeomni" / "platforms" / "npu" / "worker"
    for parent in (
        "fakeomni",
        "fakeomni/platforms",
        "fakeomni/platforms/npu",
        PACKAGE.replace(".", "/"),
    ):
        _write(tmp_path / "site" / parent / "__init__.py", "")
    _write(worker / "npu_model_runner.py", 'class OmniNPUModelRunner:\n    origin = "hand"\n')
    _write(
        worker / "npu_ar_model_runner.py",
        f"""\
        from {PACKAGE}.npu_model_runner import OmniNPUModelRunner

        class NPUARModelRunner(OmniNPUModelRunner):
            origin = "hand"
        """,
    )
    _write(
        worker / "npu_ar_worker.py",
        f"""\
        from {PACKAGE}.npu_ar_model_runner import NPUARModelRunner

        class NPUARWorker:
            model_runner_cls = NPUARModelRunner
        """,
    )
    generated = tmp_path / "generated"
    _write(
        generated / "npu_model_runner.py", 'class OmniNPUModelRunner:\n    origin = "generated"\n'
    )
    _write(
        generated / "npu_ar_model_runner.py",
        f"""\
        from {PACKAGE}.npu_model_runner import OmniNPUModelRunner

        class NPUARModelRunner(OmniNPUModelRunner):
            origin = "generated"
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield generated
    runtime.stop_using_generated_runners()
    for name in [n for n in sys.modules if n == "fakeomni" or n.startswith("fakeomni.")]:
        del sys.modules[name]


def test_switch_before_the_workers_are_imported(tree: Path) -> None:
    redirected = runtime.use_generated_runners(tree, package=PACKAGE)
    assert redirected == [f"{PACKAGE}.npu_ar_model_runner", f"{PACKAGE}.npu_model_runner"]
    worker = importlib.import_module(f"{PACKAGE}.npu_ar_worker")
    runner = worker.NPUARWorker.model_runner_cls
    assert runner.origin == "generated"
    assert runner.__mro__[1].origin == "generated", "generated modules import each other"


def test_switch_after_the_workers_are_imported(tree: Path) -> None:
    worker = importlib.import_module(f"{PACKAGE}.npu_ar_worker")
    assert worker.NPUARWorker.model_runner_cls.origin == "hand"
    runtime.use_generated_runners(tree, package=PACKAGE)
    assert worker.NPUARWorker.model_runner_cls.origin == "generated"


def test_directory_from_the_environment(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(runtime.ENV, str(tree))
    redirected = runtime.use_generated_runners(package=PACKAGE)
    assert redirected == [f"{PACKAGE}.npu_ar_model_runner", f"{PACKAGE}.npu_model_runner"]
    worker = importlib.import_module(f"{PACKAGE}.npu_ar_worker")
    assert worker.NPUARWorker.model_runner_cls.origin == "generated"


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="omni-port sync"):
        runtime.use_generated_runners(tmp_path, package=PACKAGE)


def test_generated_package_imports_lazily_and_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "gen_pkg"
    package.mkdir()
    shutil.copy(ROOT / "generated" / "__init__.py", package / "__init__.py")
    (package / "npu_ar_model_runner.py").write_text("import vllm_ascend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("gen_pkg")
        assert set(module.__all__) == {
            "OmniNPUModelRunner",
            "NPUARModelRunner",
            "NPUGenerationModelRunner",
        }
        with pytest.raises(ImportError, match=r"vllm_omni|vllm_ascend"):
            module.NPUARModelRunner  # noqa: B018 - the access is the test
    finally:
        runtime.stop_using_generated_runners()
        sys.modules.pop("gen_pkg", None)


def test_a_v2_tree_stands_in_for_the_v2_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree of ``omni_*_model_runner.py`` modules is served as vLLM-Omni's worker_v2."""
    site = tmp_path / "site"
    package = site / "fakev2" / "worker_v2"
    for parent in ("fakev2", "fakev2/worker_v2"):
        _write(site / parent / "__init__.py", "")
    _write(package / "omni_model_runner.py", 'class OmniGPUModelRunner:\n    origin = "gpu"\n')
    generated = tmp_path / "v2"
    _write(generated / "omni_model_runner.py", 'class OmniGPUModelRunner:\n    origin = "npu"\n')
    _write(
        generated / "omni_generation_model_runner.py",
        """\
        from fakev2.worker_v2.omni_model_runner import OmniGPUModelRunner

        class OmniGenerationModelRunner(OmniGPUModelRunner):
            pass
        """,
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        assert runtime._layout(generated)[0] == runtime.V2_PACKAGE
        redirected = runtime.use_generated_runners(generated, package="fakev2.worker_v2")
        assert redirected == [
            "fakev2.worker_v2.omni_generation_model_runner",
            "fakev2.worker_v2.omni_model_runner",
        ]
        module = importlib.import_module("fakev2.worker_v2.omni_generation_model_runner")
        assert module.OmniGenerationModelRunner.origin == "npu"
    finally:
        runtime.stop_using_generated_runners()
        for name in [n for n in sys.modules if n == "fakev2" or n.startswith("fakev2.")]:
            del sys.modules[name]
