call(a, upstream_arg, b)
