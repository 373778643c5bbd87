from fakeomni.npu.npu_model_runner import OmniNPUModelRunner

__all__ = ["OmniNPUModelRunner"]
