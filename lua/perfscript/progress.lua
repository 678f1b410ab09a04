-- perfscript.progress: a progress bar on stderr, drawn only when stderr is a terminal (logs
-- and pipes stay clean) and redrawn at most a few times a second.
--   local bar = progress.new("Aggregate", total_bytes, {min_total = 8 << 20})
--   bar:update(done, "detail")  ...  bar:finish()
local term = require "perfscript.term"

local M = {}
local Bar = {}
Bar.__index = Bar

local WIDTH = 30

-- The bar text of the Python tools perfscript replaces: "[####------]".
function M.render(current, total, width)
  width = width or WIDTH
  if total <= 0 then return "[" .. string.rep("-", width) .. "]" end
  local ratio = math.min(math.max(current / total, 0), 1)
  local filled = math.min(width, math.floor(ratio * width))
  return "[" .. string.rep("#", filled) .. string.rep("-", width - filled) .. "]"
end

-- opts.min_total: draw nothing when total is below it; opts.force: draw even without a tty;
-- opts.stream: where to draw (default io.stderr).
function M.new(stage, total, opts)
  opts = opts or {}
  local active = (opts.force or term.isatty(2)) and total >= (opts.min_total or 0)
  return setmetatable({ stage = stage, total = total, active = active, last = -1,
                        out = opts.stream or io.stderr, drawn = false }, Bar)
end

function Bar:update(current, detail)
  if not self.active then return end
  local now = os.clock()
  if now - self.last < 0.1 and current < self.total then return end
  self.last = now
  local pct = self.total > 0 and math.floor(100 * math.min(current / self.total, 1)) or 0
  local line = string.format("\r%s %s %3d%%%s", self.stage, M.render(current, self.total), pct,
    detail and detail ~= "" and (" | " .. detail) or "")
  local cols = term.columns()
  if cols and #line > cols then line = line:sub(1, cols) end
  self.out:write(line, "\27[K")
  self.out:flush()
  self.drawn = true
end

function Bar:finish()
  if self.drawn then
    self.out:write("\r\27[K")
    self.out:flush()
  end
  self.drawn = false
end

return M
