build(name=name, size=16, kind=kind)
