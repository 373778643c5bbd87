prepare(batch, pad=True)
record_omni(batch)  # omni
sync_streams()
run(batch)
