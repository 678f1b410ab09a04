-- perfscript.dbpath: where a database lives.
--   <root>/<DEVICE>/vllm_ascend/vllm<V>_torch<T>_cann<C>/<KernelType>.csv
-- The rules (docs/rules.md, Database paths) follow the Python original's `common.py` (device
-- list, version check, directory name). Unlike the original we do not guess versions from
-- installed Python packages: a run names its database with --database-path, or with the
-- three versions (a wrong guess would mix measurements of different stacks in one directory).
--
--   local dbpath = require "perfscript.dbpath"
--   dbpath.add_options(parser)            -- the flags, on a lua-argparse parser
--   local dir = dbpath.from_args(args)    -- resolved directory (perf.fail on a bad combination)
local paths = require "perfscript.path"

local M = {}

M.DEVICES = {
  "TEST_DEVICE",
  "ATLAS_800_A2_376T_64G",
  "ATLAS_800_A2_313T_64G",
  "ATLAS_800_A2_280T_64G",
  "ATLAS_800_A2_280T_64G_PCIE",
  "ATLAS_800_A2_280T_32G_PCIE",
  "ATLAS_800_A3_752T_128G_DIE",
  "ATLAS_800_A3_560T_128G_DIE",
}
M.DEFAULT_DEVICE = "ATLAS_800_A3_752T_128G_DIE"
M.FRAMEWORK_DIR = "vllm_ascend"
-- Environment variable naming the data root when --database-root is not given.
M.ROOT_ENV = "PERFSCRIPT_DB_ROOT"
-- The data root when neither --database-root nor $PERFSCRIPT_DB_ROOT names one.
M.DEFAULT_ROOT = "perfdb"
-- The stack of the bundled seed database (data/seed_db/<SEED_VERSION>) and of the grown
-- database <root>/<SEED_VERSION> that the grid recipes make from it.
M.SEED_VERSION = "ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

local trim = paths.trim

local is_device = {}
for _, d in ipairs(M.DEVICES) do is_device[d] = true end

-- The device name after trimming, or nil, message.
function M.check_device(name)
  local d = trim(tostring(name or ""))
  if not is_device[d] then
    return nil, string.format("unknown device '%s' (one of: %s)", tostring(name),
      table.concat(M.DEVICES, ", "))
  end
  return d
end

local VERSION_HINT = "Expected something like 0.9.2, 2.9.0, 8.5, or vllm0.13.0_torch2.8.0_cann8.3."

-- A version value: ASCII alphanumerics, groups joined by one of . _ + - ; trimmed.
-- Returns the trimmed value, or nil, message.
function M.check_version(value)
  local v = trim(tostring(value or ""))
  local ok = v ~= "" and v:find("^[%w._+-]+$") ~= nil
    and v:find("^%w") ~= nil and v:find("%w$") ~= nil
    and v:find("[._+-][._+-]") == nil
  if not ok then
    return nil, string.format("Invalid version value: '%s'. %s", tostring(value), VERSION_HINT)
  end
  return v
end

-- True when s is already a whole version directory name (vllm..._torch..._cann...).
function M.is_version_dir(s)
  return type(s) == "string" and s:find("^vllm.+_torch.+_cann.+$") ~= nil
end

