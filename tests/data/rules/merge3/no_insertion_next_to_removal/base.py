record(first)
notify(second)
