"""The facts the placement rules read: everything about a copied member and its blocks,
worked out once per sync from the inputs.

``MemberFacts`` is one copied member in the new upstream (``member``, its module ``tree``)
with one provider per kind of fact, as LibCST's metadata providers are: a rule declares
the providers it reads (``PlacementRule.reads``) and reads no other (tests/test_rule_facts.py).

- ``Syntax``: the new upstream's code as text and as syntax, each text parsed once;
- ``Places``: the member's bodies, the places the anchor ranks for a block, its
  counterpart's place in omni's GPU runner;
- ``Flows``: what code binds and reads, and whether a block's code runs at a place;
- ``History``: what upstream history says about the member and each block;
- ``Calls``: call statements counted, now and in the old runner;
- ``Records``: what omni's records say besides the code (the catalog's ``Location:``,
  declarations of marked blocks), and whether the sync is an upgrade.

A provider's facts about a block take the block (``facts.history.rebase(block)``). Each
fact is worked out the first time a rule asks and kept in the facts object, the explicit
scope of one sync (as LibCST's metadata wrapper resolves each provider once): nothing is
kept past the sync, and nothing is worked out that no rule asks for.

sync, ``resolve`` and the upgrade summary build the same facts (``ModuleFacts``), so a
block is decided the same way by each of them.
"""

from __future__ import annotations

from omni_port.model import Stmt, Suite, Tree
from omni_port.pyast.syntax import split_full_key
from omni_port.sync.facts.calls import Calls
from omni_port.sync.facts.flows import Flows
from omni_port.sync.facts.history import History, keys_of
from omni_port.sync.facts.member import Inputs, MemberFacts
from omni_port.sync.facts.module import Declared, ModuleFacts, declared, upstream_owner
from omni_port.sync.facts.places import Places
from omni_port.sync.facts.records import Records
from omni_port.sync.facts.syntax import Syntax

#: Every provider, in the order a fact may depend on another's.
PROVIDERS = (Syntax, Places, Flows, History, Calls, Records)

#: What a provider is, for ``PlacementRule.reads``.
Provider = type[Syntax] | type[Places] | type[Flows] | type[History] | type[Calls] | type[Records]

__all__ = [
    "PROVIDERS",
    "Calls",
    "Declared",
    "Flows",
    "History",
    "Inputs",
    "MemberFacts",
    "ModuleFacts",
    "Places",
    "Provider",
    "Records",
    "Stmt",
    "Suite",
    "Syntax",
    "Tree",
    "declared",
    "keys_of",
    "split_full_key",
    "upstream_owner",
]
