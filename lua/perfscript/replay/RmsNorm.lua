-- RmsNorm: torch_npu.npu_rms_norm(x, gamma) with the default epsilon; exactly two inputs.
return require("perfscript.replay.common").simple("torch_npu.npu_rms_norm", 2)
