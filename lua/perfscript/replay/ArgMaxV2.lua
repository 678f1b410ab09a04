-- ArgMaxV2: torch.argmax(x, dim=-1); exactly one input.
return require("perfscript.replay.common").simple("torch.argmax", 1, { dim = -1 })
