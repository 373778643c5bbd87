"""Locating sources: specs, the wheel cache, unsafe wheels, installed packages never imported."""

from __future__ import annotations

import hashlib
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.sources import index, upstream
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


PINS_GONE_WRONG = [
    "vllm-ascend===0.30.0",
    "vllm-ascend>=0.26",
    "vllm-ascend~=0.30",
    "vllm-ascend==",
    "vllm-ascend==notaversion",
    "vllm-ascend=0.30.0",
    "vllm-ascend >= 0.26",
]


@pytest.mark.parametrize("text", PINS_GONE_WRONG)
def test_a_pin_gone_wrong_is_a_bad_option_not_a_missing_path(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput) as error:
        parse_spec(text, "vllm-ascend")
    finding = error.value.findings[0]
    assert (finding.code.value, finding.path) == ("OP005", text)


@pytest.mark.parametrize("text", PINS_GONE_WRONG)
def test_a_path_that_exists_is_a_path_whatever_its_name(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / text).mkdir()
    assert parse_spec(text, "vllm-ascend") == Spec(SpecKind.PATH, "vllm-ascend", path=text)


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


def test_a_kept_archive_is_reused_without_asking_the_index(tmp_path: Path) -> None:
    """The suite's index cannot be reached: a kept archive with its sha256 is enough."""
    folder = tmp_path / "archives" / "vllm-ascend-9.9.9"
    folder.mkdir(parents=True)
    wheel = _wheel(
        folder / "vllm_ascend-9.9.9-py3-none-any.whl", {upstream.ASCEND_RUNNER: b"A = 1\n"}
    )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (folder / (wheel.name + upstream.DIGEST_SUFFIX)).write_text(digest + "\n")
    located = upstream.locate(
        Spec(SpecKind.PYPI, "vllm-ascend", "9.9.9"), upstream.ASCEND_RUNNER, tmp_path
    )
    assert located.source.text == "A = 1\n"
    assert located.source.path == f"vllm-ascend==9.9.9/{upstream.ASCEND_RUNNER}"


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
def test_a_release_that_does_not_exist_names_the_nearest_releases(cache_dir: Path) -> None:
    with pytest.raises(BadInput) as error:
        upstream.fetch_archive("vllm-ascend", "0.27.0", cache_dir)
    message = error.value.findings[0].message
    assert "vllm-ascend==0.27.0 does not exist" in message, message
    assert "vllm-ascend==0.26.0rc1 (wheel), vllm-ascend==0.27.1rc1 (sdist)" in message


@pytest.mark.real
def test_an_sdist_only_release_is_read_as_its_archive_holds_it(cache_dir: Path) -> None:
    """vllm-ascend 0.30.0rc2 is on PyPI as an sdist only."""
    spec = Spec(SpecKind.PYPI, "vllm-ascend", "0.30.0rc2")
    located = upstream.locate(spec, upstream.ASCEND_RUNNER, cache_dir)
    archive = upstream.fetch_archive(spec.dist, spec.version, cache_dir)
    assert archive.name == "vllm_ascend-0.30.0rc2.tar.gz"
    listed = index.artifacts("vllm-ascend", index.pip_config())
    (artifact,) = [a for a in listed if a.filename == archive.name]
    assert ("sha256", hashlib.sha256(archive.read_bytes()).hexdigest()) in artifact.hashes
    with tarfile.open(archive) as opened:
        handle = opened.extractfile(f"vllm_ascend-0.30.0rc2/{upstream.ASCEND_RUNNER}")
        assert handle is not None
        member = handle.read()
    assert located.source.sha256 == hashlib.sha256(member).hexdigest()
    assert "class NPUModelRunner" in located.source.text


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
