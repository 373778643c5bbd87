"""vLLM's sources for verification: the paired release, kept once as Python sources, checked."""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.gpu import vllm_delta
from omni_port.sources import upstream, vllm_sources
from omni_port.sources.upstream import Spec, SpecKind
from tests.conftest import Cli, LocalIndex

README_RULE = """
vLLM Ascend Plugin

## Prerequisites
- Software:
    - vLLM (the same version as vllm-ascend)
"""


def _metadata(version: str, requires: tuple[str, ...] = (), body: str = README_RULE) -> str:
    headers = [
        "Metadata-Version: 2.4",
        "Name: vllm_ascend",
        f"Version: {version}",
        *(f"Requires-Dist: {r}" for r in requires),
    ]
    return "\n".join(headers) + "\n\n" + body


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param(_metadata("0.19.1rc1"), "0.19.1", id="readme-rule-drops-the-rc"),
        pytest.param(_metadata("0.23.0.post1"), "0.23.0", id="readme-rule-drops-the-post"),
        pytest.param(
            _metadata("0.19.1rc1", ("torch==2.10.0", "vllm==0.19.0")), "0.19.0", id="pin-wins"
        ),
        pytest.param(_metadata("1.2.0", ("vllm (==1.1.0)",), ""), "1.1.0", id="old-style-pin"),
        pytest.param(_metadata("1.2.0", ("vllm>=1.0",), ""), None, id="a-range-says-nothing"),
        pytest.param(_metadata("1.2.0", (), "Runs on vLLM."), None, id="no-rule"),
        pytest.param(
            _metadata("1.2.0", ("vllm==1.1.0",)).replace("vllm_ascend", "other"),
            None,
            id="another-distribution",
        ),
    ],
)
def test_pairing_from_metadata(metadata: str, expected: str | None) -> None:
    pairing = vllm_sources.pairing_from_metadata(metadata)
    assert (pairing.version if pairing else None) == expected


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


VLLM_FILES = {
    "vllm/__init__.py": b"from vllm.config import VllmConfig\n",
    "vllm/config.py": b"class VllmConfig:\n    pass\n",
    "vllm/v1/worker/gpu_model_runner.py": b"class GPUModelRunner:\n    pass\n",
    "vllm/_C.abi3.so": b"\x7fELF" + b"\0" * 64,
    "vllm-9.9.1.dist-info/METADATA": b"Metadata-Version: 2.4\nName: vllm\nVersion: 9.9.1\n",
}


def _vllm_wheel(tamper: str = "") -> dict[str, bytes]:
    """The members of a synthetic vLLM wheel, with a RECORD (``tamper``: a member changed
    after the RECORD was written)."""
    record = "".join(
        f"{name},sha256={_digest(data)},{len(data)}\n" for name, data in VLLM_FILES.items()
    )
    record += "vllm-9.9.1.dist-info/RECORD,,\n"
    members = {
        name: data + (b"# changed\n" if name == tamper else b"")
        for name, data in VLLM_FILES.items()
    }
    return {**members, "vllm-9.9.1.dist-info/RECORD": record.encode()}


class FakePip:
    """The downloads made from a local index that publishes a synthetic vLLM wheel."""

    def __init__(self, published: LocalIndex) -> None:
        self.published = published

    @property
    def calls(self) -> int:
        return len(self.published.downloads)


@pytest.fixture
def pip(local_index: LocalIndex) -> FakePip:
    local_index.wheel("vllm", "9.9.1", _vllm_wheel())
    return FakePip(local_index)


def test_a_release_is_downloaded_once_and_only_its_python_sources_are_kept(
    tmp_path: Path, pip: FakePip
) -> None:
    texts = vllm_sources.release_texts("9.9.1", tmp_path)
    assert sorted(texts) == [
        "vllm/__init__.py",
        "vllm/config.py",
        "vllm/v1/worker/gpu_model_runner.py",
    ]
    assert texts["vllm/config.py"] == "class VllmConfig:\n    pass\n"
    kept = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert kept == [
        "src/vllm-9.9.1/python-sources.record",
        *(f"src/vllm-9.9.1/{name}" for name in sorted(texts)),
    ]
    assert vllm_sources.release_texts("9.9.1", tmp_path) == texts
    assert pip.calls == 1


