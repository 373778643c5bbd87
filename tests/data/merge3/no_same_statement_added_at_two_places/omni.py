prepare(batch)
sync_streams()  # omni
run(batch)
