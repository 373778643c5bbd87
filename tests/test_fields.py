"""The fields of the records a module defines, and the places that fill them out of order
(``omni_port.pyast.fields``)."""

from __future__ import annotations

from textwrap import dedent

from omni_port.pyast import fields

MODULE = dedent(
    """\
    from dataclasses import dataclass
    from typing import NamedTuple


    class State(NamedTuple):
        \"\"\"Kept between two calls.\"\"\"

        tokens: list
        extras: object
        slots: dict | None = None


    @dataclass(frozen=True)
    class Point:
        x: int
        y: int


    class Plain:
        z: int
    """
)


def test_defined_reads_namedtuples_and_dataclasses_in_field_order() -> None:
    assert fields.defined([MODULE]) == (
        ("Point", ("x", "y")),
        ("State", ("tokens", "extras", "slots")),
    )


def test_a_record_two_modules_define_differently_says_nothing() -> None:
    other = "from typing import NamedTuple\nclass Point(NamedTuple):\n    y: int\n    x: int\n"
    assert fields.defined([MODULE, other]) == (("State", ("tokens", "extras", "slots")),)
    assert fields.defined([MODULE, MODULE]) == fields.defined([MODULE])


def test_misordered_finds_a_construction_or_an_unpacking_out_of_field_order() -> None:
    known = fields.defined([MODULE])
    assert fields.misordered("s = State(tokens, slots, extras)\n", known)
    assert fields.misordered("(tokens, slots, extras) = self.state\n", known)
    assert not fields.misordered("s = State(tokens, extras, slots)\n", known)
    assert not fields.misordered("(tokens, extras, slots) = self.state\n", known)
    assert not fields.misordered("s = State(tokens, None, slots)\n", known)
    assert not fields.misordered("s = Other(tokens, slots, extras)\n", known)
    assert not fields.misordered("(a, b) = pair\n", known)
    # Two of a record's fields bound from something else: no unpacking of the record.
    assert not fields.misordered("(extras, tokens) = self.split()\n", known)
