"""The three-way statement merge on golden cases: tests/data/merge3/<case>/.

Each case holds three versions of some statements (``base.py``, ``omni.py``,
``upstream.py``) and the merge (``expected.py``) or the reason it clashes
(``expected.txt``): ``yes_*`` cases merge, ``no_*`` cases clash.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omni_port.pyast import merge3
from omni_port.pyast.fields import Fields
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


#: Item names both sides draw their additions from, so both often add the same one.
NAMES = ("a", "b", "c", "d", "e", "f")


@st.composite
def _edited(draw: st.DrawFn, base: list[str]) -> list[str]:
    """``base`` with some items removed and some added anywhere, as one side edits it."""
    items = [name for name in base if draw(st.booleans()) or len(base) < 3]
    for _ in range(draw(st.integers(0, 3))):
        items.insert(draw(st.integers(0, len(items))), draw(st.sampled_from(NAMES)))
    return items


#: Two shapes of one list: a call's arguments and a body's statements.
SHAPES = {
    "arguments": lambda items: f"call({', '.join(items)})\n",
    "statements": lambda items: "".join(f"{name}()\n" for name in items) or "pass\n",
}


def _held(shape: str, text: str) -> Counter[str]:
    tree = ast.parse(text)
    if shape == "arguments":
        call = tree.body[0].value  # type: ignore[attr-defined]
        return Counter(ast.unparse(arg) for arg in call.args)
    return Counter(ast.unparse(stmt.value.func) for stmt in tree.body if isinstance(stmt, ast.Expr))  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", sorted(SHAPES))
@settings(database=None, deadline=None, derandomize=True, max_examples=200)
@given(data=st.data())
def test_a_merge_never_holds_an_item_more_often_than_a_side(
    shape: str, data: st.DataObject
) -> None:
    """Whatever both sides add, remove or add alike, the merge holds no item more often
    than omni's or upstream's list does: a common change is written once, never twice."""
    base = data.draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    omni, upstream = data.draw(_edited(base)), data.draw(_edited(base))
    write = SHAPES[shape]
    merged = merge3.merge(write(base), write(omni), write(upstream))
    if isinstance(merged, merge3.Clash):
        return
    most = Counter(omni) | Counter(upstream)
    held = _held(shape, merged.text)
    assert all(count <= most[name] for name, count in held.items()), (base, omni, upstream)


def test_statements_both_sides_appended_to_a_body_clash() -> None:
    """Statement order is data flow: what both sides appended to a body is a clash (no
    upstream's first), and no evidence that omni wrote against an older release."""
    statements = merge3.merge("a()\n", "a()\nmine()\n", "a()\ntheirs()\n")
    assert isinstance(statements, merge3.Clash)
    assert not merge3.written_against("a()\n", "a()\nmine()\n", "a()\ntheirs()\n")


#: A record the output defines: ``extras`` (omni's field) before ``slots`` (upstream's).
OMNI_FIRST = (("State", ("tokens", "logits", "extras", "slots")),)


@pytest.mark.parametrize(
    ("base", "omni", "upstream", "fields", "expected"),
    [
        pytest.param(
            "s = State(tokens, logits)\n",
            "s = State(tokens, logits, extras)\n",
            "s = State(tokens, logits, slots)\n",
            OMNI_FIRST,
            "s = State(tokens, logits, extras, slots)\n",
            id="construction-in-the-output-fields-order",
        ),
        pytest.param(
            "(tokens, logits) = self.state\n",
            "(tokens, logits, extras) = self.state\n",
            "(tokens, logits, slots) = self.state\n",
            OMNI_FIRST,
            "(tokens, logits, extras, slots) = self.state\n",
            id="unpacking-in-the-output-fields-order",
        ),
        pytest.param(
            "s = mod.State(tokens, logits)\n",
            "s = mod.State(tokens, logits, extras)\n",
            "s = mod.State(tokens, logits, slots)\n",
            (("State", ("tokens", "logits", "slots", "extras")),),
            "s = mod.State(tokens, logits, slots, extras)\n",
            id="upstream-first-where-the-output-says-so",
        ),
        pytest.param(
            "s = Other(tokens, logits)\n",
            "s = Other(tokens, logits, extras)\n",
            "s = Other(tokens, logits, slots)\n",
            OMNI_FIRST,
            "s = Other(tokens, logits, slots, extras)\n",
            id="no-record-defined-upstream-first-as-before",
        ),
        pytest.param(
            "(tokens,) = self.split()\n",
            "(tokens, extras) = self.split()\n",
            "(tokens, slots) = self.split()\n",
            OMNI_FIRST,
            "(tokens, slots, extras) = self.split()\n",
            id="targets-that-are-not-all-the-fields-upstream-first-as-before",
        ),
        pytest.param(
            "s = State(tokens, logits)\n",
            "s = State(tokens, logits, extras.x)\n",
            "s = State(tokens, logits, slots)\n",
            OMNI_FIRST,
            "s = State(tokens, logits, slots, extras.x)\n",
            id="not-bare-names-upstream-first-as-before",
        ),
    ],
)
def test_both_appended_follow_the_fields_the_output_defines(
    base: str, omni: str, upstream: str, fields: Fields, expected: str
) -> None:
    merged = merge3.merge(base, omni, upstream, fields)
    assert isinstance(merged, merge3.Merged), getattr(merged, "reason", "")
    assert merged.text == expected


def test_both_appended_fields_that_interleave_clash() -> None:
    fields = (("State", ("tokens", "logits", "extras", "slots", "more")),)
    merged = merge3.merge(
        "s = State(tokens, logits)\n",
        "s = State(tokens, logits, extras, more)\n",
        "s = State(tokens, logits, slots)\n",
        fields,
    )
    assert isinstance(merged, merge3.Clash)
    assert "interleave" in merged.reason
