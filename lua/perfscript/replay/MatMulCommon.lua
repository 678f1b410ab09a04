-- MatMulCommon: torch.mm(A, B^T); extra inputs (a bias) are ignored (perfscript/replay/matmul.lua).
return require("perfscript.replay.matmul")(false)
