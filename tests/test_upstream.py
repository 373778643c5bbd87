"""Locating sources: specs, the wheel cache, unsafe wheels, installed packages never imported."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.sources import upstream
from omni_port.sources.upstream import Spec, SpecKind, parse_spec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("installed", Spec(SpecKind.INSTALLED, "vllm-ascend"), id="installed"),
        pytest.param(
            "vllm-ascend==0.23.0", Spec(SpecKind.PYPI, "vllm-ascend", "0.23.0"), id="pinned"
        ),
        pytest.param("0.26.0rc1", Spec(SpecKind.PYPI, "vllm-ascend", "0.26.0rc1"), id="bare-rc"),
        pytest.param(
            "0.23.0.post1", Spec(SpecKind.PYPI, "vllm-ascend", "0.23.0.post1"), id="bare-post"
        ),
        pytest.param(
            "src/model_runner_v1.py",
            Spec(SpecKind.PATH, "vllm-ascend", path="src/model_runner_v1.py"),
            id="path",
        ),
    ],
)
def test_parse_spec(text: str, expected: Spec) -> None:
    assert parse_spec(text, "vllm-ascend") == expected


def test_nearest_wheel_is_named_for_an_sdist_only_release() -> None:
    output = (
        "ERROR: Could not find a version that satisfies the requirement vllm-ascend==0.23.0.post1 "
        "(from versions: 0.18.0, 0.22.1rc1, 0.23.0rc1, 0.23.0, 0.24.0rc1)\n"
        "ERROR: No matching distribution found for vllm-ascend==0.23.0.post1\n"
    )
    message = upstream._no_wheel_message("vllm-ascend", "0.23.0.post1", output, ["0.23.0.post1"])
    assert "sdist" in message and "vllm-ascend==0.23.0;" in message


def test_an_index_that_lists_nothing_is_not_called_an_sdist_only_release() -> None:
    output = (
        "ERROR: Could not find a version that satisfies the requirement vllm==0.23.0 "
        "(from versions: none)\nERROR: No matching distribution found for vllm==0.23.0\n"
    )
    message = upstream._no_wheel_message("vllm", "0.23.0", output)
    assert "offline" in message and "of vllm" in message
    assert "sdist" not in message and "==none" not in message


def test_version_order_puts_release_candidates_first() -> None:
    ordered = sorted(["0.23.0", "0.23.0rc1", "0.22.1rc1", "0.23.0.post1"], key=upstream.version_key)
    assert ordered == ["0.22.1rc1", "0.23.0rc1", "0.23.0", "0.23.0.post1"]


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../evil.py", "/etc/passwd", "pkg/../../x.py"])
def test_unsafe_member_names_are_refused(tmp_path: Path, name: str) -> None:
    wheel = _wheel(tmp_path / "w.whl", {name: b"x = 1\n", "pkg/ok.py": b"y = 2\n"})
    with pytest.raises(BadInput) as error:
        upstream.python_members(wheel, "pkg")
    assert error.value.findings[0].code.value == "OP003"
    with pytest.raises(BadInput):
        upstream.read_member(wheel, name)


def test_cached_wheel_is_reused_without_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "wheels" / "vllm-ascend-9.9.9"
    folder.mkdir(parents=True)
    _wheel(folder / "vllm_ascend-9.9.9-py3-none-any.whl", {upstream.ASCEND_RUNNER: b"A = 1\n"})

    def no_pip(*args: object, **kwargs: object) -> None:
        raise AssertionError("pip must not run for a cached wheel")

    monkeypatch.setattr(subprocess, "run", no_pip)
    located = upstream.locate(
        Spec(SpecKind.PYPI, "vllm-ascend", "9.9.9"), upstream.ASCEND_RUNNER, tmp_path
    )
    assert located.source.text == "A = 1\n"
    assert located.source.path == f"vllm-ascend==9.9.9/{upstream.ASCEND_RUNNER}"


def test_download_failure_is_retried_then_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, "", "ERROR: connection reset\n")

    monkeypatch.setattr(subprocess, "run", failing)
    monkeypatch.setattr(upstream.time, "sleep", lambda seconds: None)
    with pytest.raises(BadInput) as error:
        upstream.fetch_wheel("vllm-ascend", "9.9.9", tmp_path)
    assert len(calls) == 3
    assert "after 3 attempts" in error.value.findings[0].message
    assert not (tmp_path / "wheels" / "vllm-ascend-9.9.9").exists()


def test_installed_package_is_found_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "tripwire_pkg"
    (package / "worker").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    (package / "worker" / "runner.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    located = upstream.locate(
        Spec(SpecKind.INSTALLED, "tripwire-pkg"), "tripwire_pkg/worker/runner.py", tmp_path
    )
    assert located.source.text == "VALUE = 1\n"
    assert "tripwire_pkg" not in sys.modules


def test_path_spec_accepts_a_file_or_a_tree(tmp_path: Path) -> None:
    member = tmp_path / upstream.ASCEND_RUNNER
    member.parent.mkdir(parents=True)
    member.write_text("B = 2\n")
    for given in (member, tmp_path):
        located = upstream.locate(
            Spec(SpecKind.PATH, "vllm-ascend", path=str(given)), upstream.ASCEND_RUNNER, tmp_path
        )
        assert located.source.text == "B = 2\n"


@pytest.mark.real
@pytest.mark.parametrize(
    ("version", "says", "never"),
    [
        pytest.param("9.9.9", "does not exist", "sdist", id="no-such-release"),
        pytest.param("0.23.0.post1", "sdist-only", "does not exist", id="sdist-only"),
    ],
)
def test_a_release_without_a_wheel_is_explained(
    cache_dir: Path, version: str, says: str, never: str
) -> None:
    with pytest.raises(BadInput) as error:
        upstream.fetch_wheel("vllm-ascend", version, cache_dir)
    message = error.value.findings[0].message
    assert says in message and never not in message, message
    assert "nearest release with a wheel: vllm-ascend==0." in message


def test_a_checkout_gives_each_npu_runner_the_gpu_runner_beside_it(tmp_path: Path) -> None:
    for member in (*upstream.OMNI_RUNNERS, upstream.OMNI_GPU_RUNNERS[2]):
        path = tmp_path / member
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {Path(member).name}\n")
    located = upstream.locate_runners(str(tmp_path), tmp_path / "cache")
    counterparts = {
        Path(r.member).name: r.counterpart.text if r.counterpart else None for r in located
    }
    assert counterparts == {
        "npu_model_runner.py": None,
        "npu_ar_model_runner.py": None,
        "npu_generation_model_runner.py": "# gpu_generation_model_runner.py\n",
    }
    # A single runner file has nothing beside it to pair with.
    (single,) = upstream.locate_runners(str(tmp_path / upstream.OMNI_RUNNERS[2]), tmp_path)
    assert single.counterpart is None
