"""Where names of package sources are defined, and what calls to them may pass (read as text)."""

from __future__ import annotations

import textwrap

import pytest

from omni_port.pyast.definitions import Target, class_member, module_member, resolve_dotted
from omni_port.pyast.packages import Class, World, class_hierarchy, module_class
from omni_port.pyast.signatures import Binding, call_signature

SOURCES = {
    "pkg": "from pkg.impl import helper\nfrom pkg import sub\n",
    "pkg.impl": textwrap.dedent(
        """
        from pkg.base import Base as Root


        def helper(a, b=1):
            return a


        def twice(x):
            return x


        twice = staticmethod(twice)


        class Child(Root):
            def run(self, *, steps):
                return steps
        """
    ),
    "pkg.base": "class Base:\n    def __init__(self, config):\n        self.config = config\n",
    "pkg.sub": "VALUE = 1\n",
    "pkg.stars": "from pkg.impl import *\nfrom pkg.base import *\n",
    "pkg.both": "from pkg.impl import *\nfrom pkg.other import *\n",
    "pkg.other": "def helper(c):\n    return c\n",
}
WORLD = World(SOURCES, frozenset({"pkg"}), frozenset({"pkg"}))


@pytest.mark.parametrize(
    ("dotted", "expected"),
    [
        pytest.param("pkg.helper", "pkg.impl.helper", id="package-reexport"),
        pytest.param("pkg.impl.Child", "pkg.impl.Child", id="class"),
        pytest.param("pkg.impl.Child.run", "pkg.impl.Child.run", id="method"),
        pytest.param("pkg.impl.Root", "pkg.base.Base", id="import-alias"),
        pytest.param("pkg.stars.Base", "pkg.base.Base", id="star-import"),
        pytest.param("pkg.sub", "pkg.sub", id="submodule"),
        pytest.param("pkg.impl.twice", None, id="def-then-assigned"),
        pytest.param("pkg.both.helper", None, id="two-star-imports-provide-it"),
        pytest.param("pkg.impl.missing", None, id="missing"),
        pytest.param("elsewhere.thing", None, id="unread-package"),
    ],
)
def test_resolve_dotted(dotted: str, expected: str | None) -> None:
    found = resolve_dotted(WORLD, dotted)
    assert (found.qualified if found else None) == expected


def test_a_method_is_found_along_the_bases_and_binds_its_instance() -> None:
    tree = WORLD.tree("pkg.impl")
    node = module_class(tree, "Child") if tree is not None else None
    assert node is not None
    child = Class("pkg.impl", node)
    init = class_member(class_hierarchy(WORLD, child), "__init__")
    assert init is not None and init.qualified == "pkg.base.Base.__init__"
    bound = call_signature(WORLD, init, Binding.INSTANCE)
    plain = call_signature(WORLD, init, Binding.PLAIN)
    assert bound is not None and [p.name for p in bound.params] == ["config"]
    assert plain is not None and [p.name for p in plain.params] == ["self", "config"]
    constructor = call_signature(WORLD, Target("pkg.impl", child.node), Binding.PLAIN)
    assert constructor is not None and constructor.name == "pkg.impl.Child"
    assert [p.name for p in constructor.params] == ["config"]


def test_module_member_of_a_module_nobody_gave_is_nothing() -> None:
    assert module_member(WORLD, "absent", "x") is None
