"""The fields of the records a module defines, and the calls and unpackings that fill them.

A NamedTuple's or a dataclass's fields are positions: ``State(a, b)`` fills the first two,
``(a, b) = state`` binds them. Where both sides of a merge appended arguments to such a
call, the order of the record's fields as the output defines them decides theirs
(``pyast.merge3``); this module reads those fields and finds the places that fill them out
of order, by the convention both vLLM and omni keep (and verify checks, OP510): a bare name
passed or bound at a field's position is that field's value.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence

#: Each record's name with its field names in order, as one module (or several) defines
#: them: the positions its constructions and unpackings fill.
Fields = tuple[tuple[str, tuple[str, ...]], ...]


def defined(texts: Sequence[str]) -> Fields:
    """The records (NamedTuple and dataclass classes at module level) ``texts`` define,
    with their fields in order, by name; a name two texts define differently, or a text
    that does not parse, says nothing."""
    found: dict[str, tuple[str, ...] | None] = {}
    for text in texts:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            names = _record(node)
            if names is None:
                continue
            assert isinstance(node, ast.ClassDef)
            seen = found.setdefault(node.name, names)
            if seen != names:
                found[node.name] = None
    return tuple((name, names) for name, names in sorted(found.items()) if names is not None)


def _record(node: ast.stmt) -> tuple[str, ...] | None:
    """The fields of a NamedTuple or dataclass class, in order; None for anything else."""
    if not isinstance(node, ast.ClassDef):
        return None
    bases = {_last_name(b) for b in node.bases}
    decorators = {_last_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
    if "NamedTuple" not in bases and "dataclass" not in decorators:
        return None
    return tuple(
        s.target.id
        for s in node.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    )


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def callee(call: ast.Call) -> str:
    """The name a call calls (its last part), "" when it calls no name."""
    return _last_name(call.func)


def unpacked(names: Sequence[str], fields: Mapping[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """The fields of the one record whose fields ``names`` are, every one (the record a
    tuple of targets unpacks: ``a, b = pair`` binds two names, not some record's fields);
    None when no record, or more than one, has exactly those."""
    holding = [f for f in fields.values() if set(names) == set(f)]
    return holding[0] if len(holding) == 1 else None


def misordered(text: str, fields: Fields) -> bool:
    """Whether ``text`` constructs or unpacks a record of ``fields`` with a bare name at the
    position of another field of that name."""
    by_name = dict(fields)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return any(_out_of_order(items, order) for items, order in _sites(tree, by_name))


def _sites(
    tree: ast.Module, fields: Mapping[str, tuple[str, ...]]
) -> Iterator[tuple[list[ast.expr], tuple[str, ...]]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and callee(node) in fields:
            yield node.args, fields[callee(node)]
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple | ast.List):
            items = node.targets[0].elts
            order = unpacked([i.id for i in items if isinstance(i, ast.Name)], fields)
            if order is not None:
                yield items, order


def _out_of_order(items: Sequence[ast.expr], order: tuple[str, ...]) -> bool:
    for at, item in enumerate(items):
        if isinstance(item, ast.Starred):
            return False
        if isinstance(item, ast.Name) and item.id in order and order.index(item.id) != at:
            return True
    return False
