-- SwiGlu: torch_npu.npu_swiglu(x, dim=-1); exactly one input.
return require("perfscript.replay.common").simple("torch_npu.npu_swiglu", 1, { dim = -1 })
