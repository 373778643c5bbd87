"""The evidence rules of the placement engine, one module per kind of evidence.

``locate`` asks them in a fixed order (see its docstring) and records which decided:
``anchor`` (scores places against a block's anchor), ``history`` (what upstream releases
say about an unmarked edit), ``convergent`` (upstream made omni's change), ``merge3`` (both
sides edited one statement), ``catalog`` (the maintainers' ``Location:`` lines),
``dataflow`` and ``layout`` (which side of new upstream code a block goes).
"""