def test_a_damaged_kept_source_is_fetched_again(tmp_path: Path, pip: FakePip) -> None:
    texts = vllm_sources.release_texts("9.9.1", tmp_path)
    (tmp_path / "src/vllm-9.9.1/vllm/config.py").write_text("class Broken: ...\n")
    assert vllm_sources.release_texts("9.9.1", tmp_path) == texts
    assert pip.calls == 2


def test_sources_without_their_record_are_not_trusted(tmp_path: Path, pip: FakePip) -> None:
    vllm_sources.release_texts("9.9.1", tmp_path)
    (tmp_path / "src/vllm-9.9.1" / vllm_sources.RECORD_NAME).unlink()
    vllm_sources.release_texts("9.9.1", tmp_path)
    assert pip.calls == 2


def test_a_member_that_differs_from_the_wheel_record_is_refused(
    tmp_path: Path, local_index: LocalIndex
) -> None:
    local_index.wheel("vllm", "9.9.1", _vllm_wheel(tamper="vllm/config.py"))
    with pytest.raises(BadInput) as error:
        vllm_sources.release_texts("9.9.1", tmp_path)
    assert error.value.findings[0].code.value == "OP003"
    assert "vllm/config.py" in error.value.findings[0].message
    assert not (tmp_path / "src/vllm-9.9.1" / vllm_sources.RECORD_NAME).exists()


def test_a_wheel_already_in_the_cache_is_used_and_kept(tmp_path: Path, pip: FakePip) -> None:
    wheel = upstream.fetch_archive("vllm", "9.9.1", tmp_path)
    assert wheel.parent == tmp_path / "archives" / "vllm-9.9.1"
    assert "vllm/config.py" in vllm_sources.release_texts("9.9.1", tmp_path)
    assert pip.calls == 1, "the cached wheel is read, not downloaded again"
    assert wheel.is_file()


def test_gpu_delta_reads_vllm_runners_from_the_same_kept_sources(
    tmp_path: Path, pip: FakePip
) -> None:
    spec = Spec(SpecKind.PYPI, "vllm", "9.9.1")
    for _ in range(2):
        located = vllm_delta.locate_vllm(spec, tmp_path)
        assert located.label == "vllm==9.9.1"
        assert located.source.text == "class GPUModelRunner:\n    pass\n"
    texts = vllm_sources.release_texts("9.9.1", tmp_path)
    assert texts["vllm/v1/worker/gpu_model_runner.py"] == located.source.text
    assert pip.calls == 1
    assert not list(tmp_path.rglob("*.whl"))
    # A damaged kept runner is fetched again, never read.
    (tmp_path / "src/vllm-9.9.1/vllm/v1/worker/gpu_model_runner.py").write_text("x = 1\n")
    assert vllm_delta.locate_vllm(spec, tmp_path).source.text == located.source.text
    assert pip.calls == 2
    with pytest.raises(BadInput) as error:
        vllm_delta.locate_vllm(spec, tmp_path, member="vllm/v1/worker/gpu/model_runner.py")
    assert "has no vllm/v1/worker/gpu/model_runner.py" in error.value.findings[0].message


def _ascend_checkout(root: Path, version: str) -> Spec:
    (root / "vllm_ascend").mkdir(parents=True)
    (root / "PKG-INFO").write_text(_metadata(version))
    return Spec(SpecKind.PATH, "vllm-ascend", path=str(root))


def test_by_default_the_release_vllm_ascend_pairs_with_is_read(
    tmp_path: Path, pip: FakePip
) -> None:
    ascend = _ascend_checkout(tmp_path / "ascend", "9.9.1rc2")
    found = vllm_sources.verification_sources("", ascend, tmp_path / "cache")
    assert found.texts is not None and "vllm/config.py" in found.texts
    assert found.label.startswith("vllm==9.9.1 (paired with")
    assert found.problem == ""


def test_offline_the_note_names_the_release_it_could_not_fetch(tmp_path: Path) -> None:
    """The suite's default: no index configured, as offline."""
    ascend = _ascend_checkout(tmp_path / "ascend", "9.9.1rc2")
    found = vllm_sources.verification_sources("", ascend, tmp_path / "cache")
    assert found.texts is None
    assert "vllm==9.9.1" in found.problem and "could not be fetched" in found.problem


