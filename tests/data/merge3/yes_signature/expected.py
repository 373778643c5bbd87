@torch.inference_mode()
def run(
    self,
    batch: int,
    mode: Mode | None = None,
    force: bool = False,
    loras: int = 0,
    capture: bool = False,
) -> OmniOutput:
    ...
