prepare(batch)
record_omni(batch)  # omni
sync_streams()
run(batch)
