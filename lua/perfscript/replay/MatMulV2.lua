-- MatMulV2: torch.mm(A, B^T) with exactly two inputs (perfscript/replay/matmul.lua).
return require("perfscript.replay.matmul")(true)
