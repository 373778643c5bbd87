build(name=name, kind=kind)
