@torch.inference_mode()
def run(
    self,
    batch: int,
    mode: Mode | None = None,
    force: bool = False,
    capture: bool = False,
) -> OmniOutput:
    ...
