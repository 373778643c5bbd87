"""Shared fixtures: a CLI runner working inside tests/data, and the download cache."""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest
from click.testing import CliRunner, Result

from omni_port.cli import main
from omni_port.model import CONFLICT_CLOSE, CONFLICT_LINE, CONFLICT_OPEN
from tests.golden import DATA


@pytest.fixture
def in_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run with tests/data as the working directory, so reports show short stable paths."""
    monkeypatch.chdir(DATA)
    return DATA


class Cli:
    """Invoke omni-port in-process with stdout and stderr kept apart."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str | Path) -> Result:
        return self.runner.invoke(main, ["-q", *map(str, args)], catch_exceptions=False)

    def loud(self, *args: str | Path) -> Result:
        return self.runner.invoke(main, list(map(str, args)), catch_exceptions=False)


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture(autouse=True)
def offline_unless_real(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests not marked ``real`` get an empty cache and a package index that cannot be
    reached: one that needs a download fails here, not only on a machine without network."""
    if request.node.get_closest_marker("real") is not None:
        return
    monkeypatch.setenv("OMNI_PORT_CACHE", str(tmp_path_factory.mktemp("empty-cache")))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")


@pytest.fixture(scope="session")
def cache_dir() -> Iterator[Path]:
    """The real download cache (shared across runs, so CI can keep it between builds)."""
    path = Path(os.environ.get("OMNI_PORT_CACHE", Path.home() / ".cache" / "omni-port"))
    path.mkdir(parents=True, exist_ok=True)
    yield path


#: This checkout: its configuration is the default workspace (`make sync`).
CHECKOUT = Path(__file__).resolve().parent.parent


def default_workspace(folder: Path, *, v2: bool) -> None:
    """This repository's configuration and reviewed lists, copied into ``folder``. Without
    ``v2`` the Model Runner V2 keys are left out: a test of the V1 runners that syncs many
    times would otherwise compose the V2 tree each time (about a minute)."""
    text = (CHECKOUT / "pyproject.toml").read_text(encoding="utf-8")
    if not v2:
        text = "".join(line for line in text.splitlines(True) if not line.startswith("v2-"))
    (folder / "pyproject.toml").write_text(text, encoding="utf-8")
    for name in ("marker-allow.txt", *(("v2-allow.txt",) if v2 else ())):
        (folder / name).write_bytes((CHECKOUT / name).read_bytes())


def conflict_region(block: str, candidates: int, indent: str = "    ") -> str:
    """A conflict region as sync leaves one in a generated module, listing ``candidates``
    candidate places (none: no place in the new upstream runs the block)."""
    lines = [f"{CONFLICT_OPEN} {block} (self.hook())", "# ambiguous."]
    lines += [f"#   candidate: upstream line {7 + n} (score 0.70): x()" for n in range(candidates)]
    lines += [f"# Place the block by hand, or record a choice with `omni-port resolve {block}`."]
    lines += [f"{CONFLICT_LINE}self.hook()", CONFLICT_CLOSE]
    return "".join(f"{indent}{line}\n" for line in lines)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (text by path below ``root``), folders made; returns ``root``."""
    for member, text in files.items():
        path = root / member
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def readme_commands(section: str) -> list[list[str]]:
    """The ``omni-port`` commands of the first ``sh`` block of the README's section
    ``section`` (its ``###`` heading), as argv without the program name."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    text = readme.split(f"### {section}\n", 1)[1].split("\n### ", 1)[0]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("omni-port ")]


def read_tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


class LocalIndex:
    """A package index in a folder, laid out as pip reads a ``file://`` index
    (``simple/<project>/index.html`` linking each archive with its sha256), and made the
    index pip is configured for. Counts the downloads omni-port makes from it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, list[tuple[str, str]]] = {}
        self.downloads: list[str] = []

    @property
    def url(self) -> str:
        return (self.root / "simple").as_uri()

    def add(self, dist: str, filename: str, data: bytes, hashed: bool = True) -> Path:
        """Publish one archive of ``dist`` (without its hash in the link when not hashed)."""
        folder = self.root / "files"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / filename
        path.write_bytes(data)
        fragment = f"#sha256={hashlib.sha256(data).hexdigest()}" if hashed else ""
        self.files.setdefault(dist, []).append((filename, path.as_uri() + fragment))
        page = self.root / "simple" / dist / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="{url}">{name}</a>\n' for name, url in self.files[dist])
        page.write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
        return path

    def wheel(self, dist: str, version: str, members: dict[str, bytes]) -> Path:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        filename = f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
        return self.add(dist, filename, buffer.getvalue())

    def sdist(
        self, dist: str, version: str, members: dict[str, bytes], hashed: bool = True
    ) -> Path:
        """An sdist as setuptools writes one: every file under ``<name>-<version>/``."""
        top = f"{dist.replace('-', '_')}-{version}"
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for name, data in members.items():
                info = tarfile.TarInfo(f"{top}/{name}")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return self.add(dist, f"{top}.tar.gz", buffer.getvalue(), hashed)


@pytest.fixture
def local_index(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> LocalIndex:
    """An empty local index that pip's configuration points at (nothing else is read),
    in a folder of its own: a test's tmp_path holds only what omni-port writes."""
    from omni_port.sources import index

    made = LocalIndex(tmp_path_factory.mktemp("index"))
    (made.root / "simple").mkdir(parents=True)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", made.url)
    real = index.download

    def counted(
        artifact: index.Artifact,
        into: BinaryIO,
        config: index.IndexConfig,
        meter: index.Meter | None = None,
    ) -> None:
        made.downloads.append(artifact.filename)
        real(artifact, into, config, meter)

    monkeypatch.setattr(index, "download", counted)
    return made


def ruff_findings(root: Path, files: list[str]) -> str:
    """What ruff reports on ``files`` (relative to ``root``, whose pyproject configures it)."""
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "-q",
            "--no-cache",
            "--output-format",
            "concise",
            *files,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode in (0, 1), found.stderr
    return found.stdout
