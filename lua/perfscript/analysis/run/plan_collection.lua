-- The collection planner run (recipes/plan_collection.lua is its entry point): what the target
-- models need (the shape grid's rows for them), what the database answers exactly, by
-- interpolation (with the leave-one-out error of that region) or not at all, and the smallest
-- set of new shapes (at most --budget) that answers every need and brings the estimated error
-- under --max-error (perfscript.db.plan), appended as grid rows with empty latencies through
-- the grid's own locked, staged append. --simulate measures them on the simulated device in a
-- copy (microbench --simulate) and prints the error before and after.
local perf = require "perfscript"
local options = require "perfscript.options"
local paths = require "perfscript.path"
local models = require "perfscript.grid.models"
local plan = require "perfscript.db.plan"
local acc = require "perfscript.db.accuracy"
local R = require "perfscript.db.result"

local M = {}

function M.parser()
  local p = require("argparse")("plan_collection",
    "Plan the next measurements: the shapes that answer every signature the target models need and bring "
    .. "the estimated interpolation error under --max-error, appended as grid rows with empty latencies.")
  options.database(p, { write = true })
  options.list(p, "--target-models", "Model ids, a comma list; repeatable (e.g. deepseek-ai/DeepSeek-V3,Qwen/Qwen3-32B).")
  p:option("--budget", "New shapes at most.", "50"):convert(math.tointeger)
  p:option("--max-error", "Target estimated relative error of an interpolated answer.", "0.05"):convert(tonumber)
  p:option("--rows", "Needed rows per CSV: the grid's sample for the models (0 = every grid row).", "1000")
    :convert(math.tointeger)
  p:option("--seed", "The grid's sampling seed.", "0"):convert(math.tointeger)
  p:option("--from-trace", "Take the needs from a TensorCast trace's lookups (kernel type and shapes) instead of the "
           .. "grid; the planned shapes are written where a grid row of --target-models has the same signature.")
    :argname("<json>")
  require("perfscript.analysis.cli").add_trace_options(p)
  options.list(p, "--kernels", "Plan only for these kernel types, a comma list; repeatable (default: every kernel).")
  p:flag("--dry-run", "Print the plan; write nothing.")
  p:flag("--simulate", "Append the plan to a copy (--output), measure it on the simulated device and print the "
         .. "error before and after.")
  options.output(p, "With --simulate: the copy to grow (default <database>_simulated; must not exist or be empty).",
    { argname = "<dir>" })
  p:option("--show", "Planned shapes listed.", "40"):convert(math.tointeger)
  return p
end

local function pct(x)
  if x == false then return "no answer" end
  return x and acc.pct(x) or "unknown"
end

local function needs_table(rows, title, after)
  local res = R.new(title, { "kernel", "needs", "exact", "interpolated", "est. p90", "unknown", "no answer", after and "planned" or nil })
  for _, s in ipairs(rows) do
    res[#res + 1] = { kernel = s.kernel, needs = s.needs, exact = s.exact, interpolated = s.interpolated,
                      ["est. p90"] = s.p90 and acc.pct(s.p90) or "-", unknown = s.unknown, ["no answer"] = s.missing,
                      planned = after and s.planned or nil }
  end
  return res
end

local function chosen_table(chosen, show)
  local res = R.new(string.format("proposal: %d new shapes", #chosen),
                    { "kernel", "Input Shapes", "Input Data Types", "axis", "value", "reason", "before" })
  for i, n in ipairs(chosen) do
    if i > show then res:note("%d more (--show)", #chosen - show); break end
    res[#res + 1] = { kernel = n.kernel, ["Input Shapes"] = n.it, ["Input Data Types"] = n.idt, axis = n.axis,
                      value = n.value, reason = n.reason,
                      before = n.status == "missing" and "no answer" or pct(n.est) }
  end
  return res
end

-- A point's identity across two copies of a database: shapes, dtypes, runtime axes.
local function ident(p)
  local ex = {}
  for k, v in pairs(p.extras) do ex[#ex + 1] = k .. "=" .. tostring(v) end
  table.sort(ex)
  return require("perfscript.db").shapes_label(p.shapes) .. "|" .. p.dtypes .. "|" .. table.concat(ex, ",")
end

-- Leave-one-out summary of the kernels named, in db; with only[k] (a set of identities), the
-- summary of those signatures alone. Also returns the identities predicted, per kernel.
local function accuracy_of(db, kernels, only)
  local out, predicted = {}, {}
  for _, k in ipairs(kernels) do
    local K = db:kernel(k)
    K._.accuracy = nil
    local recs = acc.records(K)
    local set, sel = {}, {}
    for _, r in ipairs(recs) do
      local id = ident(r.p)
      if r.err then set[id] = true end
      if not only or only[k][id] then sel[#sel + 1] = r end
    end
    out[k], predicted[k] = acc.summary(sel), set
  end
  return out, predicted
end

local function empty_or_absent(dir)
  if not paths.isdir(dir) then return true end
  for name in require("lfs").dir(dir) do
    if name ~= "." and name ~= ".." then return false end
  end
  return true
end

function M.main(argv)
  local a = M.parser():parse(argv)
  local say = function(s) io.stdout:write(s, "\n") end
  if not a.from_trace and (not a.target_models or #a.target_models == 0) then
    perf.fail("--target-models names no model (or give --from-trace)")
  end
  if not a.budget or a.budget < 0 then perf.fail("--budget takes a whole number") end
  if not a.max_error or a.max_error <= 0 then perf.fail("--max-error takes a number above 0") end
  if not a.rows or a.rows < 0 or not a.seed then perf.fail("--rows and --seed take whole numbers") end
  local names = {}
  if a.target_models then
    for i, p in ipairs(models.resolve(a.target_models)) do names[i] = p.model_id end  -- unknown or legacy names fail here
  end
  local dir = options.database_dir(a, { write = not a.simulate and not a.dry_run })
  local db, err = perf.open(dir)
  if not db then perf.fail("%s", err) end
  R.max_rows = math.huge
  say(string.format("Target models: %s | database: %s | budget %d | max error %s",
                    #names > 0 and table.concat(names, ", ") or "none", dir, a.budget, acc.pct(a.max_error)))
  local gopts = { rows = a.rows, seed = a.seed }
  local needs, source
  if a.from_trace then
    local skipped
    needs, skipped = plan.needs_from_trace(db, a.from_trace, { pid = a.pid, model = a.model })
    local list = {}
    for k, n in pairs(skipped) do list[#list + 1] = string.format("%s (%d)", k, n) end
    table.sort(list)
    source = "the trace's lookups"
    if #list > 0 then say("Not in the database (or no shapes): " .. table.concat(list, ", ")) end
  else
    needs = plan.needs_from_grid(db, dir, names, gopts)
    source = string.format("the grid's rows for the models, --rows %d per file", a.rows)
  end
  if a.kernels then
    local want, kept = {}, {}
    for _, k in ipairs(a.kernels) do want[db:kernel(k).name] = true end
    for _, n in ipairs(needs) do if want[n.kernel] then kept[#kept + 1] = n end end
    needs = kept
  end
  plan.classify(db, needs)
  say(tostring(needs_table(plan.table(needs),
    string.format("needs: %d signatures (%s)", #needs, source))))
  say("")
  local P = plan.plan(db, needs, { budget = a.budget, max_error = a.max_error })
  say(tostring(chosen_table(P.chosen, a.show or 40)))
  say("")
  local after = needs_table(plan.table(needs, "after"), "estimated after the proposal", true)
  local above = 0
  for _, n in ipairs(needs) do if n.after and n.after > a.max_error then above = above + 1 end end
  if #P.left > 0 then after:note("%d needs still have no answer (raise --budget)", #P.left) end
  if above > 0 then after:note("%d needs still above --max-error %s", above, acc.pct(a.max_error)) end
  after:note("estimates: the leave-one-out error of the bracket's points; a split gap a quarter of it; unknown: "
             .. "no leave-one-out error in that kernel yet")
  say(tostring(after))
  say("")
  if #P.chosen == 0 then say("Nothing to measure."); return 0 end
  if a.dry_run then say("Dry run: nothing written."); return 0 end
  local rows = P.chosen
  if a.from_trace then
    -- a trace's signature is written as the grid row of the same signature, where there is one
    if #names == 0 then say("Nothing written: give --target-models to write the grid rows of these shapes."); return 0 end
    local twins, wanted = {}, {}
    for _, n in ipairs(P.chosen) do wanted[n.kernel] = true end
    for _, g in ipairs(plan.needs_from_grid(db, dir, names, { rows = 0, seed = a.seed, kernels = wanted })) do
      local key = plan.twin_key(db, g)
      if key and not twins[key] then twins[key] = g end
    end
    rows = {}
    local none = R.new("planned shapes no grid row of the target models has (not written)", { "kernel", "Input Shapes" })
    for _, n in ipairs(P.chosen) do
      local g = twins[plan.twin_key(db, n) or ""]
      if g then rows[#rows + 1] = g else none[#none + 1] = { kernel = n.kernel, ["Input Shapes"] = n.it } end
    end
    if #none > 0 then say(tostring(none)); say("") end
    if #rows == 0 then say("Nothing written."); return 0 end
  end
  local target = dir
  if a.simulate then
    target = a.output or (dir:gsub("/+$", "") .. "_simulated")
    if not empty_or_absent(target) then perf.fail("%s exists and is not empty (name another --output)", target) end
    local n, cerr = paths.copy_tree(dir, target, { skip = { reports = true } })
    if not n then perf.fail("%s", cerr) end
    say(string.format("Copied %d files of %s to %s.", n, dir, target))
  end
  local results = plan.append(target, names, rows, gopts)
  local total, kernels = 0, {}
  for _, r in ipairs(results) do
    if (r.appended or 0) > 0 then
      total = total + r.appended
      kernels[#kernels + 1] = r.kernel
      say(string.format("  %s: appended %d rows (%s)", r.file, r.appended, r.status))
    end
  end
  say(string.format("Appended %d of %d planned rows (empty latencies) under %s.", total, #rows, target))
  if not a.simulate then
    say("Measure them: perfscript recipes/microbench.lua --database-path " .. target .. " --update-mode missing-only")
    return 0
  end
  -- --simulate: measure the copy, then the error before and after
  local before, was = accuracy_of(db, kernels)
  say("")
  say("Measuring on the simulated device (microbench --simulate --update-mode missing-only):")
  local rc = require("perfscript.microbench.run").main({ "--database-path", target, "--output", target, "--simulate",
    "--update-mode", "missing-only", "--ops", table.concat(kernels, ",") })
  if rc ~= 0 then perf.fail("the simulated measurement failed (status %s)", tostring(rc)) end
  local db2, err2 = perf.open(target)
  if not db2 then perf.fail("%s", err2) end
  local after_acc = accuracy_of(db2, kernels)
  local same = accuracy_of(db2, kernels, was)
  local needs2 = {}
  for i, n in ipairs(needs) do
    needs2[i] = { kernel = n.kernel, key = n.key, it = n.it, idt = n.idt, ifm = n.ifm, extra = n.extra }
  end
  plan.classify(db2, needs2)
  local nb, na = {}, {}
  for _, s in ipairs(plan.table(needs)) do nb[s.kernel] = s end
  for _, s in ipairs(plan.table(needs2)) do na[s.kernel] = s end
  local res = R.new(string.format("before / after the simulated measurement of %d rows (%s)", total, target),
    { "kernel", "predicted", "p50", "p90", "max", "p50 after", "p90 after", "max after", "needs no answer", "after" })
  local all_b, all_a, all_s = {}, {}, {}
  for _, k in ipairs(kernels) do
    local b, x = before[k], after_acc[k]
    for _, e in ipairs(b.errs) do all_b[#all_b + 1] = e end
    for _, e in ipairs(x.errs) do all_a[#all_a + 1] = e end
    for _, e in ipairs(same[k].errs) do all_s[#all_s + 1] = e end
    res[#res + 1] = { kernel = k, predicted = string.format("%d -> %d", b.predicted, x.predicted), p50 = acc.pct(b.p50),
                      p90 = acc.pct(b.p90), max = acc.pct(b.max), ["p50 after"] = acc.pct(x.p50), ["p90 after"] = acc.pct(x.p90),
                      ["max after"] = acc.pct(x.max), ["needs no answer"] = nb[k] and nb[k].missing or 0,
                      after = na[k] and na[k].missing or 0 }
  end
  table.sort(all_b)
  table.sort(all_a)
  table.sort(all_s)
  local pb, pa, ps = acc.quantile(all_b, 0.9), acc.quantile(all_a, 0.9), acc.quantile(all_s, 0.9)
  res[#res + 1] = { kernel = "all planned kernels", predicted = string.format("%d -> %d", #all_b, #all_a),
                    p50 = acc.pct(acc.quantile(all_b, 0.5)), ["p50 after"] = acc.pct(acc.quantile(all_a, 0.5)),
                    p90 = acc.pct(pb), ["p90 after"] = acc.pct(pa), max = acc.pct(all_b[#all_b]),
                    ["max after"] = acc.pct(all_a[#all_a]) }
  res:note("leave-one-out |error| over every predicted signature of the kernel (as db:accuracy); SIMULATED latencies")
  res:note("a new measurement can make a signature predictable that was not (an end of its bucket): its error "
           .. "joins the after columns; the line below compares the same signatures")
  say("")
  say(tostring(res))
  say(string.format("p90 |error| of the planned kernels, the %d signatures predicted before: %s -> %s", #all_s,
                    acc.pct(pb), acc.pct(ps)))
  say(string.format("p90 |error| of the planned kernels, every predicted signature: %s -> %s", acc.pct(pb), acc.pct(pa)))
  return 0
end

return M
