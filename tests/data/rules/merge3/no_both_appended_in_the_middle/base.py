call(a, b)
