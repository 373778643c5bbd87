"""Every release is an input: wheels and sdists found on the index pip is configured for,
downloaded once into the cache, checked, and read as text without building anything."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.sources import archives, index, upstream, vllm_sources
from omni_port.sources.upstream import ASCEND_RUNNER, Spec, SpecKind
from tests.conftest import Cli, LocalIndex

RUNNER = (
    b"class NPUModelRunner:\n    def execute_model(self):\n        x = self.step()\n"
    b"        return x\n"
)
OLD_RUNNER = (
    b"class NPUModelRunner:\n    def execute_model(self):\n        y = 0\n        return y\n"
)
PKG_INFO = (
    b"Metadata-Version: 2.4\nName: vllm_ascend\nVersion: 2.0.0rc1\n\n"
    b"Runs on vLLM (the same version as vllm-ascend).\n"
)


def _release(version: str) -> Spec:
    return Spec(SpecKind.PYPI, "vllm-ascend", version)


@pytest.fixture
def published(local_index: LocalIndex) -> LocalIndex:
    """vllm-ascend 1.0.0 as a wheel, 2.0.0rc1 as an sdist only."""
    local_index.wheel("vllm-ascend", "1.0.0", {ASCEND_RUNNER: OLD_RUNNER})
    local_index.sdist(
        "vllm-ascend",
        "2.0.0rc1",
        {
            "PKG-INFO": PKG_INFO,
            ASCEND_RUNNER: RUNNER,
            "vllm_ascend/__init__.py": b"",
            "vllm_ascend/_version.py": b"__commit_id__ = 'g0123abc'\n",
            "tests/test_runner.py": b"import vllm_ascend\n",
        },
    )
    return local_index


# --- pip's configuration ----------------------------------------------------------------------

LISTING = """\
:env:.index-url='https://mirror.example/simple'
download.index-url='https://download.example/simple'
global.index-url='https://global.example/simple'
global.extra-index-url='https://extra.example/simple file:///opt/more/simple'
global.find-links='/opt/wheels'
global.trusted-host='mirror.example'
global.cert='/etc/ssl/ca.pem'
:env:.default-timeout='180'
"""


def test_pip_config_takes_the_environment_then_download_then_global() -> None:
    config = index.parse_pip_config(LISTING)
    assert config.index_urls == (
        "https://mirror.example/simple",
        "https://extra.example/simple",
        "file:///opt/more/simple",
    )
    assert config.find_links == ("file:///opt/wheels",)
    assert config.trusted_hosts == ("mirror.example",)
    assert (config.cert, config.timeout) == ("/etc/ssl/ca.pem", 180.0)
    without_env = index.parse_pip_config(LISTING.replace(":env:.index-url", "x.y"))
    assert without_env.index_urls[0] == "https://download.example/simple"


def test_no_index_leaves_only_the_find_links() -> None:
    config = index.parse_pip_config(LISTING + ":env:.no-index='1'\n")
    assert config.index_urls == () and config.find_links == ("file:///opt/wheels",)
    assert index.parse_pip_config("").index_urls == (index.PYPI,)


def test_pip_itself_is_asked(local_index: LocalIndex) -> None:
    config = index.pip_config()
    assert config.index_urls == (local_index.url,) and config.find_links == ()


# --- a release: its wheel, else its sdist -----------------------------------------------------


def test_a_release_with_a_wheel_is_read_from_it(published: LocalIndex, tmp_path: Path) -> None:
    located = upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path / "cache")
    assert located.source.text == OLD_RUNNER.decode()
    assert published.downloads == ["vllm_ascend-1.0.0-py3-none-any.whl"]


def test_an_sdist_only_release_is_read_without_building_it(
    published: LocalIndex, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    located = upstream.locate(_release("2.0.0rc1"), ASCEND_RUNNER, cache)
    assert located.source.text == RUNNER.decode()
    assert located.label == "vllm-ascend==2.0.0rc1"
    kept = sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file())
    assert kept == [
        "archives/vllm-ascend-2.0.0rc1/vllm_ascend-2.0.0rc1.tar.gz",
        "archives/vllm-ascend-2.0.0rc1/vllm_ascend-2.0.0rc1.tar.gz.sha256",
        f"src/vllm-ascend-2.0.0rc1/{ASCEND_RUNNER}",
        f"src/vllm-ascend-2.0.0rc1/{ASCEND_RUNNER}.sha256",
    ]
    # The whole package, as verify reads it; its metadata, as the vLLM pairing reads it.
    texts = upstream.package_texts(_release("2.0.0rc1"), "vllm_ascend", cache)
    assert texts is not None and sorted(texts) == [
        "vllm_ascend/__init__.py",
        "vllm_ascend/_version.py",
        ASCEND_RUNNER,
    ]
    metadata = vllm_sources.ascend_metadata(_release("2.0.0rc1"), cache)
    pairing = vllm_sources.pairing_from_metadata(metadata or "")
    assert pairing is not None and pairing.version == "2.0.0"
    assert published.downloads == ["vllm_ascend-2.0.0rc1.tar.gz"], "downloaded once"


def test_release_versions_list_wheels_and_sdists(published: LocalIndex) -> None:
    published.sdist("vllm-ascend", "1.0.0.post1", {ASCEND_RUNNER: RUNNER})
    assert upstream.release_versions("vllm-ascend") == ["1.0.0", "1.0.0.post1", "2.0.0rc1"]


def test_a_wheel_is_preferred_to_the_sdist_of_the_same_release() -> None:
    found = [
        index.Artifact("pkg", "1.0", "pkg-1.0.tar.gz", "file:///x/pkg-1.0.tar.gz"),
        index.Artifact("pkg", "1.0", "pkg-1.0-cp99-cp99-os_arch.whl", "file:///x/a.whl"),
        index.Artifact("pkg", "1.0", "pkg-1.0-py3-none-any.whl", "file:///x/b.whl"),
        index.Artifact("pkg", "1.1", "pkg-1.1.tar.gz", "file:///x/pkg-1.1.tar.gz"),
    ]
    assert index.best(found, "1.0") == found[2], "an installable wheel first"
    assert index.best(found[:2], "1.0") == found[1], "then any wheel: only sources are read"
    assert index.best(found, "1.1") == found[3]
    assert index.best(found, "1.2") is None


# --- bad input: exit 2 in one line, nothing half-written in the cache ------------------------


def _cache_files(cache: Path) -> list[str]:
    return sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file())


def test_a_release_that_does_not_exist_names_the_nearest(
    published: LocalIndex, tmp_path: Path
) -> None:
    with pytest.raises(BadInput) as error:
        upstream.locate(_release("1.5.0"), ASCEND_RUNNER, tmp_path / "cache")
    finding = error.value.findings[0]
    assert (finding.code.value, finding.path) == ("OP003", "vllm-ascend==1.5.0")
    assert "vllm-ascend==1.5.0 does not exist" in finding.message
    assert "vllm-ascend==1.0.0 (wheel), vllm-ascend==2.0.0rc1 (sdist)" in finding.message
    assert _cache_files(tmp_path / "cache") == []


def test_an_archive_without_the_runner_module_is_refused(
    local_index: LocalIndex, tmp_path: Path
) -> None:
    local_index.sdist("vllm-ascend", "3.0.0", {"vllm_ascend/__init__.py": b""})
    with pytest.raises(BadInput) as error:
        upstream.locate(_release("3.0.0"), ASCEND_RUNNER, tmp_path / "cache")
    assert f"the sdist has no {ASCEND_RUNNER}" in error.value.findings[0].message


@pytest.mark.parametrize("hashed", [True, False], ids=["index-hash", "no-index-hash"])
def test_a_truncated_archive_on_the_index_is_refused_and_not_kept(
    local_index: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashed: bool
) -> None:
    monkeypatch.setattr(index.time, "sleep", lambda seconds: None)
    path = local_index.sdist("vllm-ascend", "3.0.0", {ASCEND_RUNNER: RUNNER * 400}, hashed)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # the hash in the link is the whole file's
    with pytest.raises(BadInput) as error:
        upstream.locate(_release("3.0.0"), ASCEND_RUNNER, tmp_path / "cache")
    finding = error.value.findings[0]
    assert finding.code.value == "OP003" and "\n" not in finding.message
    assert ("after 3 attempts" if hashed else "damaged") in finding.message
    assert _cache_files(tmp_path / "cache") == []


def test_a_damaged_archive_in_the_cache_is_fetched_again(
    published: LocalIndex, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    upstream.locate(_release("2.0.0rc1"), ASCEND_RUNNER, cache)
    (kept,) = (cache / "archives").rglob("*.tar.gz")
    kept.write_bytes(kept.read_bytes()[:100])
    for member in (cache / "src").rglob("*.py"):
        member.unlink()
    again = upstream.locate(_release("2.0.0rc1"), ASCEND_RUNNER, cache)
    assert again.source.text == RUNNER.decode()
    assert len(published.downloads) == 2
    assert archives.python_members(kept, "vllm_ascend")[ASCEND_RUNNER] == RUNNER, "read to its end"


def test_an_index_that_cannot_be_reached_is_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index on a local port nothing listens on: no network is touched."""
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    pauses: list[float] = []
    monkeypatch.setattr(index.time, "sleep", pauses.append)
    with pytest.raises(BadInput) as error:
        upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    assert "could not be reached" in error.value.findings[0].message
    assert len(pauses) == index.ATTEMPTS - 1, "retried"
    with pytest.raises(BadInput) as listing:
        upstream.release_versions("vllm-ascend")
    assert "could not be reached" in listing.value.findings[0].message


