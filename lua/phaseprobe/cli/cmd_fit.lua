--- phaseprobe fit: scaling verdicts per phase, with the fits behind them.
local cli = require "phaseprobe.cli"
local analyze = require "phaseprobe.analysis.analyze"
local record = require "phaseprobe.record"
local fit = require "phaseprobe.analysis.fit"
local report = require "phaseprobe.output.report"

local C = cli.reader("fit each phase against each counted quantity: fixed, scales with Q, or inconclusive", [[
usage: phaseprobe fit [options] FILE...

For every phase and nested region, fits its time against every counted
quantity (nodes, ptx_bytes, bindings, grid_blocks, fixpoint, cache misses,
user counters and numeric tags): fixed ns per dispatch and ns per unit by
Theil-Sen (median of pairwise slopes) beside least squares, and a verdict:
"fixed per dispatch", "scales with Q", or "inconclusive" with the reason.

options:
  --phase P        also list every fit of phase P (repeatable; "ptx" or "ptx_ns")
  --quantity Q     fit against these quantities only (repeatable)
  --group F        verdicts per value of field or tag F
  --min-distinct N distinct values a quantity needs to be tested (default 3)
  --min-effect X   change over the observed range, relative to the median,
                   that counts as scaling (default 0.2)
  --min-quality X  Theil-Sen quality needed for "scales with" (default 0.5)
]])

-- The verdict (phase or nested region) a --phase names, or nil.
local function find(s, p)
  for _, v in ipairs(s.phases) do
    if v.name == p or v.name == p .. "_ns" then return v end
  end
  for _, v in ipairs(s.nested) do
    if v.name == p or v.name == "sub_" .. p .. "_ns" then return v end
  end
end

-- progress: the progress lines (ctx.progress, or one whose lines name
-- the group)
local function verdicts(ctx, set, opts, fopts, progress)
  local o = { progress = progress }
  for k, v in pairs(fopts) do o[k] = v end
  local s = analyze.scaling(set, o)
  local found = {}
  for i, p in ipairs(opts.phase or {}) do
    found[i] = find(s, p)
    if not found[i] then
      local names = {}
      for _, v in ipairs(s.phases) do names[#names + 1] = record.short(v.name) end
      for _, v in ipairs(s.nested) do names[#names + 1] = record.short(v.name) end
      ctx.usage("--phase: no phase or nested region '" .. p .. "' (valid: "
        .. table.concat(names, ", ") .. ")")
    end
  end
  return function()
    ctx.write(report.scaling(s), "\n")
    for _, v in ipairs(found) do
      ctx.write("\n== fits of ", v.name, ": ", v.verdict, "\n")
      if next(v.fits) then ctx.write(report.fits(v), "\n")
      else ctx.write("(no fits: ", v.reason, ")\n") end
    end
  end
end

function C.run(args, ctx)
  local opts, files = ctx.options(args, {
    ["--phase"] = "list", ["--quantity"] = "list", ["--group"] = "value",
    ["--min-distinct"] = "value", ["--min-effect"] = "value", ["--min-quality"] = "value",
    short = { ["-g"] = "--group" } })
  local fopts = {}
  if opts.min_distinct then fopts.min_distinct = cli.number(opts.min_distinct, "--min-distinct", 2) end
  if opts.min_effect then fopts.min_effect = cli.number(opts.min_effect, "--min-effect", 0) end
  if opts.min_quality then fopts.min_quality = cli.number(opts.min_quality, "--min-quality", 0) end
  local set = ctx.read(files)
  if opts.quantity then
    for _, q in ipairs(opts.quantity) do cli.need_field(set, "--quantity " .. q, q, "number") end
    fopts.quantities = opts.quantity
  end
  -- every verdict is made (and every option checked) before anything is written
  local writers = {}
  if opts.group then
    if not set:has(opts.group) then
      ctx.usage(string.format("--group %s: no field '%s' in the records (%s)", opts.group,
        opts.group, report.field_choices(set)))
    end
    for _, g in ipairs(set:group(opts.group)) do
      local name = opts.group .. "=" .. (g.missing and "(none)" or tostring(g.key))
      local w = verdicts(ctx, g.set, opts, fopts, function(what, popts)
        return ctx.progress(name .. ": " .. what, popts)
      end)
      writers[#writers + 1] = function()
        ctx.write("\n#### ", name, ": ", report.count(g.n, "record"), "\n")
        w()
      end
    end
  else
    writers[1] = verdicts(ctx, set, opts, fopts, ctx.progress)
  end
  local aopts = { progress = ctx.progress }
  local mixed = report.variants(analyze.variants(set, aopts))
  if mixed then ctx.write(mixed, "\n") end
  -- records whose phases exceed their wall: their residue reads 0
  local over = report.overrun(analyze.overrun(set, nil, aopts))
  if over then ctx.write(over, "\n") end
  for _, w in ipairs(writers) do w() end
  local d = fit.defaults
  ctx.write("\n", table.concat(report.wrap(string.format("(verdict rules: a quantity needs %s, "
    .. "each on %s of the records or %s; scaling = change over its "
    .. "range >= %s of the median with Theil-Sen quality >= %.2f)",
    report.count(fopts.min_distinct or d.min_distinct, "distinct value"), report.pct(d.min_share),
    report.count(d.min_records, "record"),
    report.pct(fopts.min_effect or d.min_effect), fopts.min_quality or d.min_quality),
    report.width), "\n"), "\n")
  return 0
end

return C
