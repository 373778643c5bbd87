"""Malformed and unusual inputs through the command line: tests/data/corpus/<case>/.

Each case directory holds its input files and:

- ``args``: one omni-port command per line; earlier lines prepare (they must exit 0 or 1),
  the last is the command under test. Paths are relative to the case directory.
- ``expected.txt``: the diagnostics of the last command, one ``CODE line`` per line.
- ``exit``: its exit code, when it is not 2 (bad input).
- ``outputs`` (optional): checks of the files it writes, one per line:
  ``same SOURCE OUTPUT`` (the output after its three-line header is the source, byte for
  byte, BOM and line endings included), ``newline OUTPUT lf|crlf``, ``compiles OUTPUT``.
- ``xfail`` (optional): why the case fails today (a known bug; strict).

A case runs in a copy of its directory (nothing is written into the repository), with
``--config`` naming a copy of tests/data/corpus/pyproject.toml beside it so that no other
configuration applies (the case's own ``pyproject.toml``, in the copy, when it has one: a
configuration under test, or one naming a file of the case), and a download cache inside the copy. A
bad input (exit 2) must leave the copy exactly as it was, the cache aside: no file
written, changed or removed.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from omni_port.sources.textio import BOM
from tests.conftest import Cli
from tests.golden import DATA, cases

CORPUS = DATA / "corpus"
DIAGNOSTIC = re.compile(
    r"""
    ^(?P<path>[^\s:][^:]*)      # path as given on the command line
    :(?P<line>\d+)              # 1-based line (0: the whole file)
    :(?P<col>\d+)               # 1-based column
    :\ (?P<code>OP\d{3})\       # the code
    """,
    re.VERBOSE,
)


def _params() -> list[object]:
    params: list[object] = []
    for case in cases("corpus"):
        reason = CORPUS / case / "xfail"
        marks = (
            [pytest.mark.xfail(reason=reason.read_text().strip(), strict=True)]
            if reason.exists()
            else []
        )
        params.append(pytest.param(case, id=case, marks=marks))
    return params


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the copy but the download cache: parsed trees of sound inputs may be
    kept there by a command that fails later, which loses nothing."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in (".cache", ".omni-port")
    }


def _diagnostics(text: str) -> list[tuple[str, int, str]]:
    found = []
    for line in text.splitlines():
        match = DIAGNOSTIC.match(line)
        if match:
            found.append((match["code"], int(match["line"]), match["path"]))
    return found


def _check_output(work: Path, check: str) -> None:
    kind, *paths = check.split()
    if kind == "same":
        source, output = (work / p for p in paths)
        want, got = source.read_bytes(), output.read_bytes()
        assert want.startswith(BOM.encode()) == got.startswith(BOM.encode()), "BOM not kept"
        body = b"".join(got.removeprefix(BOM.encode()).splitlines(keepends=True)[3:])
        assert body == want.removeprefix(BOM.encode()), f"{output} is not {source} after its header"
    elif kind == "newline":
        data = (work / paths[0]).read_bytes()
        crlf = data.count(b"\r\n")
        assert crlf == (data.count(b"\n") if paths[1] == "crlf" else 0), f"{paths[0]} endings"
    elif kind == "compiles":
        path = work / paths[0]
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    else:
        raise AssertionError(f"unknown output check {check!r}")


@pytest.mark.parametrize("case", _params())
def test_corpus_case(case: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = CORPUS / case
    work = tmp_path / case
    shutil.copytree(folder, work, ignore=shutil.ignore_patterns("args", "expected.txt", "exit"))
    monkeypatch.chdir(work)
    # A case's own configuration stays in the copy, which is then the workspace root
    # (its lock and a killed run's journal go to ``.omni-port/``, which the snapshot leaves
    # out as it does the cache); the shared one is copied beside the copy.
    own = work / "pyproject.toml"
    if not own.is_file():
        shutil.copy(CORPUS / "pyproject.toml", tmp_path / "pyproject.toml")
    config_file = own if own.is_file() else tmp_path / "pyproject.toml"
    config = ["--config", str(config_file), "--cache-dir", ".cache"]
    *setup, command = (line for line in (folder / "args").read_text().splitlines() if line)
    for line in setup:
        result = cli(*config, *shlex.split(line))
        assert result.exit_code in (0, 1), f"setup `{line}`: {result.stderr}"
    before = _snapshot(work)
    result = cli(*config, *shlex.split(command))
    exit_file = folder / "exit"
    expected_exit = int(exit_file.read_text()) if exit_file.exists() else 2
    assert result.exit_code == expected_exit, result.stderr + result.stdout
    found = _diagnostics(result.stderr + result.stdout)
    expected = [
        (code, int(line))
        for code, line in (
            row.split() for row in (folder / "expected.txt").read_text().splitlines()
        )
    ]
    assert sorted((code, line) for code, line, _ in found) == sorted(expected), (
        result.stderr + result.stdout
    )
    for _, _, path in found:
        assert not Path(path).is_absolute() and (work / path).exists(), f"diagnostic path {path}"
    if expected_exit == 2:
        assert result.stdout == ""
        assert _snapshot(work) == before, "a failed command wrote, changed or removed files"
    checks = folder / "outputs"
    for check in checks.read_text().splitlines() if checks.exists() else []:
        _check_output(work, check)