def test_with_no_index_configured_nothing_is_asked_of_pypi(tmp_path: Path) -> None:
    """The suite's default (conftest): pip's no-index, no find-links."""
    with pytest.raises(BadInput) as error:
        upstream.locate(_release("1.0.0"), ASCEND_RUNNER, tmp_path)
    assert "no-index" in error.value.findings[0].message


# --- archives read as text --------------------------------------------------------------------


def _tar(path: Path, members: dict[str, bytes], link: str = "") -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return path


@pytest.mark.parametrize("name", ["pkg-1/../../evil.py", "/etc/pkg.py", "pkg-1/a\\..\\b.py"])
def test_an_sdist_with_an_unsafe_name_is_refused(tmp_path: Path, name: str) -> None:
    sdist = _tar(tmp_path / "pkg-1.tar.gz", {"pkg-1/pkg/ok.py": b"a = 1\n", name: b"x = 1\n"})
    with pytest.raises(BadInput):
        archives.python_members(sdist, "pkg")


def test_a_link_in_an_sdist_is_never_followed(tmp_path: Path) -> None:
    sdist = _tar(tmp_path / "pkg-1.tar.gz", {"pkg-1/pkg/ok.py": b"a = 1\n"}, "pkg-1/pkg/l.py")
    assert archives.python_members(sdist, "pkg") == {"pkg/ok.py": b"a = 1\n"}
    with pytest.raises(BadInput):
        archives.read_member(sdist, "pkg/l.py")


