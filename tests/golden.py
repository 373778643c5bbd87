"""Golden-file helpers: compare with expected files, show a unified diff, regenerate on demand.

Set OMNI_PORT_UPDATE_GOLDEN=1 to rewrite the expected files from the current output
(then read the diff before committing it).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

DATA = Path(__file__).parent / "data"
UPDATE = os.environ.get("OMNI_PORT_UPDATE_GOLDEN") == "1"


def cases(kind: str) -> list[str]:
    """Case directory names under tests/data/<kind>, sorted (they become test ids); a
    hidden folder (a tool's state, such as ``.omni-port/``) is none."""
    return sorted(
        p.name for p in (DATA / kind).iterdir() if p.is_dir() and not p.name.startswith(".")
    )


def diff(expected: str, actual: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            f"expected/{name}",
            f"actual/{name}",
        )
    )


def check_file(path: Path, actual: str) -> None:
    """Assert ``path`` holds ``actual`` (or write it in update mode)."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="")
        return
    assert path.exists(), f"missing golden file {path}; run with OMNI_PORT_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert expected == actual, "\n" + diff(expected, actual, path.name)


def check_tree(expected_dir: Path, actual: dict[str, str]) -> None:
    """Assert a directory of expected files equals ``actual`` (relative path -> text)."""
    if UPDATE:
        if expected_dir.exists():
            for old in sorted(expected_dir.rglob("*"), reverse=True):
                if old.is_file():
                    old.unlink()
        for rel, text in actual.items():
            check_file(expected_dir / rel, text)
        return
    present = {
        p.relative_to(expected_dir).as_posix(): p.read_text(encoding="utf-8")
        for p in expected_dir.rglob("*")
        if p.is_file()
    }
    assert sorted(present) == sorted(actual), (
        f"files differ: missing {sorted(set(present) - set(actual))}, "
        f"extra {sorted(set(actual) - set(present))}"
    )
    for rel in sorted(actual):
        assert present[rel] == actual[rel], f"first differing file: {rel}\n" + diff(
            present[rel], actual[rel], rel
        )
