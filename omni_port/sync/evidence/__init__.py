"""The evidence the placement rules read, worked out from what the sources stage loaded.

Places scored against an anchor (``places``), upstream history of a member (``history``),
data flow (``flow``), the catalog's Location lines (``catalog``) and the code around a
place (``code``). Nothing here reads a file or imports a rule; answers asked again within
a run are kept for it (``pyast.memo``), never longer.
"""
