"""Marker scanning: golden cases under tests/data/scan, plus small inline cases."""

from __future__ import annotations

from textwrap import dedent

import pytest

from omni_port.extract.markers import LABELLED, PLAIN, Scan, scan
from omni_port.pyast.parser import parse
from tests.golden import DATA, cases, check_file


def describe(result: Scan) -> str:
    """One line per region and per diagnostic: the golden format of a scan."""
    lines = []
    for region in result.regions:
        where = " > ".join(region.path) or "<module>"
        lines.append(f"region {region.opener.line}-{region.closer.line} in {where}")
    for finding in result.findings:
        lines.append(f"{finding.code.value} {finding.line}:{finding.col}")
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("case", cases("scan"))
def test_scan_golden(case: str) -> None:
    folder = DATA / "scan" / case
    source = (folder / "input.py").read_text(encoding="utf-8")
    check_file(folder / "expected.txt", describe(scan(parse(source, "input.py"))))


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("#  -------------------------------------- Omni-new ----------", id="spaced"),
        pytest.param("# ---------------------------------------Omni-new---------", id="tight"),
        pytest.param("# Omni-new", id="label-only"),
        pytest.param("# ----- OMNI NEW -----", id="upper-space"),
        pytest.param("# --- Omni-new: talker warm-up ---", id="titled"),
    ],
)
def test_labelled_marker_variants(line: str) -> None:
    assert LABELLED.match(line)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("# Omni-new blocks are described in the catalog", id="prose"),
        pytest.param(
            "# ------------------------------------------------------------------ #", id="divider"
        ),
        pytest.param("# ---", id="short-dashes"),
        pytest.param("# [Omni] Handle KV transfer", id="omni-note"),
    ],
)
def test_not_markers(line: str) -> None:
    assert not LABELLED.match(line)
    assert not PLAIN.match(line)


def test_plain_closer_needs_an_open_region() -> None:
    source = dedent(
        """\
        def f():
            # ------------------------------------------
            a = 1
            # ------------------------------------------
            return a
        """
    )
    assert describe(scan(parse(source, "x.py"))) == ""


def test_findings_name_both_lines_at_different_levels() -> None:
    result = scan(parse((DATA / "scan/different_levels/input.py").read_text(), "x.py"))
    assert [f.code.value for f in result.findings] == ["OP103"]
    assert "line 6" in result.findings[0].message


def test_markers_in_two_bodies_at_one_column_say_which_bodies() -> None:
    """An ``if`` body and its ``else:`` sit at the same column: a message that gives the
    columns ("21 and 21") tells the reader nothing."""
    source = dedent(
        """\
        def f(a):
            if a:
                # ---------- Omni-new ----------
                b = 1
            else:
                b = 2
                # ---------- Omni-new ----------
            return b
        """
    )
    result = scan(parse(source, "x.py"))
    assert [(f.code.value, f.line) for f in result.findings] == [("OP103", 3)]
    message = result.findings[0].message
    assert "line 7" in message and "columns" not in message
    assert "`if a:`" in message and "`else:`" in message
