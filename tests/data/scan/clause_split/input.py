def f(x):
    if x:
        a = 1
    # ---------- Omni-new ----------
    else:
        a = 2
    # ---------- Omni-new ----------
    return a
