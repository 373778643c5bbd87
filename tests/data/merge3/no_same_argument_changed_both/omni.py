run(model, batch, 2)
