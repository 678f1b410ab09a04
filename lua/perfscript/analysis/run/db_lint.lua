-- The database lint run (recipes/db_lint.lua is its entry point): the findings of db:lint per
-- kernel (or for the whole database), a summary line, optionally every finding as CSV.
-- main returns the exit status: 1 when there are errors.
local options = require "perfscript.options"
local cli = require "perfscript.analysis.cli"
local repl = require "perfscript.repl"

local M = {}

function M.parser()
  local parser = require("argparse")("db_lint", "Lint a database version directory the way its consumer reads it.")
  options.database(parser, { positional = true, help = "Database directory to lint." })
  options.list(parser, "--kernel", "Only these kernel types, a comma list; repeatable.")
  options.output(parser, "Also write every finding to this CSV file.", { aliases = { "--csv" } })
  options.quiet(parser, "Print only the summary line.")
  options.verbose(parser, "Print every finding (by default, findings of one kind print once, with their count and an example).")
  return parser
end

function M.main(argv)
  local args = M.parser():parse(argv)
  local db, dir = cli.open_database(args)
  local kernels = args.kernel or { false }
  local all = require("perfscript.db.result").new(nil, nil, {})
  local errors, warnings = 0, 0
  if args.verbose then require("perfscript.db.result").max_rows = math.huge end
  for _, k in ipairs(kernels) do
    local res = db:lint(k or nil, { verbose = args.verbose })
    res.hint = "--verbose prints each, --output FILE writes them"
    errors, warnings = errors + res.errors, warnings + res.warnings
    all.columns = res.columns
    for _, r in ipairs(res) do all[#all + 1] = r end
    if not args.quiet then print(res) end
  end
  if args.output then repl.save(all, args.output) end
  print(string.format("db_lint %s: %d errors, %d warnings", dir, errors, warnings))
  return errors > 0 and 1 or 0
end

return M