def test_an_archive_cut_short_is_damaged_not_read_as_far_as_it_goes(tmp_path: Path) -> None:
    code = hashlib.sha256().digest() * 999
    sdist = _tar(tmp_path / "pkg-1.tar.gz", {"pkg-1/pkg/a.py": code})
    assert archives.python_members(sdist, "pkg") == {"pkg/a.py": code}
    sdist.write_bytes(sdist.read_bytes()[:-200])
    with pytest.raises(BadInput) as error:
        archives.python_members(sdist, "pkg")
    assert error.value.findings[0].code.value == "OP003"


LONG = "pkg-1/pkg/" + "deep/" * 30 + "long_module_name.py"


def _formatted(path: Path, form: int, long_name: str = LONG, mode: str = "w:gz") -> Path:
    """An sdist in one of tar's formats: a long name, a directory, a link, a regular file."""
    with tarfile.open(path, mode, format=form) as archive:
        folder = tarfile.TarInfo("pkg-1/pkg")
        folder.type = tarfile.DIRTYPE
        archive.addfile(folder)
        for name, data in (("pkg-1/pkg/a.py", b"a = 1\n"), (long_name, b"b = 2\n" * 300)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("pkg-1/pkg/l.py")
        link.type = tarfile.SYMTYPE
        link.linkname = "a.py"
        archive.addfile(link)
    return path


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(tarfile.PAX_FORMAT, id="pax"),
        pytest.param(tarfile.GNU_FORMAT, id="gnu"),
        pytest.param(tarfile.USTAR_FORMAT, id="ustar"),
    ],
)
def test_an_sdist_reads_alike_through_its_headers_and_through_tarfile(
    tmp_path: Path, form: int
) -> None:
    # ustar has no long names: a long path goes into its 155-byte prefix field instead.
    name = LONG if form != tarfile.USTAR_FORMAT else "pkg-1/pkg/" + "d/" * 60 + "m.py"
    sdist = _formatted(tmp_path / "pkg-1.tar.gz", form, name)
    read = archives.python_members(sdist, "pkg")
    assert read == {"pkg/a.py": b"a = 1\n", name.removeprefix("pkg-1/"): b"b = 2\n" * 300}
    assert dict(archives._tarfile_entries(sdist, archives.python_sources("pkg"))) == read


