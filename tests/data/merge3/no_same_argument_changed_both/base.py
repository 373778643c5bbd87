run(model, batch, 1)
