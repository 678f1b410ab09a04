-- SoftmaxV2: torch.nn.functional.softmax(x, dim=-1); exactly one input.
return require("perfscript.replay.common").simple("torch.nn.functional.softmax", 1, { dim = -1 })