def test_an_sdist_the_header_reader_finds_unusual_is_read_by_tarfile(tmp_path: Path) -> None:
    bz2 = _formatted(tmp_path / "pkg-1.tar.bz2", tarfile.PAX_FORMAT, mode="w:bz2")
    assert archives.python_members(bz2, "pkg")["pkg/a.py"] == b"a = 1\n"
    sdist = _formatted(tmp_path / "pkg-1.tar.gz", tarfile.PAX_FORMAT)
    raw = bytearray(gzip.decompress(sdist.read_bytes()))
    raw[148:156] = b"0000000\0"  # the first header's checksum no longer holds
    sdist.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(BadInput) as error:
        archives.python_members(sdist, "pkg")
    assert error.value.findings[0].code.value == "OP003", "tarfile says what is wrong"


# --- through the command line -----------------------------------------------------------------


def _runner(folder: Path) -> Path:
    runner = folder / "npu_model_runner.py"
    runner.write_text(
        "from vllm_ascend.worker.model_runner_v1 import NPUModelRunner\n\n\n"
        "class OmniNPUModelRunner(NPUModelRunner):\n"
        "    def execute_model(self):\n        x = self.step()\n        return x\n"
    )
    return runner


def test_bases_ranks_sdist_releases_with_the_rest(
    cli: Cli, published: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = cli.loud("--cache-dir", "cache", "bases", str(runner))
    assert result.exit_code == 0, result.stderr
    ranked = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert ranked == ["vllm-ascend==2.0.0rc1", "vllm-ascend==1.0.0"]
    assert "best base: vllm-ascend==2.0.0rc1" in result.stderr


def test_a_release_that_does_not_exist_is_one_line_and_exit_2(
    cli: Cli, published: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.omni-port]\n")
    runner = _runner(tmp_path)
    result = cli("--cache-dir", "cache", "bases", "--candidates", "1.5.0", str(runner))
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("vllm-ascend==1.5.0:") and " OP003 " in line


@pytest.mark.parametrize(
    ("omni", "noted"),
    [
        pytest.param("vllm-omni==3.1.0", True, id="other-vllm"),
        pytest.param("vllm-omni==2.0.1", False, id="same-vllm"),
        pytest.param("", False, id="no-release"),
    ],
)
def test_a_vllm_mismatch_between_omni_and_ascend_is_noted_once(
    published: LocalIndex, tmp_path: Path, omni: str, noted: bool
) -> None:
    from omni_port import api

    settings = api.Settings(cache=tmp_path / "cache")
    notes = api.inputs.vllm_pairing_notes(omni, "vllm-ascend==2.0.0rc1", settings)
    assert [n.code.value for n in notes] == (["OP511"] if noted else [])
    if noted:
        assert "vLLM 3.1" in notes[0].message and "vLLM 2.0.0" in notes[0].message
        assert notes[0].line == 1, "a note names a line an editor can open"


def test_a_diagnostic_in_a_release_names_its_copy_in_the_cache(
    local_index: LocalIndex, cli: Cli, tmp_path: Path
) -> None:
    """A release's file is named `DIST==VERSION/member` in patches and JSON (the same on
    every machine); a person reads it at its copy in the cache, which an editor opens."""
    local_index.wheel("vllm-ascend", "3.0.0", {ASCEND_RUNNER: b"class Broken(:\n"})
    cache = tmp_path / "cache"
    result = cli("--cache-dir", cache, "sync", "--upstream", "vllm-ascend==3.0.0")
    assert result.exit_code == 2
    kept = cache / "src" / "vllm-ascend-3.0.0" / ASCEND_RUNNER
    assert result.stderr.startswith(f"{kept}:1:"), result.stderr
    assert kept.read_bytes() == b"class Broken(:\n"


def test_only_a_kept_release_file_is_renamed(tmp_path: Path) -> None:
    kept = tmp_path / "src" / "vllm-omni-1.0" / "pkg" / "m.py"
    kept.parent.mkdir(parents=True)
    kept.write_text("x = 1\n")
    assert upstream.cached_member("vllm-omni==1.0/pkg/m.py", tmp_path) == str(kept)
    assert upstream.cached_member("vllm-omni==1.0/pkg/other.py", tmp_path) == (
        "vllm-omni==1.0/pkg/other.py"
    )
    assert upstream.cached_member("generated/m.py", tmp_path) == "generated/m.py"


def test_base_detection_before_a_target_reads_the_kept_release_list(
    published: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 46: an upgrade's base detection asked the index for the release list on every
    run (seconds); the list the cache keeps holds every release up to the target when it
    holds the target, and ranks the same. `bases` without a target asked it on every run
    too: runners that are no release bound nothing, and the kept list serves them."""
    from omni_port import api
    from omni_port.api.inputs import Settings
    from omni_port.model import Located
    from omni_port.sources.config import Config
    from omni_port.sources.textio import decode

    asked: list[str] = []
    real = upstream.dated_releases

    def counted(dist: str) -> dict[str, str]:
        asked.append(dist)
        return real(dist)

    monkeypatch.setattr(upstream, "dated_releases", counted)
    text = RUNNER.replace(b"class NPUModelRunner:", b"class R(NPUModelRunner):")
    runners = [Located("r.py", "r.py", decode(text, "r.py"))]
    settings = Settings(Config(), tmp_path / "cache")
    target = "vllm-ascend==2.0.0rc1"
    first = api.rank_bases(runners, settings, target=target).ranked
    again = api.rank_bases(runners, settings, target=target).ranked
    assert asked == ["vllm-ascend"], "asked once, then read from the cache"
    assert [s.label for s in first] == ["vllm-ascend==2.0.0rc1", "vllm-ascend==1.0.0"]
    assert again == first == api.rank_bases(runners, settings).ranked
    assert asked == ["vllm-ascend"], "no target: the kept list serves too"


def test_base_detection_ranks_each_candidate_while_the_next_ones_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 46: a cold GPU base detection read some thirty vLLM releases four at once and
    parsed none of them before the last had arrived; each is now parsed as it comes, while
    the later ones download (the same ranking, in the same order)."""
    import threading

    from omni_port import api
    from omni_port.api import workflows
    from omni_port.api.inputs import Settings
    from omni_port.model import Located
    from omni_port.sources.config import Config
    from omni_port.sources.textio import decode

    labels = []
    for number in range(3):
        path = tmp_path / f"up{number}" / "model_runner_v1.py"
        path.parent.mkdir()
        path.write_bytes(RUNNER + f"\n\nVERSION = {number}\n".encode())
        labels.append(str(path))
    first_ranked = threading.Event()
    waited: list[bool] = []
    real_locate, real_keys = workflows.locate_text, workflows.kept_keys

    def slow_last(text: str, settings: Settings) -> Located:
        if text == labels[-1]:  # the last download ends only once the first is ranked
            waited.append(first_ranked.wait(timeout=20))
        return real_locate(text, settings)

    def keys(*args: object) -> object:
        first_ranked.set()
        return real_keys(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(workflows, "locate_text", slow_last)
    monkeypatch.setattr(workflows, "kept_keys", keys)
    text = RUNNER.replace(b"class NPUModelRunner:", b"class R(NPUModelRunner):")
    runners = [Located("r.py", "r.py", decode(text, "r.py"))]
    settings = Settings(Config(), tmp_path / "cache")
    ranked = api.rank_bases(runners, settings, labels).ranked
    assert waited == [True]
    monkeypatch.setattr(workflows, "locate_text", real_locate)
    assert ranked == api.rank_bases(runners, settings, labels).ranked
    assert [s.label for s in ranked] and {s.label for s in ranked} == set(labels)
