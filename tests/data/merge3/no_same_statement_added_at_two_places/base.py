prepare(batch)
run(batch)
