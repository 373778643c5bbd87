from fakeomni.npu.npu_ar_model_runner import ExecuteModelState, NPUARModelRunner

__all__ = ["ExecuteModelState", "NPUARModelRunner"]
