"""Static verification of generated runner modules, against pinned sources read as text.

Nothing is ever imported: every module, generated or pinned, is read with ``ast``. The
checks, in the order ``verify`` runs them:

1. each module parses and compiles (OP501); a module that does not is not checked further;
2. pyflakes: undefined names (OP502), names defined twice (OP503), imports that splicing
   left unused (OP504; imports the source module already left unused are allowed);
3. imports of ``checked_packages`` resolve against the package sources (OP505); imports of
   a checked package whose source is not given are one note per package (OP506);
4. a placed block reads no local name that is not bound on every path before it (OP507; a
   read an open conflict's commented-out code would bind names that conflict: ``bindings``);
5. copied members still exist upstream with a compatible signature (OP508), and every
   ``self.<attr>`` a placed block reads is still defined by the classes involved (OP509);
6. every call whose definition can be read fits its parameters or fields, every unpacking
   of a NamedTuple-typed value fits its fields, and a copied NamedTuple or dataclass keeps
   the fields of its upstream original (OP510; at an upstream statement a conflict replaced
   in its base, the finding names that conflict: ``kept``);
7. a copied method runs no call statement more often than both the new upstream method and
   the old runner's method do (OP512; only when the omni sources are given).
8. every row that says "placed" names lines of the output: the block's code, or upstream's
   statements that stand for it (OP513);
9. a recorded resolution has a block's own code replace only upstream statements it
   replaced in its base: others would be upstream code deleted (OP514; only when the
   resolved blocks are given);
10. a copied method, and every function nested in it, binds no local that nothing reads
    (OP515; a note when upstream's own method or the old runner's has the same dead store);
11. a copied method still calls every method of its class that upstream's own version
    calls (OP516; a note when a placed block replaced the statement that made the call,
    only when the blocks are given).

One module per check: ``names``, ``imports``, ``bindings``, ``overrides``, ``attributes``,
``arguments``, ``repeats``, ``rows``, ``resolutions``, ``deadstores`` (over ``stores``),
``hooks``, and ``kept`` (findings a conflict causes); ``context`` holds what they are
checked against.

What cannot be known from the given sources is a note (OP506), never a pass and never an
error. Known limits, all on the side of silence or of a note rather than a false error
unless said otherwise:

- a module with a star import or a module ``__getattr__`` defines every name; other
  dynamic definitions (``globals()[...]``, computed ``setattr``) are not seen, and an
  import inside a ``try`` that catches ImportError is taken as optional and not checked;
- the binding analysis is path-insensitive: ``if a: x = 1`` then ``if a: use(x)`` is
  reported (as a note when the upstream method itself does the same). Loop bodies bind
  nothing after the loop (their ``else`` does, when no ``break`` can skip it); a ``with``
  body is assumed to run to its end; reads inside nested functions and lambdas (which run
  later) and blocks at class level are not checked;
- an attribute counts as defined when any class of the generated class's or the upstream
  class's hierarchy assigns ``self.<attr>`` (or ``setattr(self, "<attr>", ...)``) or
  defines it at class level; assignments from outside the class are not seen, and a
  ``__getattr__`` anywhere in the hierarchy defines everything;
- only copies are checked as overrides (omni-owned methods are not), and decorated
  signatures are taken at face value;
- a call is checked only when its callee resolves for certain (see ``arguments``): a
  name bound locally by anything but one ``def`` or import, a method an instance attribute
  may shadow, a decorator not known to keep a signature, or a class with an unreadable
  base, a metaclass or ``__new__`` is skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from omni_port.model import Block, Code, Finding, Placement
from omni_port.pyast.packages import Function, PackageSources, module_names
from omni_port.pyast.parser import compile_findings, parse_ast
from omni_port.verify.arguments import argument_findings
from omni_port.verify.attributes import attribute_findings
from omni_port.verify.bindings import binding_findings, originals
from omni_port.verify.context import (
    Context,
    Override,
    blocks_of,
    is_placed_block,
    overrides_of,
    unused_in_source_of,
    world_of,
)
from omni_port.verify.deadstores import dead_store_findings
from omni_port.verify.hooks import hook_findings
from omni_port.verify.imports import import_findings
from omni_port.verify.kept import with_keepers
from omni_port.verify.names import name_findings
from omni_port.verify.overrides import override_findings
from omni_port.verify.repeats import repeat_findings
from omni_port.verify.resolutions import resolution_findings, resolved_blocks
from omni_port.verify.rows import row_findings

# Inputs are re-exported: callers build them from ``checks``.
__all__ = [
    "Context",
    "Override",
    "PackageSources",
    "blocks_of",
    "module_names",
    "overrides_of",
    "placed_findings",
    "resolved_blocks",
    "unused_in_source_of",
    "verify",
]


def verify(
    modules: Mapping[str, str],
    placements: Sequence[Placement],
    overrides: Sequence[Override],
    context: Context,
    resolved: Sequence[Block] = (),
    blocks: Sequence[Block] = (),
) -> list[Finding]:
    """Every finding about the generated ``modules`` (file name -> text), sorted.

    ``placements`` say where each block landed (only placed insertions and replacements
    are checked); ``overrides`` name the copied members; ``resolved`` are the blocks with
    a recorded resolution (``resolved_blocks``); ``blocks`` every statement-level block
    (``blocks_of``). Never raises on bad input text.
    """
    world = world_of(modules, context)
    trees: dict[str, ast.Module] = {}
    findings: list[Finding] = []
    for name in sorted(modules):
        broken = compile_findings(name, modules[name])
        findings.extend(broken)
        if not broken:
            try:
                trees[name] = parse_ast(modules[name], name)
            except SyntaxError as deep:  # compiles, but nests too deeply for the checks
                line, col = deep.lineno or 1, deep.offset or 1
                findings.append(Finding(Code.OP501, name, line, deep.msg, col))
    for name, tree in trees.items():
        rows = [p for p in placements if p.module == name and is_placed_block(p)]
        mine = [o for o in overrides if o.module == name]
        copied = originals(world, context.upstream, mine)
        allowed = frozenset(context.unused_in_source.get(name, ()))
        findings.extend(_names(name, modules[name], tree, rows, copied, allowed))
        findings.extend(attribute_findings(world, name, tree, rows, mine, context))
        findings.extend(repeat_findings(world, name, tree, mine, context))
        findings.extend(dead_store_findings(world, name, modules[name], tree, mine, context))
    findings.extend(import_findings(world, trees, context))
    findings.extend(override_findings(world, trees, overrides, context.upstream))
    findings.extend(argument_findings(world, trees, overrides, context))
    findings.extend(hook_findings(world, trees, overrides, placements, blocks, context))
    findings.extend(row_findings(placements, frozenset(modules)))
    findings.extend(resolution_findings(resolved, placements, overrides, context.upstream))
    findings = with_keepers(findings, modules, trees, overrides, placements, blocks)
    return sorted(findings, key=lambda f: (f.path, f.line, f.col, f.code, f.message))


def placed_findings(
    name: str,
    text: str,
    placements: Sequence[Placement],
    overrides: Sequence[Override],
    context: Context,
) -> list[Finding]:
    """The checks of one generated module whose outcome where a block stands decides (a
    conflict's candidate is tried with them): it compiles (OP501), pyflakes' names
    (OP502, OP503, OP504), every local a placed block reads is bound before it (OP507),
    and a placed row names lines of the output (OP513). ``context`` needs no package
    source: these read the module and the upstream alone."""
    broken = compile_findings(name, text)
    if broken:
        return broken
    world = world_of({name: text}, context)
    tree = ast.parse(text, filename=name)
    blocks = [p for p in placements if p.module == name and is_placed_block(p)]
    mine = [o for o in overrides if o.module == name]
    copied = originals(world, context.upstream, mine)
    allowed = frozenset(context.unused_in_source.get(name, ()))
    found = _names(name, text, tree, blocks, copied, allowed)
    return [*found, *row_findings(placements, frozenset({name}))]


def _names(
    name: str,
    text: str,
    tree: ast.Module,
    blocks: Sequence[Placement],
    copied: Mapping[tuple[str, str], Function],
    allowed: frozenset[str],
) -> list[Finding]:
    """Checks 2 and 4 of one module: pyflakes' names (``allowed``: imports the source left
    unused), and the locals blocks read (``copied``: the upstream method of each copy)."""
    binding, covered = binding_findings(name, text, tree, blocks, copied)
    return [*name_findings(name, text, allowed, covered), *binding]
