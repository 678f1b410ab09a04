-- Paths and directory trees: the one home of the small helpers every module needs (trim,
-- basename, dirname, join, normalize, abspath, isdir, isfile, read, walk, copy_tree, rmtree).
-- Misuse raises; I/O problems return nil, message.
local lfs = require "lfs"

local M = {}

-- s without surrounding whitespace (nil -> "").
function M.trim(s)
  return (tostring(s or ""):gsub("^%s+", ""):gsub("%s+$", ""))
end

-- The last component ("a/b/" -> "b").
function M.basename(p)
  return (p:gsub("/+$", ""):match("([^/]+)$")) or p
end

-- Everything before the last "/" ("." when there is none).
function M.dirname(p)
  return p:match("^(.*)/[^/]*$") or "."
end

-- The parts joined with single slashes ("a/", "/b" -> "a/b"); the first keeps a leading "/".
function M.join(...)
  local n = select("#", ...)
  local parts = {}
  for i = 1, n do
    local p = select(i, ...)
    if i > 1 then p = p:gsub("^/+", "") end
    if i < n then p = p:gsub("/+$", "") end
    parts[#parts + 1] = p
  end
  return table.concat(parts, "/")
end

-- p with "." components, repeated slashes and "dir/.." pairs removed, lexically (no file system
-- access): "recipes/../data/./x/" -> "data/x". A leading ".." of a relative path stays.
function M.normalize(p)
  local abs = p:sub(1, 1) == "/"
  local out = {}
  for part in p:gmatch("[^/]+") do
    if part == ".." then
      if #out > 0 and out[#out] ~= ".." then
        out[#out] = nil
      elseif not abs then
        out[#out + 1] = part
      end
    elseif part ~= "." then
      out[#out + 1] = part
    end
  end
  local s = table.concat(out, "/")
  if abs then return "/" .. s end
  return s == "" and "." or s
end

-- p made absolute against the current directory, normalized.
function M.abspath(p)
  if p:sub(1, 1) == "/" then return M.normalize(p) end
  return M.normalize(lfs.currentdir() .. "/" .. p)
end

function M.isdir(p) return lfs.attributes(p, "mode") == "directory" end
function M.isfile(p) return lfs.attributes(p, "mode") == "file" end

-- The whole file, or nil, message. Only a regular file is read (a FIFO would block).
function M.read(p)
  local ok, cerr = require("perfscript.fs").check_input(p)
  if not ok then return nil, cerr end
  local f, err = io.open(p, "rb")
  if not f then return nil, err end
  local text, rerr = f:read("a")
  f:close()
  if not text then return nil, p .. ": " .. tostring(rerr) end
  return text
end

-- Visits the tree under dir depth first, names sorted: visit(path, name, mode, rel) for each
-- entry, rel being its path below dir. mode is the entry's own ("link" for a symbolic link),
-- or with opts.follow the link target's (a link to a directory is then descended into).
-- A directory is descended into after its visit unless visit returns false.
function M.walk(dir, visit, opts)
  local follow = opts and opts.follow
  local function go(d, rel)
    local names = {}
    for name in lfs.dir(d) do
      if name ~= "." and name ~= ".." then names[#names + 1] = name end
    end
    table.sort(names)
    for _, name in ipairs(names) do
      local p = d .. "/" .. name
      local mode = (follow and lfs.attributes(p, "mode")) or lfs.symlinkattributes(p, "mode")
      if visit(p, name, mode, rel .. name) ~= false and mode == "directory" then
        go(p, rel .. name .. "/")
      end
    end
  end
  go(dir, "")
end

-- Copies the files under src into dst (directories made as needed, each file written
-- atomically). Names starting with "." are skipped (the lock file, temporaries), and so are
-- opts.skip[name]; with opts.keep_existing a file already in dst is left alone.
-- Returns the number of files written, or nil, message.
function M.copy_tree(src, dst, opts)
  opts = opts or {}
  if not M.isdir(src) then return nil, src .. ": not a directory" end
  local fs = require "perfscript.fs"
  local ok, err = fs.mkdir_p(dst)
  if not ok then return nil, err end
  local n = 0
  for name in lfs.dir(src) do
    if name:sub(1, 1) ~= "." and not (opts.skip and opts.skip[name]) then
      local s, d = src .. "/" .. name, dst .. "/" .. name
      if M.isdir(s) then
        local m, cerr = M.copy_tree(s, d, opts)
        if not m then return nil, cerr end
        n = n + m
      elseif not (opts.keep_existing and M.isfile(d)) then
        local text, rerr = M.read(s)
        if not text then return nil, rerr end
        local wok, werr = fs.write_atomic(d, text)
        if not wok then return nil, werr end
        n = n + 1
      end
    end
  end
  return n
end

-- Removes p and everything under it (links are removed, not followed). Returns true or nil, message.
function M.rmtree(p)
  local mode = lfs.symlinkattributes(p, "mode")
  if mode == "directory" then
    for name in lfs.dir(p) do  -- removes what it can; rmdir then says what is left
      if name ~= "." and name ~= ".." then M.rmtree(p .. "/" .. name) end
    end
    return lfs.rmdir(p)
  elseif mode then
    return os.remove(p)
  end
  return true
end

return M
