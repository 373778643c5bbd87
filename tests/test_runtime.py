"""The runtime switch, on a small package tree written here (no vLLM anywhere)."""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent

import pytest

from omni_port import runtime
from omni_port.model import Layout, Placement, Status
from omni_port.patches import lockfile
from tests.conftest import conflict_region

PACKAGE = "fakeomni.platforms.npu.worker"
ROOT = Path(__file__).resolve().parent.parent


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))


#: The runner base class of the fake trees: it takes what a worker passes it.
RUNNER_BASE = """\
class OmniNPUModelRunner:
    origin = "{origin}"

    def __init__(self, *args):
        self.args = args
"""
#: The vllm-ascend file the fake runners were "generated from" (installed in the fake site).
UPSTREAM = b"class NPUModelRunner:\n    pass\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _installed(site: Path, dist: str, version: str) -> None:
    """The metadata pip leaves for an installed distribution (read, never imported)."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    _write(info / "METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


def _deployable(
    generated: Path,
    conflicts: tuple[str, ...] = (),
    layout: Layout = Layout.V1,
    upstream: tuple[str, bytes] = ("vllm-ascend==9.9.9", UPSTREAM),
) -> None:
    """A lock naming the modules and the upstream (its label and the file's bytes), and a
    clean verdict of that lock, as `omni-port sync` and `omni-port verify` would leave them."""
    outputs = {p.name: _sha(p.read_bytes()) for p in sorted(generated.glob("*.py"))}
    rows = [
        Placement(block, "npu_ar_model_runner.py", "R", "m", "insertion", True, Status.CONFLICT, 0)
        for block in conflicts
    ]
    lock = lockfile.Lock(
        "omni-port test",
        upstream[0],
        _sha(upstream[1]),
        "0" * 64,
        outputs,
        "sync",
        lockfile.rows(rows),
        layout=layout,
    )
    (generated / lockfile.LOCK_NAME).write_text(lockfile.render(lock))
    _verified(generated)


def _verified(generated: Path, problems: tuple[str, ...] = ()) -> None:
    digest = _sha((generated / lockfile.LOCK_NAME).read_bytes())
    verdict = lockfile.render_verdict(lockfile.Verdict(digest, problems))
    (generated / lockfile.VERDICT_NAME).write_text(verdict)


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch exports its choice: give it back after each test."""
    for name in (runtime.ENV, runtime.OVERRIDE_ENV, runtime.PACKAGE_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


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
    _write(worker / "npu_model_runner.py", RUNNER_BASE.format(origin="hand"))
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
    _write(generated / "npu_model_runner.py", RUNNER_BASE.format(origin="generated"))
    _write(
        generated / "npu_ar_model_runner.py",
        f"""\
        from {PACKAGE}.npu_model_runner import OmniNPUModelRunner

        class NPUARModelRunner(OmniNPUModelRunner):
            origin = "generated"
        """,
    )
    _write(
        worker / "npu_generation_worker.py",
        f"""\
        from {PACKAGE}.npu_ar_model_runner import NPUARModelRunner

        def make_runner():
            return NPUARModelRunner()
        """,
    )
    upstream = tmp_path / "site" / "vllm_ascend" / "worker" / "model_runner_v1.py"
    upstream.parent.mkdir(parents=True)
    upstream.write_bytes(UPSTREAM)
    (upstream.parent.parent / "__init__.py").write_text("raise ImportError('never imported')\n")
    _deployable(generated)
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


def test_a_worker_that_imported_the_class_by_name_gets_the_generated_one(tree: Path) -> None:
    worker = importlib.import_module(f"{PACKAGE}.npu_generation_worker")
    assert worker.make_runner().origin == "hand"
    runtime.use_generated_runners(tree, package=PACKAGE)
    assert worker.make_runner().origin == "generated"


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
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "gen_pkg"
    package.mkdir()
    shutil.copy(ROOT / "generated" / "__init__.py", package / "__init__.py")
    (package / "npu_ar_model_runner.py").write_text("import torch_npu\n")
    _deployable(package)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("gen_pkg")
        assert set(module.__all__) == {
            "OmniNPUModelRunner",
            "NPUARModelRunner",
            "NPUGenerationModelRunner",
        }
        with pytest.raises(ImportError, match=r"vllm_omni|torch_npu"):
            module.NPUARModelRunner  # noqa: B018 - the access is the test
    finally:
        runtime.stop_using_generated_runners()
        sys.modules.pop("gen_pkg", None)


def test_the_generated_package_exports_the_v2_runners_beside_a_v2_tree(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sync` writes the configured V2 tree into generated/v2: the package exports its
    composed runners too, lazily, from vLLM-Omni's V2 package."""
    package = tmp_path / "gen_pkg_v2"
    (package / "v2").mkdir(parents=True)
    shutil.copy(ROOT / "generated" / "__init__.py", package / "__init__.py")
    (package / "npu_ar_model_runner.py").write_text("import torch_npu\n")
    (package / "v2" / "omni_ar_model_runner.py").write_text("import vllm_ascend_v2_missing\n")
    upstream = tree.parent / "site" / "vllm_ascend" / "worker" / "v2" / "model_runner.py"
    upstream.parent.mkdir(parents=True)
    upstream.write_bytes(UPSTREAM)
    _installed(tree.parent / "site", "vllm-ascend", "9.9.9")
    _deployable(package)
    _deployable(package / "v2", layout=Layout.V2)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("gen_pkg_v2")
        assert set(module.__all__) == {
            "OmniNPUModelRunner",
            "NPUARModelRunner",
            "NPUGenerationModelRunner",
            "OmniGPUModelRunner",
            "OmniARModelRunner",
            "OmniGenerationModelRunner",
        }
        with pytest.raises(ImportError, match=r"vllm_omni|vllm_ascend_v2_missing"):
            module.OmniARModelRunner  # noqa: B018 - the access is the test
    finally:
        runtime.stop_using_generated_runners()
        sys.modules.pop("gen_pkg_v2", None)


def test_the_generated_package_refuses_what_is_not_deployable(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "gen_pkg2"
    package.mkdir()
    shutil.copy(ROOT / "generated" / "__init__.py", package / "__init__.py")
    (package / "npu_ar_model_runner.py").write_text("import torch_npu\n")
    _deployable(package, conflicts=("npu_ar_model_runner.R.m.block-01",))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("gen_pkg2")
        with pytest.raises(runtime.NotDeployable, match="1 conflicts"):
            module.NPUARModelRunner  # noqa: B018 - the access is the test
    finally:
        runtime.stop_using_generated_runners()
        sys.modules.pop("gen_pkg2", None)


# --- what the switch refuses ------------------------------------------------------------------


def _refused(tree: Path) -> str:
    with pytest.raises(runtime.NotDeployable) as refused:
        runtime.use_generated_runners(tree, package=PACKAGE)
    assert not any(isinstance(f, runtime.GeneratedRunnerFinder) for f in sys.meta_path)
    assert runtime.ENV not in os.environ, "a refused choice is not exported"
    return str(refused.value)


def test_a_lock_with_conflicts_is_refused(tree: Path) -> None:
    _deployable(tree, conflicts=("npu_ar_model_runner.R.m.block-01", "npu_ar.R.n.edit-02"))
    message = _refused(tree)
    assert "2 conflicts" in message and "npu_ar_model_runner.R.m.block-01" in message
    assert "omni-port resolve" in message


def test_a_conflict_whose_region_lists_no_candidate_is_not_sent_to_a_rank(tree: Path) -> None:
    """`--at '#K'` names a candidate the region lists: one that lists none says the routes
    that need none."""
    ranked, unlisted = "npu_ar_model_runner.R.m.block-01", "npu_ar_model_runner.R.m.block-02"
    runner = tree / "npu_ar_model_runner.py"
    runner.write_text(
        runner.read_text() + conflict_region(ranked, 2) + conflict_region(unlisted, 0)
    )
    _deployable(tree, conflicts=(ranked, unlisted))
    message = _refused(tree)
    assert f"record {ranked} with `omni-port resolve BLOCK --at '#K'`" in message
    said = message.split(f"{unlisted} list no candidate place: ", 1)[1]
    assert "`omni-port continue`" in said and "--drop" in said and "#K" not in said


def test_runners_verify_has_not_passed_are_refused(tree: Path) -> None:
    (tree / lockfile.VERDICT_NAME).unlink()
    assert "not verified since the last sync" in _refused(tree)
    _verified(tree, problems=("generated/x.py:3:1: OP502 undefined name `h`",))
    assert "1 verify problems (the first: generated/x.py:3:1: OP502" in _refused(tree)
    _verified(tree)
    lock = tree / lockfile.LOCK_NAME
    lock.write_text(lock.read_text().replace('"sync"', '"sync --again"'))
    assert "not verified since the last sync" in _refused(tree), "a stale verdict"


def test_a_module_edited_after_sync_is_refused(tree: Path) -> None:
    runner = tree / "npu_model_runner.py"
    runner.write_text(runner.read_text() + "# edited\n")
    assert (
        "npu_model_runner.py was edited since sync wrote it: take the edit with "
        "`omni-port continue`" in _refused(tree)
    )


def test_another_installed_vllm_ascend_is_refused(tree: Path) -> None:
    spec = importlib.util.find_spec("vllm_ascend")
    assert spec is not None and spec.submodule_search_locations
    upstream = Path(next(iter(spec.submodule_search_locations))) / "worker" / "model_runner_v1.py"
    upstream.write_bytes(UPSTREAM + b"# another release\n")
    assert "is not the one the runners were generated from (vllm-ascend==9.9.9)" in _refused(tree)
    shutil.rmtree(upstream.parent.parent)
    importlib.invalidate_caches()
    assert "vllm-ascend is not installed" in _refused(tree)
    assert "vllm_ascend" not in sys.modules, "found, never imported"


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_override_runs_them_and_says_so(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    _deployable(tree, conflicts=("npu_ar_model_runner.R.m.block-01",))
    if how == "environment":
        monkeypatch.setenv(runtime.OVERRIDE_ENV, "1")
    with pytest.warns(RuntimeWarning, match="NOT deployable"):
        runtime.use_generated_runners(tree, package=PACKAGE, allow_unresolved=how == "argument")
    assert "WARNING" in capsys.readouterr().err
    assert os.environ[runtime.OVERRIDE_ENV] == "1", "spawned workers inherit the override"
    worker = importlib.import_module(f"{PACKAGE}.npu_ar_worker")
    assert worker.NPUARWorker.model_runner_cls.origin == "generated"


# --- spawned workers ------------------------------------------------------------------------

LAUNCHER = """\
import multiprocessing
import os

from omni_port import runtime


def worker(queue):
    # What vLLM does first in every process it starts: load its general plugins.
    if {plugin}:
        runtime.vllm_plugin()
    module = __import__("{package}.npu_generation_worker", fromlist=["make_runner"])
    queue.put((module.make_runner().origin, os.environ.get(runtime.ENV, "")))


if __name__ == "__main__":
    runtime.use_generated_runners({generated!r}, package="{package}")
"""
#: The rest of a launcher's main block: start one worker by ``spawn``, print what it puts.
SPAWN = """\
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=worker, args=(queue,))
    process.start()
    print(*queue.get())
    process.join()
"""
LAUNCHER += SPAWN


@pytest.mark.parametrize(("plugin", "origin"), [(True, "generated"), (False, "hand")])
def test_the_choice_reaches_spawned_workers_through_the_environment(
    tree: Path, tmp_path: Path, plugin: bool, origin: str
) -> None:
    """A launcher switches under ``if __name__ == "__main__":``; its spawned worker does
    not run that block, and gets the generated runners only through the environment (the
    plugin vLLM loads in every process). Without it, the stock runners: the gap this shows."""
    script = tmp_path / "launcher.py"
    script.write_text(LAUNCHER.format(plugin=plugin, package=PACKAGE, generated=str(tree)))
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    got, exported = result.stdout.split()
    assert (got, exported) == (origin, str(tree))


def test_the_plugin_does_nothing_without_the_variable(tree: Path) -> None:
    runtime.vllm_plugin()
    assert not any(isinstance(f, runtime.GeneratedRunnerFinder) for f in sys.meta_path)


def test_the_plugin_is_declared_for_vllm() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    plugins = project["entry-points"]["vllm.general_plugins"]
    assert plugins == {"omni_port_generated_runners": "omni_port.runtime:vllm_plugin"}
    module, _, function = plugins["omni_port_generated_runners"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))


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
    upstream = site / "vllm_ascend" / "worker" / "v2" / "model_runner.py"
    upstream.parent.mkdir(parents=True)
    upstream.write_bytes(UPSTREAM)
    _installed(site, "vllm-ascend", "9.9.9")
    _deployable(generated, layout=Layout.V2)
    monkeypatch.syspath_prepend(str(site))
    try:
        assert runtime.layout_of(generated)[1].package == runtime.V2_PACKAGE
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


# --- a switch that cannot check refuses -------------------------------------------------------


def test_no_lock_is_refused_saying_which_command_makes_one(tree: Path) -> None:
    (tree / lockfile.LOCK_NAME).unlink()
    message = _refused(tree)
    assert lockfile.LOCK_NAME in message and "make sync" in message


def test_a_broken_lock_is_refused_saying_what_is_wrong(tree: Path) -> None:
    (tree / lockfile.LOCK_NAME).write_text('{"tool": "omni-port"}\n')
    message = _refused(tree)
    assert "'inputs' is missing" in message and "make sync" in message


def test_a_runner_module_the_lock_does_not_list_is_refused(tree: Path) -> None:
    """A module dropped beside the generated ones was never checked: never served."""
    (tree / "npu_generation_model_runner.py").write_text("class NPUGenerationModelRunner: ...\n")
    message = _refused(tree)
    assert "npu_generation_model_runner.py is not in omni-port.lock" in message


def test_an_empty_directory_names_the_command_that_fills_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make sync"):
        runtime.use_generated_runners(tmp_path, package=PACKAGE)


# --- V1 and V2 side by side -----------------------------------------------------------------

V2_PACKAGE = "fakeomni.worker_v2"


class _Config:
    """The one field of a vllm_config the selector reads."""

    def __init__(self, v2: bool) -> None:
        self.use_v2_model_runner = v2


@pytest.fixture
def both(tree: Path) -> Path:
    """A V2 tree in ``generated/v2`` beside the V1 tree, and vLLM-Omni's V2 package."""
    site = tree.parent / "site"
    _write(site / "fakeomni" / "worker_v2" / "__init__.py", "")
    _write(
        site / "fakeomni" / "worker_v2" / "omni_ar_model_runner.py",
        'class OmniARModelRunner:\n    origin = "gpu-v2"\n',
    )
    v2 = tree / "v2"
    _write(
        v2 / "omni_ar_model_runner.py",
        """\
        class OmniARModelRunner:
            origin = "npu-v2"

            def __init__(self, vllm_config, device):
                self.device = device
        """,
    )
    upstream = site / "vllm_ascend" / "worker" / "v2" / "model_runner.py"
    upstream.parent.mkdir(parents=True)
    upstream.write_bytes(UPSTREAM)
    _installed(site, "vllm-ascend", "9.9.9")
    _deployable(v2, layout=Layout.V2)
    return tree


def _ar_worker() -> type:
    module = importlib.import_module(f"{PACKAGE}.npu_ar_worker")
    worker = module.NPUARWorker
    assert isinstance(worker, type)
    return worker


@pytest.mark.parametrize("imported_first", [False, True])
def test_v1_and_v2_trees_are_served_side_by_side(both: Path, imported_first: bool) -> None:
    if imported_first:
        _ar_worker()
    redirected = runtime.use_generated_runners(both, package=PACKAGE)
    assert f"{V2_PACKAGE}.omni_ar_model_runner" in redirected
    assert f"{PACKAGE}.npu_ar_model_runner" in redirected
    worker = _ar_worker()
    v2 = worker.model_runner_cls(_Config(v2=True), "npu:0")
    assert (v2.origin, v2.device) == ("npu-v2", "npu:0"), "the composed V2 runner"
    v1 = worker.model_runner_cls(_Config(v2=False), "npu:0")
    assert v1.origin == "generated", "the generated V1 runner otherwise"


def test_a_v2_tree_alone_still_selects_for_the_stock_workers(both: Path) -> None:
    runtime.use_generated_runners(both / "v2", package=V2_PACKAGE)
    worker = _ar_worker()
    assert worker.model_runner_cls(_Config(v2=True), "npu:0").origin == "npu-v2"
    assert worker.model_runner_cls(_Config(v2=False), "npu:0").origin == "hand"


def test_switching_again_selects_once(both: Path) -> None:
    runtime.use_generated_runners(both, package=PACKAGE)
    runtime.use_generated_runners(both, package=PACKAGE)
    selector = _ar_worker().model_runner_cls
    assert selector.v1_runner.origin == "generated", "not a selector around a selector"


def test_a_v2_tree_that_is_not_deployable_refuses_both(both: Path) -> None:
    _deployable(both / "v2", conflicts=("omni_ar_model_runner.R.m",), layout=Layout.V2)
    message = _refused(both)
    assert "v2/: 1 conflicts marked in the modules (omni_ar_model_runner.R.m)" in message
    assert "--v2-allow" in message
    assert "commented out" not in message and "omni-port resolve" not in message
