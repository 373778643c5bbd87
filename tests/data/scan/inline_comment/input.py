def f(a, b):
    state = State(
        a,
        b,  # Omni-new
    )
    return state  # Omni-new: keep