def test_without_a_pairing_the_problem_says_to_pass_one(tmp_path: Path, pip: FakePip) -> None:
    ascend = Spec(SpecKind.PATH, "vllm-ascend", path=str(tmp_path / "model_runner_v1.py"))
    found = vllm_sources.verification_sources("", ascend, tmp_path)
    assert found.texts is None and "--vllm" in found.problem
    assert pip.calls == 0


def test_a_path_and_the_installed_package_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pip: FakePip
) -> None:
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    ascend = Spec(SpecKind.PATH, "vllm-ascend", path=str(tmp_path / "none"))
    by_path = vllm_sources.verification_sources(str(site), ascend, tmp_path)
    assert by_path.texts == {"vllm/__init__.py": "raise RuntimeError('imported!')\n"}
    monkeypatch.syspath_prepend(str(site))
    installed = vllm_sources.verification_sources("installed", ascend, tmp_path)
    assert installed.texts == by_path.texts
    assert "vllm" not in sys.modules
    assert pip.calls == 0


# --- the command ----------------------------------------------------------------------------

ASCEND_RUNNER = """
from vllm.config import VllmConfig


class NPUModelRunner:
    def __init__(self, vllm_config: VllmConfig):
        self.vllm_config = vllm_config

    def load_model(self):
        return self.vllm_config
"""
ASCEND_MODULE = "vllm_ascend.worker.model_runner_v1"
# Synthetic, written for this test; the upstream module's name is spliced in.
OMNI_RUNNER = f"""
from vllm.config import VllmConfig
from {ASCEND_MODULE} import NPUModelRunner


class OmniNPUModelRunner(NPUModelRunner):
    def load_model(self):
        # ------------- Omni-new -------------
        config: VllmConfig = self.vllm_config
        # ------------- Omni-new -------------
        return config
"""


def _workspace(root: Path, cli: Cli) -> None:
    """A synced workspace whose runner imports vLLM: upstream, runner, patches, generated."""
    (root / "ascend/vllm_ascend/worker").mkdir(parents=True)
    (root / "ascend/vllm_ascend/worker/model_runner_v1.py").write_text(ASCEND_RUNNER)
    (root / "omni").mkdir()
    (root / "omni/npu_model_runner.py").write_text(OMNI_RUNNER)
    (root / "pyproject.toml").write_text(
        '[tool.omni-port]\nsource = "omni"\nbase = "ascend"\nupstream = "ascend"\n'
    )
    assert cli("extract").exit_code == 0
    assert cli("sync").exit_code == 0


def _vllm_tree(root: Path, config: str) -> Path:
    (root / "vllm").mkdir(parents=True)
    (root / "vllm/__init__.py").write_text("")
    (root / "vllm/config.py").write_text(config)
    return root


def test_verify_reads_vllm_from_a_path_and_names_what_it_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pip: FakePip
) -> None:
    cli = Cli()
    monkeypatch.chdir(tmp_path)
    _workspace(tmp_path, cli)
    good = _vllm_tree(tmp_path / "good", "class VllmConfig:\n    pass\n")
    result = cli("verify", "--vllm", good)
    assert (result.exit_code, result.stdout) == (0, "")
    moved = _vllm_tree(tmp_path / "moved", "class Config:\n    pass\n")
    result = cli("verify", "--vllm", moved)
    assert result.exit_code == 1
    (finding,) = result.stdout.splitlines()
    assert finding.startswith("generated/npu_model_runner.py:") and " OP505 " in finding
    assert "vllm.config does not define VllmConfig" in finding
    assert pip.calls == 0


def test_verify_without_a_pairing_notes_which_source_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pip: FakePip
) -> None:
    cli = Cli()
    monkeypatch.chdir(tmp_path)
    _workspace(tmp_path, cli)
    result = cli("verify")
    assert result.exit_code == 0
    (note,) = result.stdout.splitlines()
    assert " OP506 " in note and "pass --vllm" in note
    (tmp_path / "ascend/PKG-INFO").write_text(_metadata("9.9.1rc2"))
    result = cli("verify")
    assert (result.exit_code, result.stdout, pip.calls) == (0, "", 1)
