"""Method resolution order: the C3 linearization used by verify and parity matches Python's."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from omni_port.pyast.packages import c3_linearization


@st.composite
def hierarchies(draw: st.DrawFn) -> dict[str, tuple[str, ...]]:
    """Classes C0..Cn, each with distinct bases among the classes defined before it."""
    count = draw(st.integers(1, 8))
    graph: dict[str, tuple[str, ...]] = {}
    for number in range(count):
        earlier = [f"C{i}" for i in range(number)]
        bases = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        graph[f"C{number}"] = tuple(bases)
    return graph


def _python_mro(graph: dict[str, tuple[str, ...]], start: str) -> list[str] | None:
    classes: dict[str, type] = {}
    try:
        for name, bases in graph.items():
            classes[name] = type(name, tuple(classes[b] for b in bases) or (object,), {})
    except TypeError:  # an order Python refuses
        return None
    return [c.__name__ for c in classes[start].__mro__ if c is not object]


@given(hierarchies())
def test_c3_matches_python(graph: dict[str, tuple[str, ...]]) -> None:
    start = max(graph)
    expected = _python_mro(graph, start)
    assume(expected is not None)
    assert c3_linearization(start, lambda n: graph[n], lambda n: n) == expected


def test_an_inconsistent_or_cyclic_hierarchy_still_lists_each_class_once() -> None:
    graph = {"A": ("X", "Y"), "B": ("Y", "X"), "C": ("A", "B"), "X": (), "Y": ()}
    order = c3_linearization("C", lambda n: graph[n], lambda n: n)
    assert sorted(order) == ["A", "B", "C", "X", "Y"] and order[0] == "C"
    cyclic = {"A": ("A", "B"), "B": ("A",)}
    assert c3_linearization("A", lambda n: cyclic[n], lambda n: n) == ["A", "B"]
