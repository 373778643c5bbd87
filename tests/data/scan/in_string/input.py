def f():
    doc = """
    # ---------- Omni-new ----------
    not a marker: this is string content
    # ---------- Omni-new ----------
    """
    return doc
