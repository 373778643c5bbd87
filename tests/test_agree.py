"""bench/agree.py: where the two evidence modes' outputs differ, and of what kind."""

from __future__ import annotations

from pathlib import Path

from bench.agree import Run, compare, read_run, run_of

METHOD = "r.py:R.forward"


def _row(
    ident: str, status: str, marked: bool = False, lines: tuple[int, int] = (2, 2)
) -> dict[str, object]:
    return {
        "id": ident, "status": status, "marked": marked, "lines": lines,
        "module": "r.py", "class": "R", "method": "forward",
    }  # fmt: skip


def test_a_method_only_the_releases_left_in_conflict_is_what_releases_cannot_tell() -> None:
    releases = Run({METHOD: "a\n# conflict\n"}, {"e": _row("e", "conflict")})
    clone = Run({METHOD: "a\nb\n"}, {"e": _row("e", "placed")})
    (difference,) = compare(releases, clone)
    assert (difference.where, difference.kind) == (METHOD, "releases conflict")
    assert difference.conflicts == (("e",), ())


def test_a_method_both_modes_decided_differently_is_a_different_output() -> None:
    releases = Run({METHOD: "a\nb\n"}, {"e": _row("e", "placed")})
    clone = Run({METHOD: "a\n"}, {"e": _row("e", "followed")})
    assert [d.kind for d in compare(releases, clone)] == ["different output"]


def test_a_marked_block_placed_elsewhere_is_listed_by_its_id() -> None:
    text = "x = 1\nomni()\ny = 2\n"
    releases = Run({METHOD: text}, {"b": _row("b", "placed", True)}, {"r.py": text.split()})
    moved = "omni()\nx = 1\ny = 2\n"
    clone = Run({METHOD: moved}, {"b": _row("b", "placed", True, (1, 1))}, {"r.py": moved.split()})
    assert [(d.where, d.kind) for d in compare(releases, clone)] == [
        (METHOD, "different output"),
        ("b", "different output"),
    ]


def test_a_marked_block_between_the_same_lines_is_no_difference_of_its_own() -> None:
    """Its method may differ elsewhere (a followed lag, an edit): the block is where it was."""
    text, other = "x = 1\nomni()\ny = 2\nz = 3\n", "x = 1\nomni()\ny = 2\n"
    releases = Run({METHOD: text}, {"b": _row("b", "placed", True)}, {"r.py": text.split()})
    clone = Run({METHOD: other}, {"b": _row("b", "placed", True)}, {"r.py": other.split()})
    assert [d.where for d in compare(releases, clone)] == [METHOD]


def test_the_same_output_is_no_difference() -> None:
    run = Run({METHOD: "a\n"}, {"b": _row("b", "placed", True)})
    assert compare(run, run) == []


def test_an_upgrade_folder_reads_as_methods_and_blocks(tmp_path: Path) -> None:
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "r.py").write_text(
        "class R:\n    @staticmethod\n    def forward():\n        return 1\n"
    )
    (tmp_path / "report.json").write_text('{"blocks": [{"id": "b", "status": "placed"}]}')
    run = read_run(tmp_path)
    assert run.methods == {METHOD: "    @staticmethod\n    def forward():\n        return 1\n"}
    assert list(run.blocks) == ["b"]


def test_a_method_both_modes_left_in_conflict_is_its_own_kind() -> None:
    """Releases could not tell there either: not a different placement."""
    releases = Run({METHOD: "a\n# conflict\n"}, {"e": _row("e", "conflict")})
    clone = Run({METHOD: "a\n# conflict\nb\n"}, {"e": _row("e", "conflict")})
    assert [d.kind for d in compare(releases, clone)] == ["both conflict"]


def test_a_sync_s_modules_and_rows_read_as_an_upgrade_folder_does(tmp_path: Path) -> None:
    text = "class R:\n    def forward(self):\n        return 1\n"
    rows = [{"id": "b", "status": "placed"}]
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "r.py").write_text(text)
    (tmp_path / "report.json").write_text('{"blocks": [{"id": "b", "status": "placed"}]}')
    assert run_of({"r.py": text}, rows) == read_run(tmp_path)


def test_a_method_written_differently_is_the_same_code() -> None:
    """One mode kept omni's text of a call, the other upstream's: not another placement."""
    releases = Run({METHOD: "    def forward(self):\n        f(a=1)\n"}, {})
    clone = Run({METHOD: "    def forward(self):\n        f(\n            a = 1\n        )\n"}, {})
    assert [d.kind for d in compare(releases, clone)] == ["same code"]


def test_a_marked_block_beside_a_conflict_of_one_mode_is_that_conflict() -> None:
    """Its neighbouring code line differs because the releases-only run commented out a
    conflict right before it: what releases could not tell, not another place."""
    text = "# >>>>>>> omni-port conflict\n# x = 1\n# <<<<<<< omni-port conflict end\nomni()\n"
    rows = {"b": _row("b", "placed", True, (4, 4)), "e": _row("e", "conflict")}
    releases = Run({METHOD: text}, rows, {"r.py": text.splitlines()})
    other = "x = 1\nomni()\n"
    placed = {"b": _row("b", "placed", True, (2, 2)), "e": _row("e", "placed")}
    clone = Run({METHOD: other}, placed, {"r.py": other.splitlines()})
    assert [(d.where, d.kind) for d in compare(releases, clone)] == [
        (METHOD, "releases conflict"),
        ("b", "releases conflict"),
    ]
