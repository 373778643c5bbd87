"""Shared fixtures: a CLI runner working inside tests/data, and the download cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from omni_port.cli import main
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


def read_tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
