--- phaseprobe fit: scaling verdicts per phase, with the fits behind them.
local cli = require "phaseprobe.cli"
local analyze = require "phaseprobe.analysis.analyze"
local fit = require "phaseprobe.analysis.fit"
local report = require "phaseprobe.output.report"

local C = {
  reads = true,
  summary = "fit each phase against each counted quantity: fixed, scales with Q, or inconclusive",
  usage = [[
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
]] .. cli.INPUT_HELP,
}

local function verdicts(ctx, set, opts, fopts)
  local s = analyze.scaling(set, fopts)
  ctx.write(report.scaling(s), "\n")
  for _, p in ipairs(opts.phase or {}) do
    local found
    for _, v in ipairs(s.phases) do
      if v.name == p or v.name == p .. "_ns" then found = v end
    end
    for _, v in ipairs(s.nested) do
      if v.name == p or v.name == "sub_" .. p .. "_ns" then found = v end
    end
    if not found then ctx.usage("--phase: no phase or nested region '" .. p .. "'") end
    ctx.write("\n== fits of ", found.name, ": ", found.verdict, "\n")
    if next(found.fits) then ctx.write(report.fits(found), "\n")
    else ctx.write("(no fits: ", found.reason, ")\n") end
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
    for _, q in ipairs(opts.quantity) do
      if not set:has(q) then ctx.usage("--quantity: no field '" .. q .. "' in the records") end
    end
    fopts.quantities = opts.quantity
  end
  if opts.group then
    if not set:has(opts.group) then ctx.usage("--group: no field '" .. opts.group .. "'") end
    for _, g in ipairs(set:group(opts.group)) do
      ctx.write("\n#### ", opts.group, "=", g.missing and "(none)" or tostring(g.key), ": ",
        g.n, " records\n")
      verdicts(ctx, g.set, opts, fopts)
    end
  else
    verdicts(ctx, set, opts, fopts)
  end
  local d = fit.defaults
  ctx.write(string.format("\n(verdict rules: a quantity needs %d distinct values; scaling = change "
    .. "over its range >= %s of the median with Theil-Sen quality >= %.2f)\n",
    fopts.min_distinct or d.min_distinct, report.pct(fopts.min_effect or d.min_effect),
    fopts.min_quality or d.min_quality))
  return 0
end

return C
