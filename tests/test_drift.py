"""check: golden drift cases (tests/data/drift/<case>/args -> expected.txt) and stale outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.golden import DATA, cases, check_file

CONFIG = DATA / "pyproject.toml"


def _findings(cli: Cli, *args: str | Path) -> tuple[int, list[dict[str, object]]]:
    result = cli("--config", CONFIG, "check", *args, "--no-cache", "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("case", cases("drift"))
def test_drift_golden(case: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = DATA / "drift" / case
    monkeypatch.chdir(folder)
    args = (folder / "args").read_text().split()
    code, rows = _findings(
        cli, *args, "--patches", tmp_path / "none", "--generated", tmp_path / "none"
    )
    # Nothing extracted or generated: the gate says so, and fails, whatever else it finds.
    gate = [(str(row["path"]), row["line"]) for row in rows if row["code"] == "OP311"]
    assert (gate, code) == ([(f"{tmp_path}/none/", 0)] * 2, 1)
    rows = [row for row in rows if row["code"] != "OP311"]
    lines = [f"{row['kind']} {row['code']} {row['path']} {row['line']}" for row in rows]
    check_file(folder / "expected.txt", "".join(line + "\n" for line in lines))


def test_clean_when_the_catalog_is_rendered_from_the_code(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    patches, catalog = tmp_path / "p", tmp_path / "catalog.md"
    assert (
        cli(
            "extract", "omni", "--base", "upstream/v1/model_runner_v1.py", "--patches", patches
        ).exit_code
        == 0
    )
    assert cli("catalog", "--patches", patches, "--out", catalog).exit_code == 0
    out = tmp_path / "g"
    upstream = ("--upstream", "upstream/v1/model_runner_v1.py")
    assert cli("sync", "--patches", patches, *upstream, "--generated", out).exit_code == 0
    code, rows = _findings(
        cli, "omni", "--catalog", catalog, "--patches", patches, "--generated", out
    )
    assert code == 0
    assert {row["severity"] for row in rows} <= {"note"}, "notes at most: no drift, no error"
    # The notes: what could not be verified, and upstream's calls omni's blocks replaced.
    assert {row["kind"] for row in rows} <= {"unverified", "lost-hook-call"}


def test_a_hand_edited_generated_file_is_a_hand_edit_at_its_line(
    cli: Cli, in_data: Path, tmp_path: Path
) -> None:
    """Edited since sync wrote it, a runner is not stale but edited: `continue` takes the
    edit (OP207 at the edited line), where a stale one (OP406) only needs `sync`."""
    patches, out = tmp_path / "p", tmp_path / "g"
    base = "upstream/v1/model_runner_v1.py"
    assert cli("extract", "omni", "--base", base, "--patches", patches).exit_code == 0
    assert cli("sync", "--patches", patches, "--generated", out).exit_code == 0
    code, rows = _findings(cli, "omni", "--patches", patches, "--generated", out)
    assert code == 0, rows
    target = out / "npu_ar_model_runner.py"
    text = target.read_text()
    line = text[: text.index("return output")].count("\n") + 1
    target.write_text(text.replace("return output", "return None", 1))
    code, rows = _findings(cli, "omni", "--patches", patches, "--generated", out)
    edited = [
        (r["code"], Path(str(r["path"])).name, r["line"])
        for r in rows
        if r["code"] in ("OP207", "OP406")
    ]
    assert code == 1 and edited == [("OP207", "npu_ar_model_runner.py", line)]


def test_stale_patches_are_reported(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    patches = tmp_path / "p"
    assert cli("extract", "omni", "--patches", patches).exit_code == 0
    piece = next(patches.glob("npu_model_runner/*.block-01.patch"))
    piece.write_text(piece.read_text().replace("talker", "speaker"))
    code, rows = _findings(cli, "omni", "--patches", patches, "--generated", tmp_path / "g")
    assert code == 1
    assert [r["code"] for r in rows] == ["OP406", "OP311"], "and nothing was generated"


def test_cached_answer_when_nothing_changed(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    args = (
        "--config",
        CONFIG,
        "--cache-dir",
        tmp_path / "cache",
        "check",
        "omni",
        "--catalog",
        "catalog/parse/runners/catalog.md",
    )
    first = cli.loud(*args)
    second = cli.loud(*args)
    assert first.exit_code == second.exit_code == 1
    assert first.stdout == second.stdout
    assert "cached result" in second.stderr and "cached result" not in first.stderr


def test_github_annotations(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    result = cli(
        "check",
        "omni",
        "--catalog",
        "catalog/parse/runners/catalog.md",
        "--no-cache",
        "--format",
        "github",
    )
    assert result.stdout.startswith("::error file=omni/npu_ar_model_runner.py,line=43,")


def test_broken_catalog_is_bad_input(cli: Cli, in_data: Path, tmp_path: Path) -> None:
    broken = tmp_path / "catalog.md"
    broken.write_text("# Catalog\n\n## R (m.py)\n\n### f - Title\n\n```python\nx = 1\n")
    result = cli("check", "omni", "--catalog", broken, "--no-cache")
    assert result.exit_code == 2
    assert "OP401" in result.stderr
