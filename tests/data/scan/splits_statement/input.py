def f(x):
    result = call(
        x,
        # ---------- Omni-new ----------
        extra=1,
        # ---------- Omni-new ----------
    )
    return result
