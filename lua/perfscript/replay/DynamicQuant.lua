-- DynamicQuant: torch_npu.npu_dynamic_quant(x); exactly one input.
return require("perfscript.replay.common").simple("torch_npu.npu_dynamic_quant", 1)
