prepare(batch, pad=True)
sync_streams()
run(batch)
