-- GLM-5.2: the same numbers as GLM-5.1 (the Python original's presets); only name and key differ.
local p = {}
for k, v in pairs(require "perfscript.models.glm_5_1") do p[k] = v end
p.model_id, p.name, p.model_key = "zai-org/GLM-5.2", "GLM-5.2", "glm52"
return p
