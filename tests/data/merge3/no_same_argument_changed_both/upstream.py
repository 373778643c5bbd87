run(model, batch, 3)
