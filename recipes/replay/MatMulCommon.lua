-- MatMulCommon: torch.mm(A, B^T); extra inputs (a bias) are ignored (recipes/replay/matmul.lua).
return require("replay.matmul")(false)
