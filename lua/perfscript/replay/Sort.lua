-- Sort: torch.sort(x, dim=-1, descending=True); exactly one input.
return require("perfscript.replay.common").simple("torch.sort", 1, { dim = -1, descending = true })
