prepare(batch)
run(batch)
sync_streams()