-- One component of the name: drop its prefix (any case); vllm also drops a lone leading
-- v/V; torch drops a local build tag (+cu121).
function M.normalize_component(prefix, value)
  local v = trim(tostring(value or ""))
  if v:sub(1, #prefix):lower() == prefix then
    v = v:sub(#prefix + 1)
  elseif prefix == "vllm" and v:sub(1, 1):lower() == "v" then
    v = v:sub(2)
  end
  if prefix == "torch" then v = v:match("^[^+]*") end
  return trim(v)
end

-- vllm<V>_torch<T>_cann<C>
function M.version_dir(vllm, torch, cann)
  return string.format("vllm%s_torch%s_cann%s", M.normalize_component("vllm", vllm),
    M.normalize_component("torch", torch), M.normalize_component("cann", cann))
end

local join = paths.join

-- Resolves a database directory from a table with the fields database_path, database_root,
-- device, vllm_version, torch_version, cann_version (as argparse stores them).
-- Order: an explicit database_path wins (used verbatim); else a vllm value that is a whole
-- directory name, with torch and cann absent; else the three versions. Returns dir, or nil
-- and a message.
function M.resolve(o)
  if o.database_path and o.database_path ~= "" then return o.database_path end
  local device, err = M.check_device(o.device or M.DEFAULT_DEVICE)
  if not device then return nil, err end
  local versions = {}
  for _, k in ipairs { "vllm_version", "torch_version", "cann_version" } do
    if o[k] ~= nil then
      local v, verr = M.check_version(o[k])
      if not v then return nil, verr end
      versions[k] = v
    end
  end
  local name
  if versions.vllm_version and not versions.torch_version and not versions.cann_version
      and M.is_version_dir(versions.vllm_version) then
    name = versions.vllm_version
  else
    local missing = {}
    if not versions.vllm_version then missing[#missing + 1] = "vLLM-Ascend" end
    if not versions.torch_version then missing[#missing + 1] = "PyTorch" end
    if not versions.cann_version then missing[#missing + 1] = "CANN" end
    if #missing > 0 then
      return nil, string.format("Could not determine runtime stack version(s): %s. Specify "
        .. "--database-path or pass --vllm-version/--torch-version/--cann-version explicitly.",
        table.concat(missing, ", "))
    end
    name = M.version_dir(versions.vllm_version, versions.torch_version, versions.cann_version)
  end
  return join(M.root(o), device, M.FRAMEWORK_DIR, name)
end

-- The data root: --database-root, else $PERFSCRIPT_DB_ROOT, else ./perfdb.
function M.root(o)
  local root = o and o.database_root
  if root == nil or root == "" then root = os.getenv(M.ROOT_ENV) end
  if root == nil or root == "" then root = M.DEFAULT_ROOT end
  return root
end

-- True when o (parsed flags) names a database: --database-path or a version flag.
function M.given(o)
  return (o.database_path ~= nil and o.database_path ~= "") or o.vllm_version ~= nil
    or o.torch_version ~= nil or o.cann_version ~= nil
end

-- The bundled seed database, found from a recipe's path (recipes/<x>.lua), normalized.
function M.seed_dir(script)
  local repo = paths.dirname(script or "recipes/x.lua") .. "/.."
  return paths.normalize(join(repo, "data/seed_db", M.SEED_VERSION))
end

-- The default database (docs/rules.md, Database paths): the grown database
-- <root>/<SEED_VERSION> when it exists, else the bundled seed. opts.script: the recipe's path
-- (finds the seed); opts.write: the run writes, so the seed itself is never used: the grown
-- database is made as a copy of it first. Returns dir, how ("grown", "seed" or "created"),
-- info {grown=, seed=, copied=}; or nil, message.
function M.default(o, opts)
  opts = opts or {}
  local info = { grown = paths.normalize(join(M.root(o), M.SEED_VERSION)), copied = 0 }
  if paths.isdir(info.grown) then return info.grown, "grown", info end
  info.seed = M.seed_dir(opts.script)
  if not paths.isdir(info.seed) then
    return nil, string.format("no database given, no grown database %s, and the bundled seed "
      .. "database %s is missing; name one with --database-path", info.grown, info.seed)
  end
  if not opts.write then return info.seed, "seed", info end
  local n, err = paths.copy_tree(info.seed, info.grown)
  if not n then return nil, err end
  info.copied = n
  return info.grown, "created", info
end

-- The one line a run prints when it takes the default database.
function M.default_note(dir, how, info)
  if how == "grown" then
    return ("Database: %s (default: the grown database; name another with --database-path)."):format(dir)
  elseif how == "created" then
    return ("Created the working database %s (%d files copied from the bundled seed database %s); "
      .. "it is the default database from now on."):format(dir, info.copied, info.seed)
  end
  return ("Database: %s (default: the bundled seed database, as there is no grown database %s).")
    :format(dir, info.grown)
end

-- The --help sentence that states the default.
function M.default_help(write)
  local grown = "./" .. M.DEFAULT_ROOT .. "/" .. M.SEED_VERSION
  if write then
    return "Default: the grown database " .. grown .. " (under --database-root or $" .. M.ROOT_ENV
      .. " when set), created as a copy of the bundled seed database data/seed_db on first use."
  end
  return "Default: the grown database " .. grown .. " (under --database-root or $" .. M.ROOT_ENV
    .. " when set) when it exists, else the bundled seed database data/seed_db."
end

-- Like resolve, but a bad combination is a user error (perfscript: message, exit 1).
-- With opts (script=, write=, say=) and no database named, the default database: its one
-- line goes to opts.say (default: stderr). Returns dir, how (nil when named).
function M.from_args(args, opts)
  local perf = require "perfscript"
  if opts and not M.given(args) then
    local dir, how, info = M.default(args, opts)
    if not dir then perf.fail("%s", how) end
    local note = M.default_note(dir, how, info)
    if opts.say then opts.say(note) else io.stderr:write(note, "\n") end
    return dir, how
  end
  local dir, err = M.resolve(args)
  if not dir then perf.fail("%s", err) end
  return dir
end

-- The parts of a database directory path, when it follows the layout:
-- {root=, device=, version_dir=, vllm=, torch=, cann=, suffix=} or nil.
-- suffix is what follows the cann version after an underscore ("shape_generated").
function M.split(dir)
  local root, device, fw, name = tostring(dir):gsub("/+$", ""):match("^(.-)/?([^/]+)/([^/]+)/([^/]+)$")
  if not root or fw ~= M.FRAMEWORK_DIR or not M.is_version_dir(name) then return nil end
  local v, t, rest = name:match("^vllm(.-)_torch(.-)_cann(.+)$")
  local c, suffix = rest:match("^([^_]+)_(.+)$")
  return { root = root, device = device, version_dir = name, vllm = v, torch = t,
           cann = c or rest, suffix = suffix }
end

-- Adds the database flags to a lua-argparse parser (in a "Database" help group when the
-- parser supports groups). opts.required_path = true leaves only --database-path; opts.help
-- replaces its help text; opts.aliases are hidden old names of --database-path; opts.default
-- a default directory; opts.required makes --database-path required.
function M.add_options(parser, opts)
  opts = opts or {}
  local function version(v)
    local ok, err = M.check_version(v)
    if not ok then return nil, err end
    return ok
  end
  local elems = {
    parser:option("--database-path", opts.help
      or "Database directory to read and write (used as given; wins over the flags below).")
      :argname("<dir>"),
  }
  for _, a in ipairs(opts.aliases or {}) do elems[1]:hidden_name(a) end
  if opts.default then elems[1]:default(opts.default) end
  if opts.required then elems[1]:count(1) end
  if not opts.required_path then
    elems[#elems + 1] = parser:option("--database-root",
      "Data root holding <DEVICE>/vllm_ascend/<version dir> (default: $" .. M.ROOT_ENV
      .. ", else ./" .. M.DEFAULT_ROOT .. ").")
    elems[#elems + 1] = parser:option("--device",
      "Device folder name, one of:\n" .. table.concat(M.DEVICES, "\n"))
      :choices(M.DEVICES):default(M.DEFAULT_DEVICE):argname("<device>")
    elems[#elems + 1] = parser:option("--vllm-version",
      "vLLM-Ascend version, e.g. 0.18.0, or a whole version-dir name.")
      :convert(version)
    elems[#elems + 1] = parser:option("--torch-version", "PyTorch version, e.g. 2.9.0.")
      :convert(version)
    elems[#elems + 1] = parser:option("--cann-version", "CANN version, e.g. 8.5.")
      :convert(version)
  end
  if parser.group then parser:group("Database", table.unpack(elems)) end
  return parser
end

return M
