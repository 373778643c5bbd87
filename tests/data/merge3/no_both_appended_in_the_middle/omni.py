call(a, omni_arg, b)
