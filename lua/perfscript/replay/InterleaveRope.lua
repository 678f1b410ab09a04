-- InterleaveRope: torch_npu.npu_interleave_rope(x, cos, sin); exactly three inputs.
return require("perfscript.replay.common").simple("torch_npu.npu_interleave_rope", 3)
