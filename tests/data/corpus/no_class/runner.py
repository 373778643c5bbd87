from fakeacc.runner_v1 import NPUModelRunner


def execute_model(runner, batch):
    runner.prepare(batch)
    # ---------- Omni-new ----------
    runner.omni_hook(batch)
    # ---------- Omni-new ----------
    return runner.model(batch)
