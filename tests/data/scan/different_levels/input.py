def f(x):
    a = 1
    # ---------- Omni-new ----------
    if x:
        b = 2
        # ---------- Omni-new ----------
    return a
