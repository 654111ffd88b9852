-- phaseprobe.cli.cliutil: what the export, trace, html and plot subcommands
-- share beyond the command framework (phaseprobe.cli, whose ctx, option
-- parser and log reading they use): a module whose run also works called
-- directly, inputs that may be .csv / .jsonl exports as well as logs, one
-- run per input, writing a text to a file, and the fits of the analysis.
--
-- Exit codes (those of phaseprobe.cli): 0 done, 1 bad or unreadable input
-- (the message names the file and line), 2 usage error (the usage follows).
local cli = require "phaseprobe.cli"
local export = require "phaseprobe.output.export"
local recview = require "phaseprobe.recview"

local M = {}

--- A command module for phaseprobe.cli. body(args, ctx) gets the ctx the
-- dispatcher passes; run(args) called without one (from a script or a
-- spec) runs through cli.run with the process's streams. A usage error
-- prints the usage.
function M.command(name, summary, usage, body)
  local C = { summary = summary, usage = usage, usage_on_error = true }
  function C.run(args, ctx)
    if ctx then return body(args, ctx) end
    return cli.run(C, name, args)
  end
  return C
end

-- Records of one input as an array: .csv and .jsonl through the
-- exporters' readers, anything else as a log through ctx.read. Any
-- rejected record line makes the input bad (ctx.read names each as
-- file:line:column) and nothing is written.
local function load(ctx, path)
  local set, err
  if path:match("%.[cC][sS][vV]$") then
    set, err = export.read_csv(path)
  elseif path:match("%.jsonl$") or path:match("%.ndjson$") then
    set, err = export.read_jsonl(path)
  else
    local rep
    set, rep = ctx.read({ path })
    if rep.rejected > 0 then
      ctx.fail(("%s: %d rejected record lines, nothing written"):format(path, rep.rejected))
    end
  end
  if not set then ctx.fail(err) end
  local ok, list = pcall(recview.collect, set, path)
  if not ok then ctx.fail(tostring(list)) end
  if #list == 0 then ctx.fail(("%s: no records found"):format(path)) end
  return list
end

--- Every input as a run { name = basename, path =, set = array of
-- records }; a usage error when there is none.
function M.runs(ctx, paths)
  if #paths == 0 then ctx.usage("no LOG given") end
  local runs = {}
  for _, p in ipairs(paths) do
    runs[#runs + 1] = { name = p:match("([^/]+)$") or p, path = p, set = load(ctx, p) }
  end
  return runs
end

--- Writes text to `path` ("-" or nil: ctx.out); an input error (exit 1)
-- when that fails.
function M.write_output(ctx, path, text)
  if not path or path == "-" then
    local ok, err = ctx.out:write(text)
    if not ok then ctx.fail(("writing to standard output failed: %s"):format(tostring(err))) end
    return
  end
  local f, err = io.open(path, "wb")
  if not f then ctx.fail(("cannot write '%s': %s"):format(path, err)) end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then ctx.fail(("writing '%s' failed: %s"):format(path, tostring(werr or cerr))) end
end

-- All runs' records in one array.
function M.concat(runs)
  local all = {}
  for _, run in ipairs(runs) do
    for _, r in ipairs(run.set) do all[#all + 1] = r end
  end
  return all
end

--- A usage error unless some record has each of the fields named by the
-- options `names` (e.g. { "by", "group" }) that opts sets.
function M.need_fields(ctx, records, opts, names)
  for _, o in ipairs(names) do
    local name = opts[o]
    local found = name == nil
    for _, r in ipairs(records) do
      if found then break end
      found = r[name] ~= nil
    end
    if not found then
      ctx.usage(("--%s %s: no record has a field '%s' (counts: %s)"):format(o, name, name,
        table.concat(recview.layout(records[1]).counts, ", ")))
    end
  end
end

-- Fits from the analysis module (phaseprobe.analysis.analyze.scaling: Theil-Sen
-- fits and verdicts against every counted quantity), as the plain data the
-- report and plots take: { [label] = {intercept=, slope=, verdict=, note=,
-- quantity=, r2=, method=} }. nil when that module is not installed or
-- fails; the report then uses its own least-squares fallback. This is the
-- one place the two modules meet.
--
-- With `by` (the user's --by), only fits against that quantity are kept (and
-- verdicts without one: fixed, inconclusive), so the plots show what was asked.
function M.analysis_fits(records, by)
  local ok1, recmod = pcall(require, "phaseprobe.records")
  local ok2, analyze = pcall(require, "phaseprobe.analysis.analyze")
  if not (ok1 and ok2 and type(recmod) == "table" and type(analyze) == "table"
        and type(recmod.from_list) == "function" and type(analyze.scaling) == "function") then
    return nil
  end
  local ok, s = pcall(function()
    local set = recmod.is_set and recmod.is_set(records) and records or recmod.from_list(records)
    return analyze.scaling(set)
  end)
  if not ok or type(s) ~= "table" then return nil end
  local fits = {}
  for _, list in ipairs { s.phases or {}, s.nested or {} } do
    for _, v in ipairs(list) do
      if type(v.name) == "string" then
        local f = by and v.quantity ~= by and type(v.fits) == "table" and v.fits[by] or nil
        if f and f.ok and f.ts then
          -- asked for another quantity than the verdict's: its own fit, the
          -- verdict kept as it is
          fits[v.name] = { verdict = v.verdict .. (v.quantity and (" (plotted against " .. by .. ")") or ""),
            note = v.reason, quantity = by, intercept = f.ts.intercept, slope = f.ts.slope,
            r2 = f.ls and f.ls.r2, method = "Theil-Sen" }
        elseif not by or v.quantity == nil or v.quantity == by then
          fits[v.name] = { verdict = v.verdict, note = v.reason, quantity = v.quantity,
            intercept = v.fixed_ns, slope = v.ns_per_unit, r2 = v.r2, method = "Theil-Sen",
            legend = v.ns_per_unit == 0 and "fixed cost (median)" or nil }
        end
      end
    end
  end
  return fits
end

return M
