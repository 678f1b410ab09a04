-- perfscript.options: the command-line options every recipe shares, in one home, on a
-- lua-argparse parser (docs/rules.md, Command line):
--   database  --database-path DIR (with dbpath's version flags); old spellings (--data-dir,
--             --csv-dir, a positional) are hidden aliases; --help states the default.
--   output    --output PATH; a recipe's older specific name (--output-path, --json-output,
--             --csv) stays as a hidden alias.
--   lists     comma lists, repeatable and accumulating: --ops A,B --ops C == --ops A B C.
--   verbosity --verbose / --quiet.
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
-- opts.help: what the directory is.
function M.database(parser, opts)
  opts = opts or {}
  local default
  if opts.default == false then
    default = "Required (or the version flags)."
  elseif type(opts.default) == "string" then
    default = opts.default
  else
    default = dbpath.default_help(opts.write)
  end
  dbpath.add_options(parser, { required_path = opts.required_path, aliases = opts.aliases,
    help = (opts.help or "Database directory to read and write (used as given; wins over the "
      .. "version flags).") .. " " .. default })
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

-- Splits each value on commas (and blanks) into out; empty pieces are dropped.
local function add_items(out, values)
  for _, v in ipairs(type(values) == "table" and values or { values }) do
    for piece in tostring(v):gmatch("[^,%s]+") do out[#out + 1] = piece end
  end
end

-- A list option: comma lists, and repeated flags add up (--ops A,B --ops C -> {A, B, C}).
-- Absent: nil, or the default split into a list. opts.default (a comma list), opts.aliases
-- (hidden old names), opts.argname, opts.many (several values after one flag too, the old
-- spelling of microbench's --ops: --ops A B).
function M.list(parser, name, help, opts)
  opts = opts or {}
  local o = parser:option(name, help):args(opts.many and "+" or 1):count("*")
    :argname(opts.argname or "<list>")
    :init(nil)
    :action(function(res, target, values)
      local t = res[target] or {}
      add_items(t, values)
      res[target] = t
    end)
  if opts.default then o:default(opts.default) end
  return hide(o, opts.aliases)
end

-- The items of a comma list (a string, a list of strings or nil) as a flat list.
function M.split(values)
  if values == nil then return nil end
  local out = {}
  add_items(out, values)
  return out
end

-- --verbose and --quiet (args.verbose, args.quiet).
function M.verbosity(parser, verbose_help, quiet_help)
  parser:flag("-v --verbose", verbose_help or "Say more (every row, not only problems).")
  parser:flag("-q --quiet", quiet_help or "Print only the summary line.")
  return parser
end

return M
