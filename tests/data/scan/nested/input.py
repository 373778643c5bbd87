def f(x):
    # ---------- Omni-new ----------
    if x:
        # ---------- Omni-new ----------
        x += 1
        # ---------- Omni-new ----------
    # ---------- Omni-new ----------
    return x
