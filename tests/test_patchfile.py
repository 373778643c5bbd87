"""Patch files and the index: byte-exact round trips and located errors for bad files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from omni_port.errors import BadInput
from omni_port.model import Anchor, Block, BlockKind, Edge, Origin, Resolution
from omni_port.patches.patchfile import INDEX_NAME, parse_piece, render_piece
from omni_port.patches.store import read_patch_set
from tests.golden import DATA, cases


@pytest.mark.parametrize("case", cases("extract"))
def test_every_golden_piece_round_trips(case: str) -> None:
    root = DATA / "extract" / case / "expected"
    for path in sorted(root.rglob("*.patch")):
        text = path.read_text(encoding="utf-8")
        piece = parse_piece(text, str(path))
        assert render_piece(piece) == text
        assert parse_piece(render_piece(piece), str(path)) == piece


def _block(**changes: object) -> Block:
    block = Block(
        id="m.C.f.block-01",
        owner="C",
        member="f",
        kind=BlockKind.REPLACEMENT,
        marked=True,
        code="# --- Omni-new ---\nx = 1\n# --- Omni-new ---\n",
        anchor=Anchor(("with a:",), ("y = 2",), (), ("x = 0",), Edge.LAST),
        origin=Origin("src/m.py", 10, 12),
        title="Set x",
    )
    return replace(block, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(_block(), id="plain"),
        pytest.param(_block(title="  padded title "), id="padded-title"),
        pytest.param(_block(title="two\nlines"), id="multiline-title"),
        pytest.param(_block(code=""), id="empty-code"),
        pytest.param(_block(code="x = 1\n\n"), id="trailing-blank"),
        pytest.param(
            _block(
                anchor=Anchor(
                    ("if a:", "else:"),
                    (),
                    ("z()",),
                    (),
                    Edge.FIRST,
                    Resolution("y = 2", ("if a:",)),
                )
            ),
            id="resolution",
        ),
        pytest.param(
            _block(counterpart=Anchor(("with b:",), ("y = 3",), ("z()", "w()"), (), Edge.NONE)),
            id="counterpart",
        ),
        pytest.param(_block(counterpart=Anchor((), (), (), (), Edge.ONLY)), id="bare-counterpart"),
        pytest.param(
            _block(
                anchor=Anchor(
                    ("if a:",),
                    ("y = 2",),
                    (),
                    ("x = 0",),
                    Edge.NONE,
                    Resolution(
                        "y = 2",
                        ("if a:",),
                        ("x = 0",),
                        "x = 2\n\nz = 3\n",
                        "ab" * 32,
                        "A Maintainer <a@example.org>",
                        "upstream renamed x; see PR 12",
                    ),
                )
            ),
            id="resolution-with-code-and-author",
        ),
        pytest.param(
            _block(
                anchor=Anchor((), (), (), (), Edge.ONLY, Resolution("y = 2", (), (), "", "cd" * 32))
            ),
            id="dropped",
        ),
        pytest.param(_block(fenced=(True, True)), id="fenced-both"),
        pytest.param(_block(fenced=(False, True)), id="fenced-after"),
    ],
)
def test_block_round_trip(block: Block) -> None:
    text = render_piece(block)
    assert parse_piece(text, "x.patch") == block
    assert render_piece(parse_piece(text, "x.patch")) == text


CHUNK = "omni-port-patch: 1\nid: x\ntype: chunk\nowner:\nname:\n"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("omni-port-patch: 1\nid: x\ntype: chunk\n", 1, id="no-separator"),
        pytest.param("omni-port-patch: 1\nid x\n---\n", 2, id="not-key-value"),
        pytest.param("omni-port-patch: 1\nid: x\ntype: spaceship\n---\n", 3, id="unknown-type"),
        pytest.param("omni-port-patch: 2\nid: x\ntype: chunk\n---\n", 1, id="wrong-format"),
        pytest.param(
            "omni-port-patch: 1\nid: x\ntype: block\nkind: sideways\n---\n", 4, id="bad-kind"
        ),
        pytest.param(CHUNK + "marked: maybe\norigin: a:1-2\n---\n", 6, id="bad-flag"),
        pytest.param(CHUNK + "marked: no\norigin: nowhere\n---\n", 7, id="bad-origin"),
        pytest.param(
            "omni-port-patch: 1\nid: x\nid: y\ntype: chunk\n---\n", 3, id="duplicate-field"
        ),
        pytest.param('omni-port-patch: 1\ntitle:: "unterminated\n---\n', 2, id="bad-json"),
        pytest.param(
            render_piece(_block()).replace("\n---\n", "\nfenced: sideways\n---\n", 1),
            14,
            id="bad-fenced",
        ),
        pytest.param(
            render_piece(_block(anchor=Anchor(resolution=Resolution("y = 2", ("if a:",))))).replace(
                "resolved-after:", "resolved-aftr:"
            ),
            12,
            id="typo-in-a-resolution-field",
        ),
        pytest.param(
            render_piece(_block()).replace("\n---\n", "\nresolved-path: if a:\n---\n", 1),
            14,
            id="resolution-without-its-statement",
        ),
        pytest.param(
            render_piece(_block()).replace("title:", "titel:"), 6, id="typo-in-a-block-field"
        ),
        pytest.param(CHUNK + "member: f\n---\n", 6, id="field-of-another-type"),
    ],
)
def test_malformed_piece_is_located(text: str, line: int) -> None:
    with pytest.raises(BadInput) as error:
        parse_piece(text, "bad.patch")
    finding = error.value.findings[0]
    assert (finding.code.value, finding.line) == ("OP201", line)


def _patches(tmp_path: Path, index: str, pieces: dict[str, str] | None = None) -> Path:
    (tmp_path / INDEX_NAME).write_text(index)
    for name, text in (pieces or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("index", "code", "line"),
    [
        pytest.param(
            "omni-port-index: 1\nmodule: m.py\npiece: m/gone.patch\n",
            "OP202",
            3,
            id="missing-piece",
        ),
        pytest.param(
            "omni-port-index: 1\nmodule: m.py\npiece: ../../etc/passwd.patch\n",
            "OP203",
            3,
            id="escapes",
        ),
        pytest.param(
            "omni-port-index: 1\nmodule: m.py\npiece: /abs.patch\n", "OP203", 3, id="absolute"
        ),
        pytest.param(
            "omni-port-index: 1\npiece: m/a.patch\n", "OP204", 2, id="piece-before-module"
        ),
        pytest.param(
            "omni-port-index: 1\nmodule: m.py\npiece: m/a.patch\npiece: m/./a.patch\n",
            "OP201",
            4,
            id="piece-listed-twice",
        ),
        pytest.param("something else\n", "OP204", 1, id="not-an-index"),
        pytest.param(
            "omni-port-index: 1\nmodule: m.py\nsourse: m.py\n", "OP204", 3, id="unknown-field"
        ),
        pytest.param("omni-port-index: 1\n", "OP204", 1, id="empty"),
    ],
)
def test_bad_index(tmp_path: Path, index: str, code: str, line: int) -> None:
    with pytest.raises(BadInput) as error:
        read_patch_set(_patches(tmp_path, index))
    finding = error.value.findings[0]
    assert (finding.code.value, finding.line) == (code, line)


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as error:
        read_patch_set(tmp_path)
    assert error.value.findings[0].code.value == "OP204"
