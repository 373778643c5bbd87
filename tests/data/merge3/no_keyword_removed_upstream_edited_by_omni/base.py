build(name=name, size=8, kind=kind)
