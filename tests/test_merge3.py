"""The three-way statement merge on golden cases: tests/data/merge3/<case>/.

Each case holds three versions of some statements (``base.py``, ``omni.py``,
``upstream.py``) and the merge (``expected.py``) or the reason it clashes
(``expected.txt``): ``yes_*`` cases merge, ``no_*`` cases clash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omni_port.pyast import merge3
from tests.golden import DATA, check_file

CASES = DATA / "merge3"


def _cases() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if p.is_dir())


def _text(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("case", _cases())
def test_merge3(case: str) -> None:
    folder = CASES / case
    merged = merge3.merge(
        _text(folder, "base.py"), _text(folder, "omni.py"), _text(folder, "upstream.py")
    )
    if case.startswith("no_"):
        assert isinstance(merged, merge3.Clash), "merged, but the case must clash"
        check_file(folder / "expected.txt", f"clash: {merged.reason}\n")
        return
    assert isinstance(merged, merge3.Merged), f"clashed: {getattr(merged, 'reason', '')}"
    compile(merged.text, "expected.py", "exec")
    check_file(folder / "expected.py", merged.text)
    # Merging the result again changes nothing: upstream's edits are in it now.
    again = merge3.merge(_text(folder, "base.py"), merged.text, _text(folder, "upstream.py"))
    assert isinstance(again, merge3.Merged) and again.text == merged.text
