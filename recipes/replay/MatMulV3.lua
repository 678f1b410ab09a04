-- MatMulV3: torch.mm(A, B^T) with exactly two inputs (recipes/replay/matmul.lua).
return require("replay.matmul")(true)
