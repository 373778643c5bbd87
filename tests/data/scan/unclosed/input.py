def f():
    a = 1
    # ---------- Omni-new ----------
    b = 2
    c = 3
