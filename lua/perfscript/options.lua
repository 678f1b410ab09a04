-- perfscript.options: the command-line options every recipe shares, in one home, on a
-- lua-argparse parser (docs/rules.md, Command line):
--   database  --database-path DIR (with dbpath's version flags); old spellings (--data-dir,
--             --csv-dir, a positional) are hidden aliases; --help states the default.
--   output    --output PATH; a recipe's older specific name (--output-path, --json-output,
--             --csv) stays as a hidden alias.
--   lists     comma lists, repeatable and accumulating: --ops A,B --ops C == --ops A B C.
--   verbosity -v/--verbose, -q/--quiet.
--   threads   --threads N (1 to 64; default: one per core, or $PERFSCRIPT_THREADS).
--
--   local options = require "perfscript.options"
--   options.database(p, { write = true, aliases = { "--data-dir" } })
--   options.output(p, "Write the rows as JSON.", { aliases = { "--json-output" } })
--   options.list(p, "--ops", "Operators to replay.")
--   local dir = options.database_dir(args, { write = true })   -- named, or the default (one line)
local dbpath = require "perfscript.dbpath"

local M = {}

local function hide(elem, aliases)
  for _, a in ipairs(aliases or {}) do elem:hidden_name(a) end
  return elem
end

-- The database flags. opts.write: the run writes (its default is the grown database, made
-- from the seed when missing); opts.default = false: no default (the flag or the version
-- flags are needed); opts.default = "text": a recipe's own default, said in --help;
-- opts.aliases: hidden old names of --database-path; opts.positional: the old optional
-- <database> argument, hidden; opts.required_path: only --database-path (no version flags);
-- opts.help: what the directory is; opts.default_value: a recipe's own default directory.
function M.database(parser, opts)
  opts = opts or {}
  local default
  if opts.default_value then
    default = ""  -- argparse prints "(default: ...)"
  elseif opts.default == false then
    default = opts.required_path and "Required." or "Required (or the version flags)."
  elseif type(opts.default) == "string" then
    default = opts.default
  else
    default = dbpath.default_help(opts.write)
  end
  dbpath.add_options(parser, { required_path = opts.required_path, aliases = opts.aliases,
    default = opts.default_value, required = opts.default == false and opts.required_path,
    help = (opts.help or "Database directory to read and write (used as given; wins over the "
      .. "version flags).") .. (default ~= "" and " " .. default or "") })
  if opts.positional then
    parser:argument("database", "Database directory (old spelling of --database-path).")
      :args("?"):hidden(true):target("database_positional")
  end
  return parser
end

-- The database directory the parsed flags name, else the default (unless the recipe has
-- none): one line says which default was taken. opts: write=, script= (the recipe's path;
-- default arg[0]), say= (default: stderr). Returns dir, how (nil when named).
function M.database_dir(args, opts)
  opts = opts or {}
  if args.database_positional then
    if args.database_path and args.database_path ~= args.database_positional then
      require("perfscript").fail("two databases named: %s and --database-path %s",
        args.database_positional, args.database_path)
    end
    args.database_path = args.database_positional
  end
  return dbpath.from_args(args, { write = opts.write, say = opts.say,
    script = opts.script or (arg and arg[0]) })
end

-- --output PATH (argname <path>); opts.aliases: hidden old names; opts.argname.
function M.output(parser, help, opts)
  opts = opts or {}
  local o = parser:option("--output", help):argname(opts.argname or "<path>")
  return hide(o, opts.aliases)
end

-- Adds one argument's items to out: a string is split on commas (and blanks), empty pieces
-- dropped; a table (an argument already converted) adds its items.
local function add_items(out, value)
  if type(value) == "table" then
    for _, v in ipairs(value) do out[#out + 1] = v end
  else
    for piece in tostring(value):gmatch("[^,%s]+") do out[#out + 1] = piece end
  end
end

-- A list option: comma lists, and repeated flags add up (--ops A,B --ops C -> {A, B, C}).
-- Absent: nil, or the default split into a list. opts.default (a comma list), opts.aliases
-- (hidden old names), opts.argname, opts.convert (item -> value, or nil, message: a bad item
-- is a usage error naming the flag), opts.many (several values after one flag too, the old
-- spelling of microbench's --ops: --ops A B).
function M.list(parser, name, help, opts)
  opts = opts or {}
  local o = parser:option(name, help):args(opts.many and "+" or 1):count("*")
    :argname(opts.argname or "<list>")
    :init(nil)
    :action(function(res, target, values)
      local t = res[target] or {}
      if opts.many then
        for _, v in ipairs(values) do add_items(t, v) end
      else
        add_items(t, values)
      end
      res[target] = t
    end)
  if opts.convert then
    o:convert(function(s)
      local items = {}
      for piece in s:gmatch("[^,%s]+") do
        local v, err = opts.convert(piece)
        if v == nil then return nil, string.format("%s: %s", name, err or ("bad item '" .. piece .. "'")) end
        items[#items + 1] = v
      end
      if #items == 0 then return nil, name .. ": empty list" end
      return items
    end)
  end
  if opts.default then o:default(opts.default) end
  return hide(o, opts.aliases)
end

-- The items of a comma list (a string, a list of strings or nil) as a flat list.
function M.split(values)
  if values == nil then return nil end
  local out = {}
  for _, v in ipairs(type(values) == "table" and values or { values }) do add_items(out, v) end
  return out
end

-- A whole number, 0 or more (a list item converter), or nil, message.
function M.whole(s)
  local v = math.tointeger(tonumber(s))
  if not v or v < 0 then return nil, string.format("'%s' is not a whole number", s) end
  return v
end

-- --threads N: how many threads or worker processes a recipe's work is split over; help says
-- what they do. args.threads is nil when not given: M.thread_count(args) resolves the default.
function M.threads(parser, help)
  return parser:option("--threads", help)
    :convert(function(s)
      local n = math.tointeger(tonumber(s))
      if not n or n < 1 or n > 64 then return nil, "--threads: a whole number from 1 to 64, not " .. s end
      return n
    end)
end

-- The --threads value, else $PERFSCRIPT_THREADS, else one per core.
function M.thread_count(args)
  local n = args.threads or math.tointeger(tonumber(os.getenv("PERFSCRIPT_THREADS") or ""))
  if n and n >= 1 then return math.min(n, 64) end
  return require("perfscript.proc").cores()
end

-- -v/--verbose (args.verbose) and -q/--quiet (args.quiet), each with the recipe's meaning.
function M.verbose(parser, help)
  return parser:flag("-v --verbose", help or "Say more.")
end

function M.quiet(parser, help)
  return parser:flag("-q --quiet", help or "Print only the summary.")
end

return M
