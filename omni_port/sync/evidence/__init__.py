"""The evidence the placement rules read: pure functions over what the sources stage loaded.

Places scored against an anchor (``places``), upstream history of a member (``history``),
data flow (``flow``), the catalog's Location lines (``catalog``), the code around a place
(``code``) and the three-way statement merge (``merging``). Nothing here reads a file or
imports a rule; ``sync.facts`` works each answer out once per sync and keeps it.
"""
